"""The pages a newcomer looks for first stay true: the home page links every page of the site,
the site's changelog is the repository's, each message on the troubleshooting page is one tether
still prints, each concept names its guide page and an API entry that exists, and getting
started's real-provider block runs as written (against a fake OpenAI server: it needs a key).

Decision: a message is checked against the string literals of the source, not against a copy
kept in this test, so rewording a message in the code fails here until the page says it too.
The page writes ``<...>`` where a value goes in; the literal text around each value must be what
the source writes around its ``{...}`` field (see ``composed``).
"""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from built_site import built_site  # noqa: F401
from doc_pages import ROOT, blocks, section
from fake_llm_server import OPENAI_PATH, FakeLLMServer, Recorded, Reply, openai_completion

PLACEHOLDER = re.compile(r"'?<[^<>]+>'?")  # a value, with the quotes repr() gives a name
SEP = "\x00"  # where a literal ends at a formatted field, in the corpus


def nav_pages() -> list[str]:
    def walk(node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [page for item in node for page in walk(item)]
        return [page for value in node.values() for page in walk(value)]
    return walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])


def test_the_home_page_links_every_page_in_the_nav() -> None:
    linked = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "docs/index.md").read_text()))
    missing = [page for page in nav_pages() if page != "index.md" and page not in linked]
    assert not missing, f"docs/index.md does not link {missing}"


def test_the_sites_changelog_is_the_repositorys() -> None:
    root = (ROOT / "CHANGELOG.md").read_text()
    assert (ROOT / "docs/changelog.md").read_text() == root.replace("](docs/", "](")


def test_the_changelog_starts_with_unreleased_then_the_current_version() -> None:
    from tether import __version__

    versions = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert versions[:2] == ["Unreleased", __version__]


# --- troubleshooting ------------------------------------------------------------------------

@cache
def corpus() -> str:
    """Every string literal of tether, its scripts and its test harness (whose skip messages a
    developer meets; not the test modules), each between SEP marks, an f-string's literal parts
    each on their own: ``f"no session {x!r} in {url}"`` gives ``\\0no session \\0`` and
    ``\\0 in \\0``."""
    found: list[str] = []
    harness = [path for path in (ROOT / "tests").glob("*.py")
               if not path.name.startswith("test_")]  # not the tests: this one quotes the page
    files = [*(ROOT / "src/tether").rglob("*.py"), *(ROOT / "scripts").glob("*.py"), *harness]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                found += [part.value for part in node.values
                          if isinstance(part, ast.Constant) and isinstance(part.value, str)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value)
    return SEP + SEP.join(found) + SEP


def composed(text: str) -> bool:
    """Whether ``text`` is in one literal, or is literals that meet at formatted fields: the end
    of one, whole ones, the start of another (``"error: "`` then ``"no session "``). An end or
    a start shorter than three characters, and a whole one shorter than twelve, count only if
    they hold no letter (``"); "``): else any sentence could be spelt out of the short literals
    a program is full of (``"not"``, ``" has "``, ``"paused"``)."""
    literals = corpus()
    if text in literals:
        return True

    def fits(stretch: str, found: bool, shortest: int = 3) -> bool:
        return found and (len(stretch) >= shortest or not any(c.isalpha() for c in stretch))

    ends = [i for i in range(1, len(text)) if fits(text[:i], text[:i] + SEP in literals)]
    seen, waiting = set(ends), list(ends)
    while waiting:
        start = waiting.pop()
        if fits(text[start:], SEP + text[start:] in literals):  # the last one's start
            return True
        for end in range(start + 1, len(text)):  # a whole one between
            middle = text[start:end]
            if end not in seen and fits(middle, SEP + middle + SEP in literals, 12):
                seen.add(end)
                waiting.append(end)
    return False


def quoted_messages() -> list[str]:
    """The messages tether prints, as the page quotes them (``text`` blocks; ``console`` blocks
    are other programs'), a message wrapped on the page joined again: a line indented by two
    spaces goes on from the one before."""
    page = (ROOT / "docs/troubleshooting.md").read_text()
    messages: list[str] = []
    for block in re.findall(r"^```text\n(.*?)^```", page, re.S | re.M):
        for line in block.splitlines():
            if line.startswith("  ") and messages:
                messages[-1] += " " + line.strip()
            else:
                messages.append(line)
    return messages


@cache
def source() -> str:
    return "".join(path.read_text() for path in (ROOT / "src/tether").rglob("*.py"))


def pieces(message: str) -> list[str]:
    """The literal stretches of a quoted message, without a traceback's ``module.Class: ``."""
    named = re.match(r"(?:[\w.]+\.)?([A-Z]\w+): ", message)
    if named and f"class {named.group(1)}(" in source():
        message = message[named.end():]
    return [piece for piece in PLACEHOLDER.split(message) if piece.strip()]


