"""A newcomer follows the README top to bottom: the Python blocks of the sections on agents,
tools, budgets, policies (Python and YAML), effects, strategies, streaming, sub-agents and replay run as written, in order,
each building on the ones before (as in one notebook), from the repository's root. (Sections
that need a server, a key or a store have tests of their own, named in test_readme.py's
neighbours.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["Quickstart", "Agents, sessions, results", "Tools", "Budgets", "Policies",
            "YAML policies and the policy CLI", "The six effects, approvals and taint",
            "Writing a reasoning strategy",
            "Streaming, sub-agents and replay"]


def blocks(title: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_runs_top_to_bottom(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    for title in SECTIONS:
        found = blocks(title)
        assert found, title
        for block in found:
            exec(compile(block, f"README.md ({title})", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert "True 391 " in "\n".join(out)  # the session of "Agents, sessions, results"
    # the streaming example: each tool line on its own, the answer on its own line, then why
    assert "[calculator: allow]" in out and "[calculator: 391]" in out
    assert out[out.index("[calculator: 391]") + 1:][:2] == ["391", "finished"]
    assert "3 widgets." in out  # the sub-agent's lead answered
    assert out[-1] == "True ()"  # the rerun of an unchanged recipe matches
    result = namespace["result"]
    assert getattr(result, "ok", False)  # after approval the refund ran
