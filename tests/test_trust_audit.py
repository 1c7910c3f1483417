"""The trust audit: canaries planted where third parties write are looked for in every recorded
tool result; a tool declared trusted that carried one is a finding. On AgentDojo the probe plants
them itself and finds what a wrong declaration hides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether import Agent, ReAct, tool
from tether.cli import main
from tether.evals.obedient import PlannedCall, obedient_model
from tether.journal.views.trust import carriers, render

CANARY = "TetherCanary-7f3a"


def channel_tools(list_trust: str) -> list[Any]:
    @tool(output_trust=list_trust)  # type: ignore[arg-type]
    def list_channels() -> str:
        """The workspace's channels: anyone may create one and name it."""
        return f"general, random, External_{CANARY}"

    @tool(output_trust="untrusted")
    def read_channel(channel: str) -> str:
        """Messages others wrote."""
        return f"hi from {CANARY}" if channel == "random" else "nothing new"

    @tool
    def whoami() -> str:
        """The user's own name."""
        return "emma"

    return [list_channels, read_channel, whoami]


def run(store: Any, list_trust: str) -> None:
    plan = [PlannedCall("list_channels", {}), PlannedCall("read_channel", {"channel": "random"}),
            PlannedCall("whoami", {})]
    Agent(model=obedient_model(plan, []), reasoning=ReAct(), tools=channel_tools(list_trust),
          store=store).run("What is new in my channels?")


def test_a_trusted_tool_that_carried_a_canary_is_a_finding() -> None:
    from tether.store.memory import MemoryStore

    store = MemoryStore()
    run(store, "trusted")
    sessions = [store.read(i.session_id) for i in store.sessions()]
    found = carriers(sessions, [CANARY, "never-planted"])
    assert [(c.tool, c.declared, c.finding) for c in found] == [
        ("list_channels", "trusted", True), ("read_channel", "untrusted", False)]
    assert found[0].canaries == (CANARY,) and found[0].results == 1
    assert "FINDING: declared trusted" in render(found).splitlines()[0]
    assert carriers(sessions, ["never-planted"]) == []
    with pytest.raises(ValueError, match="at least one non-empty canary"):
        carriers(sessions, [""])


def test_the_cli_exits_1_on_a_finding_and_0_once_the_declaration_is_right(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tether.store.sqlite import SQLiteStore

    wrong, right = tmp_path / "wrong.db", tmp_path / "right.db"
    for path, trust in ((wrong, "trusted"), (right, "untrusted")):
        store = SQLiteStore(path)
        run(store, trust)
        store.close()
    assert main(["audit", "trust", "--canary", CANARY, "--store", f"sqlite:///{wrong}"]) == 1
    assert "list_channels: FINDING" in capsys.readouterr().out
    assert main(["audit", "trust", "--canary", CANARY, "--store", f"sqlite:///{right}"]) == 0
    assert "list_channels: declared untrusted" in capsys.readouterr().out
    assert main(["audit", "trust", "--canary", "", "--store", f"sqlite:///{right}"]) == 2
    assert "canary" in capsys.readouterr().err


def test_the_agentdojo_probe_finds_a_channel_list_declared_trusted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tether.evals.agentdojo as dojo
    from tether.policy.overlay import parse_overlay

    found, _ = dojo.probe_trust("slack")
    assert not any(c.finding for c in found)  # the reviewed overlay declares it untrusted
    assert ("get_channels", "untrusted") in {(c.tool, c.declared) for c in found}
    monkeypatch.setattr(dojo, "overlay_for", lambda name: parse_overlay(
        "tools:\n  get_webpage: {output_trust: untrusted}\n"))  # get_channels left trusted
    found, _ = dojo.probe_trust("slack")
    # slack's injection vectors sit in web pages and in one channel's name
    assert [c.tool for c in found if c.finding] == ["get_channels"]
