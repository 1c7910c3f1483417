"""The probe tool selection hides by must see every way a policy reads a call's arguments.

Hostile first: "deny unless amount <= 100" reading the arguments as ``json.dumps(args)`` (what
a policy calling OPA or a remote service does), ``args.copy()``, ``args | {}`` or ``str(args)``
hid ``transfer_money`` on every turn, though README promises "a deny that reads the arguments
leaves the tool offered": the probe's stand-in dict noticed only Python-level reads, and those
go through C. Whatever the route (hypothesis picks it), the tool is offered and the gate decides
each call; a deny that reads nothing of the call still hides it.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import operator
import pickle
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.tools.selection import ToolSelection
from tether.types import ModelRequest

Reader = Callable[[Action, Context], Mapping[str, Any]]

# every route a policy might take to the call's arguments, each giving them back as a mapping
READERS: dict[str, Reader] = {
    "json.dumps": lambda a, c: json.loads(json.dumps(a.arguments)),
    "opa input": lambda a, c: json.loads(json.dumps(
        {"input": {"tool": a.tool, "args": a.arguments}}))["input"]["args"],
    "copy()": lambda a, c: a.arguments.copy(),  # type: ignore[attr-defined]
    "| {}": lambda a, c: a.arguments | {},  # type: ignore[operator]
    "str()": lambda a, c: ast.literal_eval(str(a.arguments)),
    "repr()": lambda a, c: ast.literal_eval(repr(a.arguments)),
    "dict()": lambda a, c: dict(a.arguments),
    "{**}": lambda a, c: {**a.arguments},
    "deepcopy": lambda a, c: copy.deepcopy(a.arguments),
    "asdict": lambda a, c: dataclasses.asdict(a)["arguments"],
    "astuple": lambda a, c: dataclasses.astuple(a)[1],
    "pickle": lambda a, c: pickle.loads(pickle.dumps(dict(a.arguments))),
    "items()": lambda a, c: dict(a.arguments.items()),
    "attrgetter": lambda a, c: operator.attrgetter("arguments")(a),
    "getattr": lambda a, c: getattr(a, "arguments"),  # noqa: B009
    "MappingProxyType": lambda a, c: MappingProxyType(a.arguments),  # type: ignore[arg-type]
    "replace": lambda a, c: dataclasses.replace(a).arguments,
    "vars of fields": lambda a, c: {f.name: getattr(a, f.name)
                                    for f in dataclasses.fields(a)}["arguments"],
    "provenance": lambda a, c: {"amount": 1000} if not c.provenance else {"amount": 0},
    "labels": lambda a, c: {"amount": 1000} if json.dumps(dict(c.labels)) == "{}" else {},
}

# how the rule uses what it read: a default that denies, a missing key that raises
STYLES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "get": lambda args: isinstance(args.get("amount"), int) and args["amount"] <= 100,
    "index": lambda args: args["amount"] <= 100,
    "default huge": lambda args: args.get("amount", 10**9) <= 100,
}


class AmountRule:
    """Deny ``transfer_money`` unless its amount is at most 100; everything else is allowed."""

    def __init__(self, read: Reader, allows: Callable[[Mapping[str, Any]], bool]) -> None:
        self.read, self.allows = read, allows

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool != "transfer_money":
            return Decision(Effect.ALLOW, "ok", "amounts")
        if self.allows(self.read(action, context)):
            return Decision(Effect.ALLOW, "small enough", "amounts")
        return Decision(Effect.DENY, "over 100", "amounts")


class Outright:
    """Denies ``transfer_money`` whatever the call, and reads only what is not the call."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        seen = (json.dumps([action.tool, context.step, context.request, dict(context.extra)]),
                repr(resource), repr(subject))
        if action.tool == "transfer_money" and seen:
            return Decision(Effect.DENY, "no transfers", "outright")
        return Decision(Effect.ALLOW, "ok", "outright")


def bank(ran: list[int]) -> list[Any]:
    @tool(side_effect=True)
    def transfer_money(amount: int, to: str) -> str:
        """Transfer an amount of money to an account."""
        ran.append(amount)
        return f"sent {amount} to {to}"

    @tool
    def get_balance() -> str:
        """The account's balance."""
        return "1000"

    @tool
    def get_weather(city: str) -> str:
        """The weather forecast for a city."""
        return "sunny"

    return [transfer_money, get_balance, get_weather]


def transfer(amount: int) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall("", "transfer_money",
                                              {"amount": amount, "to": "bob"}),),
                         finish_reason="tool_calls")


def run(policy: Any, script: list[Any], *, k: int = 2, task: str = "transfer money to bob",
        **session: Any) -> tuple[list[list[str]], Any, list[int]]:
    """The offers each turn was shown, the result, and the amounts transferred."""
    offers: list[list[str]] = []
    ran: list[int] = []

    def respond(request: ModelRequest) -> Any:
        offers.append([s.name for s in request.tools])
        return script[len(offers) - 1]

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=bank(ran),
                  policy=policy, tool_selection=ToolSelection(k=k))
    result = agent.run(task, **session)
    return offers, result, ran


@settings(max_examples=60, deadline=None)
@given(reader=st.sampled_from(sorted(READERS)), style=st.sampled_from(sorted(STYLES)))
def test_a_deny_that_reads_the_arguments_any_way_leaves_the_tool_offered(reader: str,
                                                                         style: str) -> None:
    offers, result, ran = run(AmountRule(READERS[reader], STYLES[style]),
                              [transfer(500), transfer(50), "done"])
    if reader in ("provenance", "labels"):  # it read only what the arguments carry: offered
        assert "transfer_money" in offers[0]
        return
    assert all("transfer_money" in o for o in offers[:2]), (reader, style, offers)
    statuses = [s.results[0].status for s in result.trajectory.steps[:2]]
    assert statuses == ["denied", "ok"]  # each call decided at the gate, on its own arguments
    assert ran == [50]


def test_the_cases_the_issue_names_fail_on_a_stand_in_that_only_counts_python_reads() -> None:
    for reader in ("json.dumps", "copy()", "| {}", "str()"):
        offers, _, _ = run(AmountRule(READERS[reader], STYLES["get"]), ["done"])
        assert "transfer_money" in offers[0], reader


def test_a_deny_that_reads_nothing_of_the_call_still_hides_the_tool() -> None:
    offers, result, ran = run(Outright(), [transfer(5), "done"])
    assert "transfer_money" not in offers[0]
    assert ran == [] and result.stop_reason.value == "finished"
