"""The framework-free core of the adapters: a governed foreign run's tool door and model meter."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tether import Budget, Decision, Effect, Price
from tether.integrations.decided import ForeignTool
from tether.integrations.governed import GovernedRun, RunStopped
from tether.journal.chain import verify_chain
from tether.policy import Action, Context, Resource, Subject, YamlPolicy
from tether.policy.names import PolicyNameError
from tether.runtime.accounting.stop import StopReason
from tether.store.sqlite import SQLiteStore
from tether.tools.base import ToolMeta
from tether.types import ModelResponse, ToolCall, ToolSpec, Usage

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"to": {"type": "string"}}}
SEND = ForeignTool(ToolSpec("send", "Send a message.", SCHEMA),
                   ToolMeta(side_effect=True, egress=True))
LOOK = ForeignTool(ToolSpec("look", "Look something up.", SCHEMA))


class Rules:
    seen: list[str]

    def __init__(self) -> None:
        self.seen = []

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        self.seen.append(context.request)
        to = action.arguments.get("to")
        if to == "mallory":
            return Decision(Effect.DENY, "mallory is not a recipient", "rules")
        if to == "boss":
            return Decision(Effect.REQUIRE_APPROVAL, "the boss needs a person's yes", "rules")
        return Decision(Effect.ALLOW, "ok", "rules")


def body(ran: list[dict[str, Any]], answer: str = "done") -> Any:
    async def run(arguments: dict[str, Any]) -> str:
        ran.append(arguments)
        return answer
    return run


def governed(**kwargs: Any) -> GovernedRun:
    kwargs.setdefault("policy", Rules())
    return GovernedRun([SEND, LOOK], request="tell alice hello", framework="test", **kwargs)


async def test_a_call_is_decided_with_the_request_and_runs_once() -> None:
    rules = Rules()
    run = governed(policy=rules)
    ran: list[dict[str, Any]] = []
    outcome = await run.call("c1", "send", {"to": "alice"}, body(ran))
    assert outcome.result.status == "ok" and outcome.result.content == "done"
    assert ran == [{"to": "alice"}] and rules.seen == ["tell alice hello"]
    again = await run.call("c1", "send", {"to": "alice"}, body(ran))  # a framework's repeat
    assert again.result == outcome.result and len(ran) == 1
    types = [e.type for e in run.journal.events()]
    assert types[0] == "session.start" and types.count("client.call") == 1


async def test_a_denied_call_never_runs_and_says_why() -> None:
    run = governed()
    ran: list[dict[str, Any]] = []
    outcome = await run.call("c1", "send", {"to": "mallory"}, body(ran))
    assert outcome.result.status == "denied" and "mallory is not a recipient" in \
        outcome.result.content and ran == []


async def test_an_approval_is_used_once_by_the_same_call(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    run = governed(store=store)
    ran: list[dict[str, Any]] = []
    waiting = await run.call("c1", "send", {"to": "boss"}, body(ran))
    assert waiting.approval_id is not None and ran == []
    still = await run.call("c1", "send", {"to": "boss"}, body(ran))  # nobody decided yet
    assert still.approval_id == waiting.approval_id and ran == []
    run.approvals.approve(waiting.approval_id, approver="ops")
    other = await run.call("c9", "send", {"to": "boss"}, body(ran))  # not the approved call
    assert other.approval_id not in (None, waiting.approval_id) and ran == []
    done = await run.call("c1", "send", {"to": "boss"}, body(ran))
    assert done.result.status == "ok" and ran == [{"to": "boss"}]
    assert (await run.call("c1", "send", {"to": "boss"}, body(ran))).result.status == "ok"
    assert len(ran) == 1
    run.close()
    assert verify_chain(store.read(run.id)) is None


async def test_a_denied_approval_refuses_the_call() -> None:
    run = governed()
    ran: list[dict[str, Any]] = []
    waiting = await run.call("c1", "send", {"to": "boss"}, body(ran))
    assert waiting.approval_id is not None
    run.approvals.deny(waiting.approval_id, approver="ops", note="not today")
    refused = await run.call("c1", "send", {"to": "boss"}, body(ran))
    assert refused.result.status == "denied" and "not today" in refused.result.content
    assert ran == []


async def test_the_tool_call_budget_stops_the_run_before_the_call() -> None:
    run = governed(budget=Budget(max_tool_calls=1))
    ran: list[dict[str, Any]] = []
    await run.call("c1", "look", {"to": "a"}, body(ran))
    with pytest.raises(RunStopped) as stopped:
        await run.call("c2", "look", {"to": "b"}, body(ran))
    assert stopped.value.reason is StopReason.TOOL_CALL_BUDGET and len(ran) == 1
    with pytest.raises(RunStopped):  # and it stays stopped
        await run.call("c3", "look", {"to": "c"}, body(ran))
    end = run.journal.events()[-1]
    assert end.type == "session.end" and end.data["reason"] == "tool_call_budget"


async def test_a_model_call_is_reserved_capped_and_charged() -> None:
    run = governed(budget=Budget(max_tokens=1000))
    metered = await run.reserve(100)
    assert metered.max_output_tokens is not None and 0 < metered.max_output_tokens <= 900
    await run.charge(metered, ModelResponse("", (ToolCall("m1", "send", {"to": "alice"}),),
                                            Usage(100, 20)))
    ran: list[dict[str, Any]] = []
    outcome = await run.call("m1", "send", {"to": "alice"}, body(ran))
    assert outcome.result.status == "ok" and ran == [{"to": "alice"}]
    types = [e.type for e in run.journal.events()]
    assert "client.call" not in types  # the model's own call, as in a native session
    assert run.remaining_budget()["tokens"] == 880


async def test_a_model_call_that_does_not_fit_is_not_made() -> None:
    run = governed(budget=Budget(max_tokens=100))
    with pytest.raises(RunStopped) as stopped:
        await run.reserve(500)
    assert stopped.value.reason is StopReason.TOKEN_BUDGET
    assert "model.request" not in [e.type for e in run.journal.events()]


async def test_an_overrun_is_journaled_and_stops_the_run() -> None:
    run = governed(budget=Budget(max_tokens=1000))
    metered = await run.reserve(100)
    assert metered.max_output_tokens is not None
    with pytest.raises(RunStopped) as stopped:
        await run.charge(metered, ModelResponse("long", (), Usage(100, 5000)))
    assert stopped.value.reason is StopReason.TOKEN_BUDGET
    types = [e.type for e in run.journal.events()]
    assert types[-2:] == ["model.overrun", "session.end"]
    with pytest.raises(RunStopped):
        await run.reserve(10)


async def test_unusable_usage_is_a_model_error_charged_at_the_reservation() -> None:
    run = governed()
    metered = await run.reserve(100)
    with pytest.raises(RunStopped) as stopped:
        await run.charge(metered, ModelResponse("x", (), Usage(-1, 5)))
    assert stopped.value.reason is StopReason.MODEL_ERROR
    assert "model.unmetered" in [e.type for e in run.journal.events()]


async def test_a_reused_model_call_id_is_a_new_call() -> None:
    run = governed()
    ran: list[dict[str, Any]] = []
    first = await run.reserve(10)
    await run.charge(first, ModelResponse("", (ToolCall("x", "look", {"to": "a"}),),
                                          Usage(10, 5)))
    await run.call("x", "look", {"to": "a"}, body(ran))
    second = await run.reserve(10)
    await run.charge(second, ModelResponse("", (ToolCall("x", "look", {"to": "a"}),),
                                           Usage(10, 5)))
    await run.call("x", "look", {"to": "a"}, body(ran))
    assert len(ran) == 2  # the same id in a new turn is a new call, not the old one's result


async def test_a_call_the_framework_did_not_run_gets_a_result() -> None:
    run = governed()
    metered = await run.reserve(10)
    await run.charge(metered, ModelResponse("", (ToolCall("y", "look", {"to": "a"}),),
                                            Usage(10, 5)))
    await run.reserve(10)
    results = [e for e in run.journal.events() if e.type == "tool.result"]
    assert len(results) == 1 and results[0].data["status"] == "skipped"


def test_a_policy_naming_an_unknown_tool_is_refused() -> None:
    policy = YamlPolicy.from_string(
        "version: 1\npolicy_id: p\ndefault: allow\nrules:\n  - id: r\n    effect: deny\n"
        "    when: {tool: sned}\n", "p.yaml")
    with pytest.raises(PolicyNameError, match="sned"):
        GovernedRun([SEND], policy=policy, request="x")


def test_a_cost_budget_without_a_price_fails_closed() -> None:
    with pytest.raises(ValueError, match="price"):
        governed(budget=Budget(max_cost_usd=Decimal("1")))


async def test_a_cost_budget_is_reserved_and_charged_at_the_price() -> None:
    price = Price(input=Decimal("10"), output=Decimal("30"))  # per million tokens
    run = governed(budget=Budget(max_cost_usd=Decimal("0.01")), price=price)
    metered = await run.reserve(100)
    assert metered.reservation.cost_usd <= Decimal("0.01")
    await run.charge(metered, ModelResponse("ok", (), Usage(100, 50)))
    assert run.remaining_budget()["cost_usd"] == Decimal("0.01") - Decimal("0.0025")
    with pytest.raises(RunStopped) as stopped:  # a call the money left cannot pay for
        await run.reserve(10_000)
    assert stopped.value.reason is StopReason.COST_BUDGET


def test_declared_tools_read_meta_by_name_then_the_overlay_and_refuse_a_typo() -> None:
    from tether.integrations.runs import declared_tools
    from tether.policy.overlay import parse_overlay
    from tether.tools.base import ToolMeta
    from tether.types import ToolSpec

    specs = [ToolSpec("send", "Send.", {"type": "object", "properties": {"to": {}}}),
             ToolSpec("read", "Read.", {"type": "object", "properties": {}})]
    send, read = declared_tools(specs, {"send": ToolMeta(side_effect=True)},
                                parse_overlay("tools:\n  read: {output_trust: untrusted}\n"))
    assert send.meta.side_effect and read.meta.output_trust == "untrusted"
    with pytest.raises(ValueError, match=r"meta declares \['sned'\].*fix the names"):
        declared_tools(specs, {"sned": ToolMeta()})


async def test_a_call_id_resent_with_other_arguments_is_decided_anew() -> None:
    run = governed()
    ran: list[dict[str, Any]] = []
    first = await run.call("c1", "send", {"to": "alice"}, body(ran, "sent to alice"))
    assert first.result.content == "sent to alice"
    other = await run.call("c1", "send", {"to": "boss"}, body(ran, "sent to boss"))
    assert other.approval_id is not None  # decided: a person is asked, alice's result not given
    assert "sent to alice" not in other.result.content and ran == [{"to": "alice"}]
    denied = await run.call("c1", "send", {"to": "mallory"}, body(ran))
    assert denied.result.status == "denied" and ran == [{"to": "alice"}]


async def test_an_approval_does_not_pass_to_the_same_call_id_with_other_arguments() -> None:
    run = governed()
    ran: list[dict[str, Any]] = []
    waiting = await run.call("c1", "send", {"to": "boss"}, body(ran))
    assert waiting.approval_id is not None
    run.approvals.approve(waiting.approval_id, approver="ops")
    changed = await run.call("c1", "send", {"to": "boss", "cc": "mallory"}, body(ran))
    assert changed.approval_id not in (None, waiting.approval_id) and ran == []


async def test_a_call_resent_as_its_tool_reads_it_is_the_same_call_in_another_process(
        tmp_path: Path) -> None:
    def tidy(arguments: Any) -> dict[str, Any]:  # a framework's validation: it normalises
        return {k: str(v).strip().lower() for k, v in arguments.items()}

    send = ForeignTool(SEND.spec, SEND.meta, reader=tidy)
    store, ran = SQLiteStore(tmp_path / "g.db"), []
    first = GovernedRun([send], policy=Rules(), request="x", framework="test", store=store)
    assert (await first.call("c1", "send", {"to": " Alice "}, body(ran))).result.status == "ok"
    waiting = await first.call("c2", "send", {"to": " BOSS"}, body(ran))
    assert waiting.approval_id is not None and ran == [{"to": "alice"}]
    first.approvals.approve(waiting.approval_id, approver="ops")
    # another process; the framework resends both calls as it validated them (pydantic-ai does)
    again = GovernedRun([send], policy=Rules(), request="x", framework="test", store=store,
                        resume=first.id)
    assert (await again.call("c1", "send", {"to": "alice"}, body(ran))).result.content == "done"
    assert (await again.call("c2", "send", {"to": "boss"}, body(ran))).result.status == "ok"
    assert ran == [{"to": "alice"}, {"to": "boss"}]  # each once, as decided
    again.close()
    assert verify_chain(store.read(first.id)) is None