def test_each_message_on_the_troubleshooting_page_is_one_tether_prints() -> None:
    messages = quoted_messages()
    assert len(messages) >= 20
    wrong = [(message, piece) for message in messages for piece in pieces(message)
             if not composed(piece)]
    assert not wrong, "\n".join(f"{piece!r} (in {message!r})" for message, piece in wrong)


def test_a_reworded_message_is_caught() -> None:
    assert composed("error: ") and composed("no session ")
    assert composed("error: no session ")  # two literals meeting at a field
    assert composed(" is not paused; it ended (")
    assert not composed(" is not paused; it has ended (")
    assert not composed("Refused: calling it is not permitted")  # the tool's name sits between
    assert pieces("tether.errors.MissingExtra: the '<m>' package") == ["the ", " package"]


def test_each_trouble_says_why_and_what_to_do() -> None:
    page = (ROOT / "docs/troubleshooting.md").read_text()
    titles = re.findall(r"^## (.+)$", page, re.M)
    assert len(titles) >= 9
    for title in titles:
        body = section("docs/troubleshooting.md", title)
        assert re.search(r"^```(text|console)\n", body, re.M), title
        assert "**Why.**" in body and "**What to do.**" in body, title


# --- concepts -------------------------------------------------------------------------------

CONCEPTS = ["Recipe", "Session", "Activation", "Chokepoint", "Strategy", "Tool", "Decision",
            "Effect", "Approval", "Taint", "Budget", "Journal", "Store", "Tenant"]


def test_each_concept_names_its_guide_page_and_its_api() -> None:
    titles = re.findall(r"^## (.+)$", (ROOT / "docs/concepts.md").read_text(), re.M)
    assert titles == CONCEPTS
    for title in titles:
        body = section("docs/concepts.md", title)
        guide = body[body.index("Guide:"):]
        assert re.match(r"Guide: \[[^\]]+\]\([\w/.-]+\.md(#[\w-]+)?\)", guide), title
        assert re.search(r"API:\s+\[`[^`]+`\]\(reference/[\w-]+\.md#[\w.]+\)", guide), title


def test_the_api_names_the_concepts_link_are_in_the_built_reference(
        built_site: Path) -> None:  # noqa: F811
    links = re.findall(r"\]\((reference/[\w-]+)\.md#([\w.]+)\)",
                       (ROOT / "docs/concepts.md").read_text())
    assert len(links) >= 20
    for page, anchor in links:
        html = (built_site / f"{page}.html").read_text()  # plain .html pages (mkdocs.yml)
        assert f'id="{anchor}"' in html, f"{page} has no entry {anchor}"


# --- getting started ------------------------------------------------------------------------

def calculator_then_answer(rec: Recorded) -> Reply:
    """A model that calls the calculator, then says what it gave."""
    last = rec.body["messages"][-1]
    if last["role"] == "tool":
        return Reply(body=openai_completion(f"17 * 23 = {last['content']}"))
    return Reply(body=openai_completion(None, [("call_1", "calculator",
                                                '{"expression": "17 * 23"}')]))


def test_the_key_block_is_marked_and_runs_as_written_given_a_key(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    title = "A real model with an API key"
    assert section("docs/getting-started.md", title).lstrip().startswith("Needs an API key")
    (block,) = blocks("docs/getting-started.md", title)
    assert block.startswith("# not runnable as pasted: needs OPENAI_API_KEY")  # as blocks say
    with FakeLLMServer(calculator_then_answer) as server:
        monkeypatch.chdir(tmp_path)  # no .env of the checkout's
        monkeypatch.setenv("OPENAI_API_KEY", "sk-getting-started")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        exec(compile(block, "getting-started.md", "exec"), {})
    answer, reason, tokens, cost = capsys.readouterr().out.rsplit(" ", 3)
    assert (answer, reason) == ("17 * 23 = 391", "finished")
    assert int(tokens) > 0 and Decimal(cost) < Decimal("0.01")
    assert [r.path for r in server.requests] == [OPENAI_PATH, OPENAI_PATH]
    assert server.requests[0].headers["authorization"] == "Bearer sk-getting-started"


def test_getting_started_ends_with_next_steps() -> None:
    titles = re.findall(r"^## (.+)$", (ROOT / "docs/getting-started.md").read_text(), re.M)
    assert titles[-2:] == ["A real model with an API key", "Next steps"]
    steps = section("docs/getting-started.md", "Next steps")
    for page in ("concepts.md", "examples.md", "troubleshooting.md", "guarantees.md"):
        assert f"]({page})" in steps, page
