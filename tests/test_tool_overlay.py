"""Tool metadata outside the code: a reviewed overlay declares what third-party tools are and
do, strictly validated, and the policy decides on it exactly as on metadata written in code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.cli import main
from tether.policy import Action, Context, Resource, Subject
from tether.policy.overlay import Declared, OverlayError, parse_overlay
from tether.tools.decorator import ToolDefinitionError


@tool
def send_money(recipient: str, amount: int) -> str:
    """Send money."""
    return f"sent {amount} to {recipient}"


@tool
def read_inbox(folder: str) -> str:
    """Read the inbox."""
    return f"mail in {folder}"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


OVERLAY = """
tools:
  "read_*": {output_trust: untrusted, tags: [reads]}
  read_file: {output_trust: trusted}
  send_money:
    side_effect: true
    egress: true
    risk: high
    tags: [payments]
    parties: [recipient]
"""


def test_globs_then_names_and_the_tool_is_otherwise_itself() -> None:
    money, inbox, files = parse_overlay(OVERLAY, "tools.yaml").apply(
        [send_money, read_inbox, read_file])
    assert isinstance(money, Declared) and money.meta.side_effect and money.meta.egress
    assert money.meta.parties == frozenset({"recipient"}) and money.meta.risk == "high"
    assert inbox.meta.output_trust == "untrusted" and inbox.meta.tags == frozenset({"reads"})
    assert files.meta.output_trust == "trusted"  # the exact name has the last word
    assert files.meta.tags == frozenset({"reads"})  # what it did not override stays
    assert money.spec == send_money.spec and money.name == "send_money"
    assert money.source == ("tools.yaml, line 5",)
    assert send_money.meta.side_effect is False  # the original is untouched


class PartiesNeedApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.parties and resource.side_effect:
            return Decision(Effect.DENY, f"{sorted(resource.parties)} decided by policy", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def test_the_policy_sees_the_declared_metadata_and_the_journal_records_it() -> None:
    tools = parse_overlay(OVERLAY).apply([send_money, read_inbox, read_file])
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall("c1", "send_money",
                                           {"recipient": "bob", "amount": 5}),)), "done"]
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=tools,
                  policy=PartiesNeedApproval(), store="memory://")
    result = agent.run("pay bob")
    assert [r.status for r in result.trajectory.tool_results] == ["denied"]
    decision = next(e.data for e in agent.load(result.session_id).replay()
                    if e.type == "tool.decision")
    assert decision["resource"]["parties"] == ["recipient"]
    assert decision["resource"]["side_effect"] is True


@pytest.mark.parametrize("text, where", [
    ("tools:\n  send_money: {side_efect: true}\n", "line 2"),          # unknown key
    ("tools:\n  send_money: {side_effect: yes please}\n", "line 2"),   # wrong type
    ("tools:\n  send_money: {risk: extreme}\n", "line 2"),             # not a risk
    ("tools:\n  send_money: {}\n", "line 2"),                           # declares nothing
    ("tools:\n  send_money: {risk: high}\n  send_money: {risk: low}\n", "line 3"),  # twice
    ("tool:\n  send_money: {risk: high}\n", "line 1"),                 # not 'tools'
])
def test_mistakes_load_nothing_and_name_the_line(text: str, where: str) -> None:
    with pytest.raises(OverlayError, match=where):
        parse_overlay(text, "tools.yaml")


def test_entries_must_fit_the_tools() -> None:
    with pytest.raises(OverlayError, match="names none of the tools"):
        parse_overlay("tools:\n  send_mony: {risk: high}\n").apply([send_money])
    with pytest.raises(OverlayError, match=r"parties \['iban'\] are not arguments"):
        parse_overlay("tools:\n  send_money: {parties: [iban]}\n").apply([send_money])


def test_parties_in_code_are_checked_too() -> None:
    @tool(side_effect=True, parties=["recipient"])
    def pay(recipient: str, amount: int) -> str:
        """Pay."""
        return "ok"

    assert pay.meta.parties == frozenset({"recipient"})
    with pytest.raises(ToolDefinitionError, match="not arguments"):
        @tool(parties=["iban"])
        def pay_wrong(recipient: str) -> str:
            """Pay."""
            return "ok"
    with pytest.raises(ToolDefinitionError, match="not the string"):
        tool(parties="recipient")  # type: ignore[arg-type]


def test_tools_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mytools.py").write_text(
        "from tether import tool\n\n"
        "@tool\ndef send_money(recipient: str, amount: int) -> str:\n"
        "    '''Send money.'''\n    return 'ok'\n\nTOOLS = [send_money]\n")
    overlay = tmp_path / "tools.yaml"
    overlay.write_text("tools:\n  send_money: {side_effect: true, parties: [recipient]}\n")
    spec = f"{tmp_path / 'mytools.py'}:TOOLS"
    assert main(["tools", "show", "--tools", spec, "--overlay", str(overlay)]) == 0
    shown = capsys.readouterr().out
    assert "send_money: side_effect" in shown and "['recipient']" in shown
    assert f"{overlay}, line 2" in shown
    assert main(["tools", "show", "--tools", spec]) == 0
    assert "declared by code" in capsys.readouterr().out
    overlay.write_text("tools:\n  send_money: {parties: [iban]}\n")
    assert main(["tools", "show", "--tools", spec, "--overlay", str(overlay)]) == 2
    assert "line 2" in capsys.readouterr().err


def test_a_glob_may_match_nothing() -> None:
    (money,) = parse_overlay("tools:\n  'mcp_*': {output_trust: untrusted}\n").apply(
        [send_money])
    assert money is send_money
