"""A newcomer follows the guide page by page: the Python blocks of the getting-started quickstart
and of the guide's sections on agents, tools, budgets, policies (Python and YAML), effects,
strategies, streaming, sub-agents and replay run as written, in order, each building on the ones
before (as in one notebook), from the repository's root. (Sections that need a server, a key or
a store have tests of their own, named in test_readme.py's neighbours.)"""

from __future__ import annotations

import pytest

from doc_pages import ROOT, blocks

SECTIONS = [("docs/getting-started.md", "Quickstart"),
            ("docs/guide/agents.md", "Agents, sessions, results"),
            ("docs/guide/tools.md", "Tools"),
            ("docs/guide/budgets.md", "Budgets"),
            ("docs/guide/policies.md", "Policies"),
            ("docs/guide/policies.md", "YAML policies and the policy CLI"),
            ("docs/guide/approvals.md", "The six effects, approvals and taint"),
            ("docs/guide/strategies.md", "Writing a reasoning strategy"),
            ("docs/guide/strategies.md", "Streaming, sub-agents and replay")]


def test_the_guide_runs_top_to_bottom(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    for page, title in SECTIONS:
        found = blocks(page, title)
        assert found, (page, title)
        for block in found:
            exec(compile(block, f"{page} ({title})", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert "True 391 " in "\n".join(out)  # the session of "Agents, sessions, results"
    # the streaming example: each tool line on its own, the answer on its own line, then why
    assert "[calculator: allow]" in out and "[calculator: 391]" in out
    assert out[out.index("[calculator: 391]") + 1:][:2] == ["391", "finished"]
    assert "3 widgets." in out  # the sub-agent's lead answered
    assert out[-1] == "True ()"  # the rerun of an unchanged recipe matches
    result = namespace["result"]
    assert getattr(result, "ok", False)  # after approval the refund ran
