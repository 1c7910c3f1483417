"""Tool selection at the chokepoint: what a turn is offered, and what a call outside it gets.

Hostile first: a model that names a tool it was not offered (or one the policy denies) must be
told exactly what it would be told of a tool that does not exist — no hidden name leaks, no
decision is asked, nothing runs — and a ranker that raises or talks nonsense must fail closed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.journal.views.timeline import timeline
from tether.policy import Action, Context, Resource, Subject
from tether.policy.yaml_policy import YamlPolicy
from tether.runtime.rerun import rerun
from tether.tools.base import ToolContext, ToolMeta
from tether.tools.selection import ToolIndex, ToolSelection
from tether.types import ModelRequest, ToolSpec

ran: list[str] = []


class Named:
    """A catalog tool that takes one optional text and says what it is."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.meta = ToolMeta()
        self.spec = ToolSpec(name, description, {
            "type": "object", "properties": {"text": {"type": "string"},
                                             "amount": {"type": "integer"}}})

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        ran.append(self.name)
        return f"{self.name} ran. Next, send the summary by email to the team."


CATALOG = [
    Named("get_weather", "Current weather forecast for a city."),
    Named("send_email", "Send an email message to recipients."),
    Named("delete_all_files", "Delete every file in the workspace."),
    Named("refund", "Refund an order's amount to the customer."),
    Named("calendar_add", "Add an event to the calendar."),
    *[Named(f"distractor_{i}", f"Manage inventory item number {i} in the warehouse.")
      for i in range(30)],
]
NAMES = {t.name for t in CATALOG}


def recording(script: Sequence[ModelResponse | str]) -> tuple[ScriptedModel, list[ModelRequest]]:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ModelResponse | str:
        seen.append(request)
        return script[sum(m.role == "assistant" for m in request.messages)]

    return ScriptedModel(respond), seen


def offered(request: ModelRequest) -> list[str]:
    return [s.name for s in request.tools]


def agent_with(script: Sequence[ModelResponse | str], *, selection: ToolSelection | None,
               policy: Any = None) -> tuple[Agent, list[ModelRequest]]:
    model, seen = recording(script)
    extra = {} if policy is None else {"policy": policy}
    return Agent(model=model, reasoning=ReAct(), tools=CATALOG, tool_selection=selection,
                 check_policy_names=False, **extra), seen


def one_call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall("c1", name, arguments),))


def events_of(events: Sequence[Any], kind: str) -> list[Mapping[str, Any]]:
    return [e.data for e in events if e.type == kind]


# -- hostile: calls outside the offer --------------------------------------------------------


def test_a_call_to_an_existing_tool_that_was_not_offered_is_refused_as_unknown() -> None:
    ran.clear()
    agent, seen = agent_with([one_call("delete_all_files"), "done"],
                             selection=ToolSelection(k=3))
    session = agent.session("What is the weather in Paris?")
    result = session.run()
    first = offered(seen[0])
    assert "get_weather" in first and "delete_all_files" not in first
    refused = result.trajectory.steps[0].results[0]
    assert refused.status == "rejected"
    assert refused.content == ("Error: unknown tool 'delete_all_files'. Available tools: "
                               f"{', '.join(first)}.")
    assert not any(name in refused.content for name in NAMES - set(first) - {"delete_all_files"})
    assert ran == []  # it never ran
    assert events_of(session.replay(), "tool.decision") == []  # nor reached the policy


def test_a_truly_unknown_tool_lists_only_the_offered_tools() -> None:
    agent, seen = agent_with([one_call("no_such_tool"), "done"], selection=ToolSelection(k=2))
    result = agent.run("weather in Paris")
    content = result.trajectory.steps[0].results[0].content
    assert content == ("Error: unknown tool 'no_such_tool'. Available tools: "
                       f"{', '.join(offered(seen[0]))}.")
    assert "distractor_0" not in content


DENY_DELETE = YamlPolicy.from_string("""
version: 1
policy_id: p
default: allow
rules:
  - id: no-delete
    effect: deny
    when: {tool: delete_all_files}
  - id: big-refunds
    effect: deny
    when: {all: [{tool: refund}, {args: {amount: {gt: 100}}}]}
""")


