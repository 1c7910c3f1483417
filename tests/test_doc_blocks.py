"""Every ```python block of README.md and docs/ runs as a reader pastes it (tests/doc_blocks.py):
alone, with only the blocks it names before it and the extras its page states, and prints what
its comments say; a block marked as not runnable here is compiled. All run in one runner process
(one fork per block), once per test process; the docs tests with assertions of their own read the
same report (``doc_blocks.printed``).

This replaces tests/test_readme_blocks.py, which ran the guide's first pages in one shared
namespace, top to bottom — and so never noticed a block that needed another's names."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from doc_blocks import (
    ROOT,
    Block,
    every_block,
    everything,
    find,
    mismatch,
    prelude,
    printed,
    promised,
    run,
    titled,
)

from conftest import unavailable

BLOCKS = every_block()
NODE_SERVER = "tests/mcp/node_modules/.bin/mcp-server-filesystem"


@pytest.fixture(scope="session")
def report() -> dict[str, Any]:
    return everything()


def explain(block: Block, result: dict[str, Any], why: str) -> str:
    return (f"{block.page}, block at line {block.line} ({block.title or block.heading}): {why}\n"
            f"--- stdout\n{result['stdout'][-3000:]}\n--- stderr\n{result['stderr'][-3000:]}")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_block_runs_as_pasted(block: Block, report: dict[str, Any]) -> None:
    if not block.runs_here:
        compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                dont_inherit=True)
        return
    if NODE_SERVER in block.code and not (ROOT / NODE_SERVER).exists():
        unavailable(f"{block.id} needs {NODE_SERVER}: run `make mcp-deps`")
    result = report["results"][block.id]
    assert result["rc"] == 0, explain(block, result, f"exited {result['rc']}")
    wrong = mismatch([line.rstrip() for line in result["stdout"].splitlines()],
                     promised(block.code))
    assert wrong is None, explain(block, result, wrong or "")


def test_titles_and_continuations_resolve() -> None:
    named = titled(BLOCKS)
    used = {title for b in BLOCKS for title, _ in b.continues}
    assert used <= set(named), sorted(used - set(named))
    assert set(named) <= used, f"titled but never continued: {sorted(set(named) - used)}"
    for b in BLOCKS:
        unrunnable = [e.id for e in prelude(b, named) if not e.runs_here]
        assert not unrunnable or not b.runs_here, \
            f"{b.id} runs here but continues {unrunnable}, which does not: mark it so too"


def test_the_session_block_prints_its_result() -> None:
    (line,) = printed(find("docs/guide/agents.md", "Agents, sessions, results"))
    assert line.startswith("True 391 ")


def test_the_streaming_block_puts_each_event_on_its_own_line() -> None:
    out = printed(titled(BLOCKS)["streaming"])
    assert "[calculator: allow]" in out and "[calculator: 391]" in out
    assert out[out.index("[calculator: 391]") + 1:][:2] == ["391", "finished"]


def test_the_approved_refund_ran() -> None:
    out = printed(find("docs/guide/approvals.md", "The six effects, approvals and taint"))
    assert out == ["True Refunded 500 on A1."]


def synthetic(line: int, code: str, extras: tuple[str, ...] = ()) -> Block:
    return Block("docs/synthetic.md", line, "synthetic", None, code, extras, (), None, ())


def test_each_block_gets_a_fresh_main_and_only_its_pages_extras() -> None:
    defines = synthetic(1, "x = 1\n")
    uses = synthetic(2, "print(x)\n")
    allowed = synthetic(3, "import bm25s\n", ("knowledge",))  # so bm25s and numpy are preloaded
    unstated = synthetic(4, "import bm25s\n")
    cached = synthetic(5, "import importlib\nimportlib.import_module('numpy')\n")
    results = run([defines, uses, allowed, unstated, cached])["results"]
    assert results[defines.id]["rc"] == 0 and results[allowed.id]["rc"] == 0
    assert "NameError: name 'x' is not defined" in results[uses.id]["stderr"]
    assert "needs the knowledge extra, which the page does not state" in \
        results[unstated.id]["stderr"]
    # preloaded for the block that may import it, and still refused to one that may not
    assert "numpy" in results[cached.id]["stderr"]
    assert results[cached.id]["rc"] != 0


def test_comments_are_held_to_what_was_printed() -> None:
    code = 'print(n)  # 2: erased\nprint(s)\n# index a.index was altered, ...\n'
    assert promised(code) == ["2: erased", "index a.index was altered, ..."]
    assert mismatch(["2", "index a.index was altered, not used"], promised(code)) is None
    assert mismatch(["3", "index a.index was altered, not used"], promised(code))
    assert mismatch(["index a.index was altered, not used", "2"], promised(code))
