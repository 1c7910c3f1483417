"""Every Python block of the README and of docs/, read with the conventions a reader sees
(docs/development.md, "Writing blocks for the docs"), for tests/test_doc_blocks.py to run.

A block is run as pasted: alone, in a fresh ``__main__``, from the repository's root, with exactly
the blocks it names prepended (transitively) and nothing else, and with only the extras its page
states importable (tests/doc_runner.py does the running). The conventions, read here:

- a block others continue has a title: ```` ```python title="refund tool" ```` (unique across the
  docs; Material shows it above the block);
- a block that needs earlier code opens with ``# continues "refund tool" (guide/tools.md)`` (several
  titles separated by commas), the page in parentheses as the reader finds it;
- a page whose blocks need extras says so above them, once, in a line
  ``> **Extras:** ... `pip install -e '.[knowledge,embeddings]'` ...``; it holds for every block
  below it on the page (the README states each before the sections that need it);
- a block that cannot run here (an API key, a remote service, a sketch with parts left to the
  reader) opens with ``# not runnable as pasted: <why>`` and is only compiled;
- a block that needs ``examples/`` on its path opens with ``# run as: PYTHONPATH=examples python``.

What a block prints is checked against its comments: ``print(x)  # 391 finished 278``, or comment
lines right below a print (or a loop that prints) with no comment of its own. Each such line must
appear among the printed lines, in order; a comment may go on after what is printed with ``:`` or
``(`` (``# 2: erased, still verifying``), or end in ``...`` for a printed line that goes on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from itertools import takewhile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPEN = re.compile(r'^```python(?:\s+title="(?P<title>[^"]+)")?\s*$')
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6} (.*)$")
EXTRAS = re.compile(r"`pip install -e '\.\[(?P<extras>[\w,-]+)\]'`")
NO_DEPS = re.compile(r"`pip install --no-deps (?P<dist>[\w.-]+?)(?:==[\w.]+)?`")
CONTINUES = re.compile(r"^# continues (.+)$")
CONTINUED = re.compile(r'"([^"]+)" \(([^)]+)\)')
UNRUNNABLE = "# not runnable as pasted"
RUN_AS = "# run as: PYTHONPATH=examples python"
TRAILING = re.compile(r"^(?P<code>\s*\S.*?)\s{2,}# (?P<said>.+)$")


@dataclass(frozen=True)
class Block:
    """One ```python block, where it is and what it says about itself."""
    page: str              # relative to the repository's root
    line: int              # of its opening fence
    heading: str
    title: str | None
    code: str
    extras: tuple[str, ...]  # stated above it: extras, and "+dist" for a --no-deps install
    continues: tuple[tuple[str, str], ...]  # (title, page as written)
    unrunnable: str | None
    paths: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line} {self.title or self.heading}"

    @property
    def runs_here(self) -> bool:
        """False for a block marked not runnable, and for one that needs the local model (the
        ``local`` extra): the real-model tier (tests/real_model/) runs those; here they compile."""
        return self.unrunnable is None and "local" not in self.extras

    @property
    def shown_page(self) -> str:
        """The page as a continuation line names it: relative to docs/, or README.md."""
        return self.page.removeprefix("docs/")


def pages() -> list[str]:
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]


def read(page: str) -> list[Block]:
    lines = (ROOT / page).read_text().splitlines()
    found: list[Block] = []
    heading, fence, i = "", False, 0
    extras: tuple[str, ...] = ()
    while i < len(lines):
        line = lines[i]
        opened = OPEN.match(line)
        if opened and not fence:
            end = next(j for j in range(i + 1, len(lines)) if FENCE.match(lines[j]))
            code = "\n".join(lines[i + 1:end]) + "\n"
            head = code.splitlines()[:3]
            cont = next((m.group(1) for m in map(CONTINUES.match, head) if m), "")
            why = next((h[len(UNRUNNABLE):].lstrip(": ") for h in head
                        if h.startswith(UNRUNNABLE)), None)
            found.append(Block(page, i + 1, heading, opened.group("title"), code, extras,
                               tuple(CONTINUED.findall(cont)), why,
                               ("examples",) if RUN_AS in head else ()))
            i = end + 1
            continue
        if FENCE.match(line):
            fence = not fence
        elif not fence and (h := HEADING.match(line)):
            heading = h.group(1).strip()
        elif not fence and line.startswith("> **Extras:**"):
            quote = " ".join(q[1:].strip() for q in takewhile(lambda q: q.startswith(">"),
                                                               lines[i:]))
            stated = [n for m in EXTRAS.finditer(quote) for n in m.group("extras").split(",")]
            stated += [f"+{m.group('dist')}" for m in NO_DEPS.finditer(quote)]
            assert stated, f"{page}:{i + 1}: an Extras line names no `pip install -e '.[...]'`"
            extras = tuple(sorted({*extras, *stated}))
        i += 1
    return found


def every_block() -> list[Block]:
    return [b for page in pages() for b in read(page)]


def titled(blocks: list[Block]) -> dict[str, Block]:
    named: dict[str, Block] = {}
    for b in blocks:
        if b.title:
            assert b.title not in named, f"two blocks are titled {b.title!r}: {b.id}, " \
                f"{named[b.title].id}; titles name one block across the docs"
            named[b.title] = b
    return named


def prelude(block: Block, named: dict[str, Block]) -> list[Block]:
    """The blocks ``block`` continues, transitively, each once, in the order they run."""
    order: list[Block] = []

    def visit(b: Block, path: tuple[str, ...]) -> None:
        for title, page in b.continues:
            assert title not in path, f"{block.id}: the blocks continue each other: {path}"
            assert title in named, f"{b.id} continues {title!r}, which no block is titled"
            earlier = named[title]
            assert earlier.shown_page == page, \
                f"{b.id} says {title!r} is on {page}, but it is on {earlier.shown_page}"
            visit(earlier, (*path, title))
            if earlier not in order:
                order.append(earlier)

    visit(block, (block.title or block.id,))
    return order


def promised(code: str) -> list[str]:
    """The lines the block's comments say it prints, in order."""
    said: list[str] = []
    lines = code.splitlines()
    for n, line in enumerate(lines):
        trailing = TRAILING.match(line)
        if trailing and "print(" in trailing.group("code"):
            said.append(trailing.group("said").rstrip())
            continue
        if line.lstrip().startswith("#") or not line.strip() or trailing:
            continue
        before = lines[:n + 1]
        start = max((k for k, s in enumerate(before) if not s.strip()), default=-1) + 1
        if not any("print(" in s for s in before[start:]):
            continue
        for follow in lines[n + 1:]:
            if not follow.lstrip().startswith("# "):
                break
            said.append(follow.lstrip()[2:].rstrip())
    return said


def agrees(printed: str, said: str) -> bool:
    if said.endswith("..."):
        return printed.startswith(said[:-3].rstrip())
    return said == printed or any(said.startswith(printed + sep) for sep in (":", " (", "  ("))


def mismatch(printed: list[str], said: list[str]) -> str | None:
    """Why the printed lines do not bear out the comments, or None when they do."""
    at = 0
    for line in said:
        while at < len(printed) and not agrees(printed[at], line):
            at += 1
        if at == len(printed):
            return f"the block says it prints {line!r}; it printed:\n" + "\n".join(printed)
        at += 1
    return None


def job(block: Block, named: dict[str, Block], keep: bool = False) -> dict[str, Any]:
    chain = [*prelude(block, named), block]
    return {"id": block.id, "extras": list(block.extras), "keep": keep,
            "paths": sorted({p for b in chain for p in b.paths}),
            "sources": [[f"{b.page}:{b.line}", b.code] for b in chain]}


def run(blocks: list[Block], env: dict[str, str] | None = None,
        keep: bool = False) -> dict[str, Any]:
    """Runs ``blocks`` (as pasted, each with its prelude) in one runner process; returns its
    report: ``preload_seconds`` and per block id its ``rc``, ``stdout`` (its own lines: not those
    of the blocks it continues), ``stderr``, ``seconds`` and ``cwd`` (the directory it ran in,
    left in place when ``keep``, else removed)."""
    named = titled(every_block())
    with tempfile.TemporaryDirectory() as tmp:
        jobs, results = Path(tmp, "jobs.json"), Path(tmp, "results.json")
        jobs.write_text(json.dumps([job(b, named, keep) for b in blocks]))
        path = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
        done = subprocess.run([sys.executable, str(ROOT / "tests" / "doc_runner.py"), str(jobs),
                               str(results)], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, **(env or {}), "PYTHONPATH": path},
                              timeout=1800)
        assert done.returncode == 0, f"the runner failed:\n{done.stderr[-4000:]}"
        report: dict[str, Any] = json.loads(results.read_text())
    report["results"] = {r["id"]: r for r in report["results"]}
    return report


def find(page: str, heading: str, nth: int = 0) -> Block:
    """The ``nth`` Python block under ``heading`` (or titled so) on ``page``."""
    found = [b for b in every_block() if b.page == page and heading in (b.heading, b.title)]
    assert len(found) > nth, f"{page} has no block {nth} under {heading!r}"
    return found[nth]


@cache
def everything() -> dict[str, Any]:
    """The report of every block that runs here, run once per test process and shared by the
    tests that check what a block printed (tests/test_doc_blocks.py and the docs tests)."""
    return run([b for b in every_block() if b.runs_here])


def printed(block: Block) -> list[str]:
    """What ``block`` itself printed, line by line (trailing spaces dropped), when it ran
    successfully; fails with its stderr otherwise."""
    result = everything()["results"][block.id]
    assert result["rc"] == 0, f"{block.id} exited {result['rc']}:\n{result['stderr'][-3000:]}"
    return [line.rstrip() for line in result["stdout"].splitlines()]