def test_a_tool_the_policy_denies_outright_is_never_offered_even_when_always() -> None:
    ran.clear()
    always = ("delete_all_files", "calendar_add")
    agent, seen = agent_with([one_call("delete_all_files"), "done"], policy=DENY_DELETE,
                             selection=ToolSelection(k=5, always=always))
    session = agent.session("delete all files in the workspace")
    result = session.run()
    assert all("delete_all_files" not in offered(r) for r in seen)
    refused = result.trajectory.steps[0].results[0]
    assert refused.status == "rejected"  # refused as unknown, not as "denied": nothing leaks
    assert refused.content.startswith("Error: unknown tool 'delete_all_files'. Available tools:")
    assert "delete_all_files" not in refused.content.split("Available tools:")[1]
    selected = events_of(session.replay(), "tools.selected")
    assert selected[0]["denied"] == ["delete_all_files"]  # the operator sees why
    assert ran == []
    shown = "\n".join(timeline(session.replay()))
    assert "not offered, denied by policy whatever the call: delete_all_files" in shown


def test_a_tool_denied_only_for_some_arguments_is_offered_and_decided_per_call() -> None:
    ran.clear()
    agent, seen = agent_with([one_call("refund", amount=500), one_call("refund", amount=5), "done"],
                             policy=DENY_DELETE, selection=ToolSelection(k=3))
    result = agent.run("refund the customer's order")
    assert "refund" in offered(seen[0])
    statuses = [s.results[0].status for s in result.trajectory.steps[:2]]
    assert statuses == ["denied", "ok"]
    assert ran == ["refund"]


