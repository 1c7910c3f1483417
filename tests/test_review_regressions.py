"""Defects found in review, each pinned by the behaviour that must now hold."""

from __future__ import annotations

import json
from typing import Any

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.credentials import CredentialBroker, ScopedToken
from tether.policy import Action, Context, Resource, Subject

ran: list[Any] = []


@tool
def read_file(path: str) -> str:
    """Read a file."""
    ran.append(path)
    return f"contents of {path}"


@tool(side_effect=True)
def pay(card: int, amount: int) -> str:
    """Pay with a card."""
    ran.append(card)
    return f"paid {amount}"


class PublicOnly:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "read_file" and not str(action.arguments["path"]).startswith("/pub"):
            return Decision(Effect.DENY, "private path", "p")
        if action.tool == "pay":
            return Decision(Effect.MASK, "card data", "p", fields=("card",),
                            mask_in=("journal",))
        return Decision(Effect.ALLOW, "ok", "p")


def agent(turns: list[Any], policy: Any = None) -> Agent:
    return Agent(model=ScriptedModel(turns, when_exhausted="done"), reasoning=ReAct(),
                 tools=[read_file, pay], policy=policy or PublicOnly())


def test_a_repeated_call_id_cannot_borrow_another_calls_decision() -> None:
    ran.clear()
    turn = ModelResponse(tool_calls=(ToolCall("call_0", "read_file", {"path": "/pub/a"}),
                                     ToolCall("call_0", "read_file", {"path": "/etc/shadow"})))
    session = agent([turn]).session("x")
    session.run()
    assert ran == ["/pub/a"]
    decisions = [e.data for e in session.replay() if e.type == "tool.decision"]
    assert [d["decision"]["effect"] for d in decisions] == ["allow", "deny"]
    assert len({d["call_id"] for d in decisions}) == 2


def test_empty_call_ids_are_each_charged_against_the_budget() -> None:
    ran.clear()
    turn = ModelResponse(tool_calls=tuple(ToolCall("", "read_file", {"path": f"/pub/{i}"})
                                          for i in range(3)))
    model = ScriptedModel(lambda request: turn if not any(
        m.role == "tool" for m in request.messages) else "done")
    result = Agent(model=model, reasoning=ReAct(), tools=[read_file],
                   policy=PublicOnly()).run("x", budget=Budget(max_tool_calls=1))
    assert len(ran) == 1 and result.spend.tool_calls == 1


def test_a_masked_number_and_a_subscriber_see_no_masked_value() -> None:
    ran.clear()
    seen: list[str] = []
    session = agent([ModelResponse(tool_calls=(
        ToolCall("c1", "pay", {"card": 4111111111111111, "amount": 5}),))]).session("pay")
    session.events.subscribe(lambda e: seen.append(json.dumps(e.data)))
    session.run()
    assert ran == [4111111111111111]  # the tool got the real value
    stored = json.dumps([e.data for e in session.replay()])
    assert "4111111111111111" not in stored and "4111111111111111" not in "".join(seen)
    assert session.verify() is None


def test_redacting_a_value_that_looks_like_json_or_a_timestamp_keeps_the_journal_valid() -> None:
    class MaskEverything:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            return Decision(Effect.MASK, "hide", "p", fields=("path",), mask_in=("journal",))

    for value in ("true", "null", "1795", "session", '":"'):
        session = agent([ModelResponse(tool_calls=(
            ToolCall("c1", "read_file", {"path": value}),))], MaskEverything()).session("x")
        result = session.run()
        assert result.stop_reason.value == "finished"
        assert session.verify() is None and session.replay()[-1].type == "session.end"


def test_malformed_mask_and_degrade_decisions_deny() -> None:
    for bad in (Decision(Effect.MASK, "x", "p", fields="card"),  # type: ignore[arg-type]
                Decision(Effect.MASK, "x", "p", fields=("card",), mask_in=("Journal",)),
                Decision(Effect.MASK, "x", "p"),
                Decision(Effect.PARTIAL_ALLOW, "x", "p"),
                Decision(Effect.DEGRADE, "x", "p")):
        ran.clear()

        class Bad:
            def evaluate(self, *args: Any, bad: Decision = bad) -> Decision:
                return bad

        result = agent([ModelResponse(tool_calls=(
            ToolCall("c1", "pay", {"card": 4111111111111111, "amount": 5}),))],
            Bad()).run("x")
        assert ran == []
        assert result.trajectory.steps[0].results[0].status == "denied"
        assert "malformed" in result.trajectory.steps[0].results[0].content


def test_a_tool_call_cut_by_the_output_limit_never_runs_with_guessed_arguments() -> None:
    ran.clear()
    cut = ModelResponse(tool_calls=(ToolCall("c1", "read_file", {}),), finish_reason="length")

    class Cut(ScriptedModel):
        async def complete(self, request: Any) -> ModelResponse:
            return cut if not any(m.role == "tool" for m in request.messages) else \
                ModelResponse("stopped")

    result = Agent(model=Cut(["x"]), reasoning=ReAct(), tools=[read_file]).run("x")
    assert ran == []
    res = result.trajectory.steps[0].results[0]
    assert res.status == "rejected" and "cut off" in res.content


def test_a_secret_cut_by_truncation_is_still_scrubbed() -> None:
    secret = "pw-Zq8Lr3VxKk29Hd"

    @tool
    def leaky(credentials: ScopedToken) -> str:
        """Leak."""
        return "x" * 90 + credentials.reveal()

    broker = CredentialBroker()
    broker.register("leaky", secret)
    session = Agent(model=ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "leaky", {}),)),
                                         "done"]),
                    reasoning=ReAct(), tools=[leaky], credentials=broker,
                    max_result_chars=100).session("x")
    result = session.run()
    content = result.trajectory.steps[0].results[0].content
    assert secret[:6] not in content and secret[:6] not in json.dumps(
        [e.data for e in session.replay()])


def test_urls_with_credentials_stay_out_of_reprs_and_messages() -> None:
    from tether.mcp.config import MCPServer
    from tether.models.openai import OpenAIModel

    url = "https://user:Pa55w0rd@llm.internal/v1?api-key=SECRET"
    shown = repr(OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=url))
    server = MCPServer.http("x", url)
    for text in (shown, repr(server), server.where()):
        assert "Pa55w0rd" not in text and "SECRET" not in text
