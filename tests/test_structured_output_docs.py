"""The structured-output guide runs as written: its blocks, in order in one namespace, print
what their comments say (the real-model block runs in tests/real_model/)."""

from __future__ import annotations

import pytest

from doc_pages import ROOT, blocks

PAGE = "docs/guide/structured-output.md"


def promised(block: str) -> list[str]:
    return [line.rsplit("# ", 1)[1].strip() for line in block.splitlines()
            if line.startswith("print(")]


def test_the_guide_runs_as_written(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "structured_output_guide"}
    expected: list[str] = []
    for title in ("An answer as data", "Grading on the output"):
        (block,) = blocks(PAGE, title)
        # compiled apart from this module's __future__ import: as a script of its own would be
        exec(compile(block, f"{PAGE} ({title})", "exec", dont_inherit=True), namespace)
        expected += promised(block)
    assert capsys.readouterr().out.splitlines() == expected