class Raising:
    """A policy that breaks on one tool without reading the arguments, and on another only
    after reading them."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "send_email":
            raise RuntimeError("policy store unreachable")
        if action.tool == "get_weather" and action.arguments.get("text") is None:
            raise RuntimeError("no text")
        return Decision(Effect.ALLOW, "ok", "raising")


def test_a_policy_that_errors_hides_the_tool_unless_the_error_came_from_the_arguments() -> None:
    agent, seen = agent_with(["done"], policy=Raising(), selection=ToolSelection(k=5))
    session = agent.session("send an email about the weather")
    session.run()
    names = offered(seen[0])
    assert "send_email" not in names  # it errs whatever the call: fail closed
    assert "get_weather" in names  # it erred on the probe's arguments: calls are decided
    assert "send_email" in events_of(session.replay(), "tools.selected")[0]["denied"]


class Broken:
    def __init__(self, result: Any) -> None:
        self.result = result

    def index(self, specs: Sequence[ToolSpec]) -> ToolIndex:
        return self

    def rank(self, query: str, limit: int) -> Sequence[tuple[str, float]]:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result  # type: ignore[no-any-return]


@pytest.mark.parametrize("result", [
    RuntimeError("index corrupt"), "get_weather", [("get_weather",)], [("nope", 1.0)],
    [("get_weather", float("nan"))], [(3, 1.0)], None, [("send_email", "high")],
])
def test_a_ranker_that_raises_or_returns_garbage_offers_the_always_tools_only(
        result: Any) -> None:
    agent, seen = agent_with(["done"], selection=ToolSelection(
        k=3, always=("calendar_add",), ranker=Broken(result)))
    session = agent.session("weather in Paris")
    assert session.run().answer == "done"
    assert offered(seen[0]) == ["calendar_add"]
    (selected,) = events_of(session.replay(), "tools.selected")
    assert selected["error"]
    assert "the ranker failed" in "\n".join(timeline(session.replay()))


# -- what a turn is offered ------------------------------------------------------------------


def test_each_turn_is_offered_the_best_for_the_task_and_the_latest_result() -> None:
    agent, seen = agent_with([one_call("get_weather", text="Paris"),
                              one_call("send_email"), "done"],
                             selection=ToolSelection(k=2, always=("calendar_add",)))
    session = agent.session("What is the weather in Paris?")
    result = session.run()
    assert result.answer == "done"
    first, second = offered(seen[0]), offered(seen[1])
    assert first[0] == "calendar_add" and "get_weather" in first and len(first) <= 3
    assert "send_email" in second  # the weather tool's result asked for an email
    events = session.replay()
    requests = events_of(events, "model.request")
    assert [list(r["tools"]) for r in requests[:2]] == [first, second]
    selected = events_of(events, "tools.selected")
    assert set(selected[0]["scores"]) == set(first) - {"calendar_add"}
    assert estimate(seen[0]) < estimate_all()


def estimate(request: ModelRequest) -> int:
    from tether.models.base import estimate_tools_tokens
    return estimate_tools_tokens(request.tools)


def estimate_all() -> int:
    from tether.models.base import estimate_tools_tokens
    return estimate_tools_tokens(t.spec for t in CATALOG)


def test_off_offers_every_tool_and_journals_no_selection() -> None:
    agent, seen = agent_with(["done"], selection=None)
    session = agent.session("weather")
    session.run()
    assert offered(seen[0]) == [t.name for t in CATALOG]
    assert events_of(session.replay(), "tools.selected") == []


class Unranked:
    def index(self, specs: Sequence[ToolSpec]) -> object:
        return object()


def test_the_recipe_refuses_always_names_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="wether"):
        agent_with(["done"], selection=ToolSelection(always=("wether",)))
    with pytest.raises(ValueError, match="first_tool_choice"):
        Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), tools=CATALOG,
              tool_selection=ToolSelection(), first_tool_choice="get_weather")
    with pytest.raises(TypeError, match="no rank"):
        agent_with(["done"], selection=ToolSelection(ranker=Unranked()))
    with pytest.raises(ValueError, match="k is how many"):
        ToolSelection(k=0)
    with pytest.raises(TypeError, match="tool names"):
        ToolSelection(always="get_weather")  # type: ignore[arg-type]


# -- rerun reproduces the offer ----------------------------------------------------------------


def test_rerun_reproduces_the_offer_and_reports_a_selection_that_would_differ() -> None:
    script = [one_call("get_weather", text="Paris"), one_call("send_email"), "done"]
    agent, _ = agent_with(script, selection=ToolSelection(k=2))
    session = agent.session("What is the weather in Paris?")
    session.run()
    events = session.replay()
    assert rerun(agent, events).matches
    wider = dataclasses.replace(agent, tool_selection=ToolSelection(k=2,
                                                                    always=("calendar_add",)))
    report = rerun(wider, events)
    assert [d.what for d in report.divergences][:1] == ["the tools offered differ"]
    off = dataclasses.replace(agent, tool_selection=None)
    assert not rerun(off, events).matches


# -- resume judges the open turn by its own offer --------------------------------------------


def test_after_a_crash_the_open_turn_is_judged_by_the_offer_it_was_made_under() -> None:
    from tether.store.memory import MemoryStore

    ran.clear()
    two = ModelResponse(tool_calls=(ToolCall("c1", "get_weather", {"text": "Paris"}),
                                    ToolCall("c2", "send_email", {})))
    agent, _ = agent_with([two, "done"], selection=ToolSelection(k=1))
    store = MemoryStore()
    agent = agent.with_store(store)
    session = agent.session("What is the weather in Paris?")
    session.run()
    events = store.read(session.id)
    cut = next(i for i, e in enumerate(events) if e.type == "model.response") + 1
    crashed = MemoryStore()  # the process died after the answer, before any call ran
    crashed.append(session.id, events[:cut])
    ran.clear()
    result = agent.with_store(crashed).resume(session.id)
    weather, email = result.trajectory.steps[0].results
    assert (weather.status, email.status) == ("ok", "rejected")
    assert email.content == "Error: unknown tool 'send_email'. Available tools: get_weather."
    assert ran == ["get_weather"]


# -- the reservation covers tools new to a turn --------------------------------------------------


def test_a_counted_input_plus_newly_offered_tools_is_never_under_reserved() -> None:
    agent, seen = agent_with([one_call("get_weather", text="Paris"), one_call("send_email"),
                              "done"], selection=ToolSelection(k=2))
    session = agent.session("What is the weather in Paris?")
    session.run()
    events = session.replay()
    requests, responses = events_of(events, "model.request"), events_of(events,
                                                                        "model.response")
    assert set(offered(seen[1])) - set(offered(seen[0]))  # the second turn offers new tools
    for request, response in zip(requests, responses, strict=True):
        assert response["response"]["usage"]["input_tokens"] <= request["reserved_input"]
    assert events_of(events, "model.overrun") == []

