"""docs/examples.md shows every example with what it really prints: each one that runs on its own
is run here and its output compared with the page's block.

Decision: the page holds the output as captured, ids and all, so a reader sees a real run; what
differs from run to run (session, approval and call ids, timestamps, process ids, durations, and
the counts and statuses that depend on where a kill lands) is blanked on both sides before
comparing, and nothing else is. An example that needs what this machine may not have (a local
model build, an MCP client) is not run: its section says what it needs. Each example's section
is found by the first ``examples/NAME.py`` it names, so a new example without a section fails
here. When an example's output changes on purpose, ``python tests/test_docs_examples.py [NAME]``
writes what it prints now into the page, for review with ``git diff``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from doc_pages import ROOT

from conftest import import_or_unavailable

PAGE = ROOT / "docs" / "examples.md"
EXAMPLE = re.compile(r"examples/(\w+)\.py")
TEXT = re.compile(r"^```text\n(.*?)^```", re.S | re.M)

EXAMPLE_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*examples/(?=\w+\.py)")

# what a run changes, blanked on both sides (the page keeps the real values)
VOLATILE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{16,}(?![0-9a-f])"), "<hex>"),  # ids, digests
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ"), "<time>"),
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"sqlite:///\S+"), "sqlite:///<file>"),  # the store a run was given
    (EXAMPLE_PATH, "examples/"),  # an example's path, as named from where it ran
    (re.compile(r"\b\d+\.\d+ s\b"), "<seconds> s"),  # a run's wall time
    (re.compile(r"(latency s p50 / p95 / max\s+).*"), r"\1<latencies>"),
    (re.compile(r"kill -9 w1 after \d+ notices"), "kill -9 w1 after <n> notices"),
    # where the kill lands: a session killed mid-effect waits for an operator (uncertain_effect)
    (re.compile(r"^(statuses|waiting for a person): \{.*\}$", re.M), r"\1: <where it landed>"),
    (re.compile(r"^notices sent: \d+", re.M), "notices sent: <n>"),  # (fewer when one waits)
]

# the extra each runnable example imports, for the skip (or, under CI, the failure) without it
EXTRAS = {"telemetry": ("opentelemetry.proto", "otel"),
          "pydantic_ai_agent": ("pydantic_ai", "pydantic-ai"),
          "langgraph_agent": ("langgraph", "langgraph"),
          "openai_agents_agent": ("agents", "openai-agents"),
          "fleet_dbos": ("dbos", "dbos")}

# examples whose documented output is a run kept in the repository, not one made here
KEPT = {"evaluate_local": ROOT / "docs" / "evals" / "smollm2" / "summary.txt"}


def sections() -> dict[str, str]:
    """Each ``## `` section's body by its heading, headings read outside fenced code only."""
    found: dict[str, str] = {}
    title, in_fence, lines = "", False, []
    for line in PAGE.read_text().splitlines(keepends=True):
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            if title:
                found[title] = "".join(lines)
            title, lines = line[3:].strip(), []
        elif title:
            lines.append(line)
    if title:
        found[title] = "".join(lines)
    return found


def by_example() -> dict[str, str]:
    """Each example's section body, keyed by the first ``examples/NAME.py`` it names."""
    found: dict[str, str] = {}
    for body in sections().values():
        named = EXAMPLE.search(body)
        if named:
            assert named.group(1) not in found, f"two sections for {named.group(1)}.py"
            found[named.group(1)] = body
    return found


def steady(text: str) -> str:
    for pattern, blank in VOLATILE:
        text = pattern.sub(blank, text)
    return text


RUNNABLE = sorted(name for name, body in by_example().items()
                  if TEXT.search(body) and name not in KEPT)


def test_every_example_has_a_section_of_its_own() -> None:
    files = {path.stem for path in (ROOT / "examples").glob("*.py")}
    assert set(by_example()) == files


def test_an_example_shown_without_its_output_says_what_it_needs() -> None:
    for name, body in by_example().items():
        if not TEXT.search(body):
            assert "Needs " in body or "not run on its own" in body, name


def test_the_table_links_each_example_to_its_section() -> None:
    anchors = {slugify(title, "-") for title in sections()}
    rows = re.findall(r"^\| \[`(\w+)\.py`\]\(#([\w-]+)\)", PAGE.read_text(), re.M)
    assert {name for name, _ in rows} == set(by_example())
    for name, anchor in rows:
        assert anchor in anchors, (name, anchor)
        assert EXAMPLE.search(sections()[next(t for t in sections()
                                               if slugify(t, "-") == anchor)])[1] == name


def test_the_runnable_examples_are_the_ones_this_page_promises() -> None:
    # a section losing its output block must not quietly drop its example from the runs
    promised = ["billing_desk", "compaction", "enterprise_expense", "evaluate", "fleet_dbos",
                "langgraph_agent", "openai_agents_agent", "pydantic_ai_agent", "quickstart",
                "telemetry"]
    assert promised == RUNNABLE


def run(name: str, where: Path) -> str:
    """What ``examples/NAME.py`` prints, run in ``where`` (which its files go to) with a store of
    its own there."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
           "TETHER_STORE": f"sqlite:///{where / 'tether.db'}"}
    env.pop("FLEET_DB", None)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py")],
                          cwd=where, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_example_prints_what_the_page_shows(name: str, tmp_path: Path) -> None:
    if name in EXTRAS:
        import_or_unavailable(*EXTRAS[name])
    body = by_example()[name]
    assert f"python examples/{name}.py" in body  # the command the page gives
    (shown,) = TEXT.findall(body)
    assert steady(run(name, tmp_path)) == steady(shown), \
        "the example prints something else now: if that is meant, run " \
        "`python tests/test_docs_examples.py` to write its new output into docs/examples.md"


def test_the_real_model_run_shown_is_the_one_kept() -> None:
    for name, kept in KEPT.items():
        (shown,) = TEXT.findall(by_example()[name])
        assert kept.read_text().startswith(shown), name


def test_what_is_blanked_is_only_what_varies() -> None:
    line = "  1  start: send the Q3 numbers (120 in, 20 out tokens, $0; input estimate 63 (-48%))"
    assert steady(line) == line  # counts and short numbers are compared as they are
    assert steady("session 2ddfe21541d4f40a00ee5eab13d07d85") == "session <hex>"
    assert steady("apr_88b32558641260f0b2db pay") == "apr_<hex> pay"


def rewrite(names: list[str]) -> None:
    """Run the examples named (all runnable ones if none) and write what each prints into its
    block on the page: for an output changed on purpose, to review with ``git diff``."""
    page = PAGE.read_text()
    for name in names or RUNNABLE:
        body = by_example()[name]
        (shown,) = TEXT.findall(body)
        with tempfile.TemporaryDirectory() as where:
            printed = run(name, Path(where))
            # as a reader sees it, run from the repository's root with the default store
            printed = printed.replace(f"sqlite:///{Path(where) / 'tether.db'}",
                                      "sqlite:///tether.db")
            printed = EXAMPLE_PATH.sub("examples/", printed)
        if steady(printed) == steady(shown):
            print(f"{name}: unchanged")  # new ids are no change worth a diff
            continue
        page = page.replace(body, body.replace(f"```text\n{shown}```", f"```text\n{printed}```"))
        PAGE.write_text(page)
        print(f"{name}: rewritten")


if __name__ == "__main__":
    rewrite(sys.argv[1:])
