"""RERUN: re-execute a recorded session deterministically and report where it diverges.

Decision: nothing external runs again. The model is replaced by the recorded responses, in
order, and every tool by the recorded result of the same call id; what runs for real is tether
itself — gates, policy, budgets, loop detection, approvals as they were decided. So a rerun
answers "does this runtime, with this recipe, still make the same calls from the same inputs?"
after an upgrade or a policy change, and the first difference is reported with its step and
both sides instead of being silently absorbed.

What the record cannot give back is stood in for, never reported as a difference: an argument
the journal hid (``[masked]``) is passed through as recorded — its real value is not known, and
no tool runs with it — and a tool that takes credentials gets a stand-in token for every tool
the recipe's broker has a credential for (none fetched: the recorded result is replayed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, RunFailed
from tether.journal.redaction import HIDDEN_MARKERS
from tether.models.base import CallCancelled, Model, ModelError, native_output
from tether.models.pricing import Price
from tether.runtime.approvals.requests import StoredApprovals
from tether.runtime.chokepoint.additions import as_returned
from tether.runtime.chokepoint.failures import CANCELLED_BY_TIME
from tether.runtime.lifecycle.thread import recorded_history
from tether.runtime.record.history import history_messages, put_back
from tether.runtime.record.revive import revive
from tether.store.memory import MemoryStore
from tether.tools.base import Tool, ToolArgumentError, ToolContext, ToolFailure, ToolMeta
from tether.types import Event, Message, ModelRequest, ModelResponse, ToolSpec, Usage
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.credentials import CredentialBroker
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.record.result import Result


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a rerun parted from the record: the step, what differs, the recorded value and the
    rerun's."""
    step: int
    what: str
    recorded: Any
    rerun: Any


@dataclass(frozen=True, slots=True)
class RerunReport:
    """What a rerun found: the divergences from the record (none: ``matches``), the rerun's
    result and its own journal."""
    session_id: str
    divergences: tuple[Divergence, ...]
    result: Result | None
    events: tuple[Event, ...] = ()  # the rerun's own journal

    @property
    def matches(self) -> bool:
        """Whether the rerun made the same calls from the same inputs as the record."""
        return not self.divergences


class _Record:
    """What the recorded session asked and got, indexed for the replay."""

    def __init__(self, events: Sequence[Event], history: Sequence[Message] = ()) -> None:
        live = [(e.type, revive(e.type, e.data)) for e in events]
        calls = _model_calls(live)
        # (a branch call's request: the branch's messages after the session's opening; the
        # first request after a start that names a thread's turns left them out: ``history``)
        self.requests = [put_back(request["new"], request.get("history"), history)
                         if "new" in request else request["messages"] for request, _ in calls]
        # the tools each request was offered, compared when the record or the rerun selects
        # them (tether.runtime.context.selecting): without selection every request offers every tool
        self.offered = [tuple(request.get("tools", ())) for request, _ in calls]
        self.selected = any(t == EventType.TOOLS_SELECTED for t, _ in live)
        self.responses: list[ModelResponse | ModelError] = [outcome for _, outcome in calls]
        self.results = {d["call_id"]: d for t, d in live if t == EventType.TOOL_RESULT}
        self.granted = {d["call_id"] for t, d in live if t == EventType.APPROVAL_GRANTED}
        self.ran = self.granted | {d["call_id"] for t, d in live
                                   if t == EventType.TOOL_DECISION and d["charged"]}
        self.refused = {d["call_id"]: d for t, d in live if t == EventType.APPROVAL_REFUSED}
        # the summary calls' outcomes and the compactions, in order
        # (tether.runtime.context.compactor) (but not one a crash or an interruption lost: the rerun
        # asks for that summary once)
        self.summaries = [(t, d) for t, d in live if t == EventType.COMPACTION_RESPONSE
                          or (t == EventType.COMPACTION_ERROR and not d.get("lost"))]
        self.compactions = [d for t, d in live if t == EventType.CONTEXT_COMPACTED]
        self.summarised = 0
        # the planner's call and the plan it amended (tether.runtime.lifecycle.planning)
        self.plan_asked = next((d for t, d in live if t == EventType.PLAN_REQUEST), None)
        self.plan_outcome = next(((t, d) for t, d in live if t in (EventType.PLAN_RESPONSE,
                                                                   EventType.PLAN_ERROR)), None)
        self.amended = next((d["plan"] for t, d in live if t == EventType.PLAN_AMENDED), None)
        self.divergences: list[Divergence] = []
        self.asked = 0
        self.called: list[str] = []

    def diverge(self, what: str, recorded: Any, rerun: Any) -> None:
        self.divergences.append(Divergence(self.asked, what, recorded, rerun))


class _Replayed:
    """A model a rerun answers from the record: named, priced and counting tokens as the
    recipe's own, so the rerun reserves what the record reserved."""

    def __init__(self, record: _Record, model: Model, price: Price | None) -> None:
        self._record, self._name, self._price = record, model.name, price
        self.estimate_message_tokens = model.estimate_message_tokens

    @property
    def name(self) -> str:
        return self._name

    @property
    def price(self) -> Price | None:
        return self._price


class _RecordedModel(_Replayed):
    """The recorded responses, in order."""

    def __init__(self, record: _Record, model: Model, price: Price | None,
                 selects: bool = False) -> None:
        super().__init__(record, model, price)
        self._selects = selects or record.selected
        self._model = model

    def native_output(self, tools: bool) -> bool:
        """As the recorded model: whether the output schema went out natively or as words."""
        return native_output(self._model, tools)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        record = self._record
        index = record.asked
        record.asked += 1
        if index >= len(record.responses):
            record.diverge("the rerun asked the model more often than the record",
                           len(record.responses), index + 1)
            raise ModelError("no recorded response left")
        expected = [m.to_dict() for m in record.requests[index]]
        tail = [m.to_dict() for m in request.messages[-len(expected):]] if expected else []
        if tail != expected:
            record.diverge("the model request differs", expected, tail)
        offered = tuple(t.name for t in request.tools)
        if self._selects and offered != record.offered[index]:
            record.diverge("the tools offered differ", list(record.offered[index]),
                           list(offered))
        outcome = record.responses[index]
        if isinstance(outcome, ModelError):  # the recorded failure or cancellation, again
            raise outcome
        return outcome


class _RecordedSummaries(_Replayed):
    """The recorded summary calls' outcomes, in order, for a rerun's compactions: the summary
    the record got is the one the rerun gets (no summariser is called again)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        record = self._record
        index = record.summarised
        record.summarised += 1
        if index >= len(record.summaries):
            record.diverge("the rerun asked for a summary the record did not",
                           len(record.summaries), index + 1)
            raise ModelError("no recorded summary left")
        kind, data = record.summaries[index]
        if kind == EventType.COMPACTION_ERROR:
            raise ModelError(f"recorded: {data['error']}")
        usage = Usage(data["input_tokens"], data["output_tokens"], data["cached_input_tokens"],
                      data.get("cache_write_tokens", 0))
        return ModelResponse(data["text"], (), usage, data["model"], data["finish_reason"])


class _RecordedPlanner(_Replayed):
    """The planner's recorded answer (or failure): the rerun reads the plan the record read,
    whatever a planner would answer now, and no planner is called again."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        outcome = self._record.plan_outcome
        if outcome is None or outcome[0] == EventType.PLAN_ERROR:
            why = "no answer" if outcome is None else outcome[1]["error"]
            raise ModelError(f"recorded: {why}")
        data = outcome[1]
        usage = Usage(data["input_tokens"], data["output_tokens"], data["cached_input_tokens"],
                      data.get("cache_write_tokens", 0))
        return ModelResponse(data["text"], (), usage, data["model"], data["finish_reason"])


def _planner(agent: Agent, record: _Record) -> Any:
    """The rerun's planner: the recorded call's, answering from the record, whatever the
    recipe's is now; None when the record asked no planner."""
    asked = record.plan_asked
    if asked is None:
        return None
    from tether.runtime.lifecycle.planning import ModelPlanner

    own = agent.planner.model if agent.planner is not None else None
    model = own or agent.model
    price = agent.effective_price if own is None else own.price
    return ModelPlanner(_RecordedPlanner(record, model, price), int(asked["max_tokens"]))


def _compared(record: _Record, replayed: Sequence[Event]) -> None:
    """Report each compaction of the rerun that is not the recorded one — another range,
    other turns replaced, another summary or note in their place — and a count that differs."""
    ours = [e.data for e in replayed if e.type == EventType.CONTEXT_COMPACTED]
    for recorded, rerun in zip(record.compactions, ours, strict=False):
        left, right = _compaction(recorded), _compaction(rerun)
        if left != right:
            record.divergences.append(Divergence(int(recorded.get("step", 0)),
                                                 "the compaction differs", left, right))
    if len(ours) != len(record.compactions):
        record.diverge("the rerun compacted the conversation another number of times",
                       len(record.compactions), len(ours))
    amended = next((e.data["plan"] for e in replayed if e.type == EventType.PLAN_AMENDED), None)
    if amended != record.amended:
        record.divergences.append(Divergence(0, "the request plan differs", record.amended,
                                             amended))


def _compaction(data: Mapping[str, Any]) -> dict[str, Any]:
    replacement = [m if isinstance(m, Mapping) else m.to_dict() for m in data["replacement"]]
    return {"strategy": data["strategy"], "start": data["start"], "end": data["end"],
            "digest": data["digest"], "replacement": replacement}


class _RecordedTool:
    def __init__(self, tool: Tool, record: _Record) -> None:
        self._tool, self._record = tool, record
        self.name: str = tool.name
        self.meta: ToolMeta = tool.meta
        self.spec: ToolSpec = tool.spec

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The tool's validation, except that a value the journal hid stays its placeholder
        (it was valid when recorded; ``[masked]`` is no integer)."""
        try:
            return self._tool.validate(arguments)
        except ToolArgumentError as exc:
            if arguments.get(exc.field) not in HIDDEN_MARKERS:
                raise
        hidden = {k: v for k, v in arguments.items() if v in HIDDEN_MARKERS}
        try:
            return {**self._tool.validate({k: v for k, v in arguments.items()
                                           if k not in hidden}), **hidden}
        except ToolArgumentError as exc:  # required, hidden: the rest was valid when recorded
            if exc.field not in hidden:
                raise
            return dict(arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        record = self._record
        record.called.append(context.call_id)
        recorded = record.results.get(context.call_id)
        if context.call_id not in record.ran or recorded is None:
            record.diverge(f"tool {self.name!r} ran in the rerun but not in the record",
                           None, {"call_id": context.call_id, "arguments": arguments})
            raise RunFailed("not in the record")
        content = as_returned(recorded["content"])  # the turn adds its notes again
        if recorded["status"] != "ok":  # the recorded failure, word for word
            raise ToolFailure(content, recorded["status"])
        return content


def _replay_approvals(record: _Record, store: StoredApprovals) -> None:
    """Decide the rerun's approval requests as the recorded ones were decided."""
    for request in store.pending():
        if request.call_id in record.granted:
            store.approve(request.id, approver="rerun", note="approved in the record")
        else:
            refused = record.refused.get(request.call_id, {})
            store.deny(request.id, approver="rerun", note=refused.get("why", "not approved"))


def _stand_in(broker: CredentialBroker | None) -> CredentialBroker | None:
    """A broker with a placeholder credential for each tool ``broker`` has one for: a tool
    that takes credentials meets the same broker as when recorded, and no secret is fetched."""
    if broker is None:
        return None
    from tether.credentials import CredentialBroker

    stand_in = CredentialBroker()
    for name in broker.tools:
        stand_in.register(name, "rerun: no secret is fetched")
    return stand_in


async def arerun(agent: Agent, events: Sequence[Event]) -> RerunReport:
    """Rerun a recorded session with ``agent``'s recipe (its policy, limits, tools' schemas)."""
    if not events or events[0].type != EventType.SESSION_START:
        raise InvalidArgument("a rerun needs a session's events, starting with session.start")
    start = events[0].data
    turns = recorded_history(agent.journal_store, start)  # checked against the start's link
    record = _Record(events, history_messages(t.to_dict() for t in turns))
    from tether.runtime.accounting.budget import Budget

    approvals = StoredApprovals(MemoryStore())
    compaction = agent.compaction
    if compaction is not None:  # the recorded summaries, against the window the record had
        summariser = compaction.model or agent.model
        price = agent.effective_price if compaction.model is None else summariser.price
        compaction = dataclasses.replace(
            compaction, model=_RecordedSummaries(record, summariser, price),
            context_window=compaction.window(agent.model))
    replica = dataclasses.replace(
        agent, model=_RecordedModel(record, agent.model, agent.effective_price,
                                    agent.tool_selection is not None),
        tools=[_RecordedTool(t, record) for t in agent.registry], store=None,
        approvals=approvals, credentials=_stand_in(agent.credentials), compaction=compaction,
        planner=_planner(agent, record))
    subject = start["subject"]
    session = replica.session(start["task"], budget=Budget.from_dict(start["budget"]),
                              user_id=subject["user_id"], tenant_id=subject["tenant_id"],
                              roles=subject["roles"], context=start.get("context"),
                              request=start.get("request"))
    session.recorded_start = start  # the thread's turns and the request plan, as recorded
    session.recorded_turns = turns
    result = await session.arun()
    for _ in range(len(record.responses) + 1):
        if not session.paused:
            break
        _replay_approvals(record, approvals)
        result = await session.aresume()
    replayed = session.replay()
    same = {d["call_id"] for e in replayed if e.type == EventType.TOOL_RESULT
            for d in (e.data,) if _outcome(record.results.get(d["call_id"])) == _outcome(d)}
    missing = sorted(record.ran & set(record.results) - set(record.called) - same)
    if missing:  # (a call refused before its tool, as recorded — no credential — is no miss)
        record.diverge("calls ran in the record but not in the rerun", missing, [])
    _compared(record, replayed)
    if record.asked < len(record.responses):
        record.diverge("the rerun asked the model fewer times than the record",
                       len(record.responses), record.asked)
    return RerunReport(events[0].session_id, tuple(record.divergences), result,
                       tuple(replayed))


def _model_calls(live: Sequence[tuple[str, Any]]) -> list[tuple[Any, ModelResponse | ModelError]]:
    """Each recorded model request and its outcome, in order: its response; or,
    for a call that failed, the error (one the time budget cancelled: ``CallCancelled``, so the
    replay stops for time as the record did) — never the next call's response in its place. A
    request cut off by a crash (``model.lost``) or an interruption (charged, then the session
    paused) is left out: it was asked again on resume, and the rerun, never interrupted, asks
    once."""
    calls: list[list[Any]] = []  # [request, outcome]; outcome None: none yet; _GONE: left out
    for kind, data in live:
        if kind in (EventType.MODEL_REQUEST, EventType.BRANCH_REQUEST):
            calls.append([data, None])
        elif not calls:
            continue
        elif kind == EventType.SESSION_PAUSED and isinstance(calls[-1][1], _Unmetered):
            calls[-1][1] = _GONE
        elif calls[-1][1] is not None:
            continue
        elif kind in (EventType.MODEL_RESPONSE, EventType.BRANCH_RESPONSE):
            calls[-1][1] = data["response"]
        elif kind == EventType.MODEL_ERROR:
            calls[-1][1] = ModelError(f"recorded: {data['error']}")
        elif kind == EventType.MODEL_LOST:
            calls[-1][1] = _GONE
        elif kind == EventType.MODEL_UNMETERED:
            error = str(data.get("error", ""))
            calls[-1][1] = (CallCancelled(f"recorded: {error}")
                            if error.startswith(CANCELLED_BY_TIME)
                            else _Unmetered(f"recorded: {error}"))
    return [(new, ModelError("recorded: the call has no outcome in the record")
             if outcome is None else outcome) for new, outcome in calls if outcome is not _GONE]


class _Unmetered(ModelError):
    """A recorded call charged with no answer and not for time: an error, unless the session
    paused right after (an interruption), when it is left out."""


_GONE = object()


def _outcome(result: Mapping[str, Any] | None) -> tuple[Any, Any] | None:
    return None if result is None else (result["status"], result["content"])


def rerun(agent: Agent, events: Sequence[Event]) -> RerunReport:
    """``arerun``, blocking: rerun a recorded session (its ``events``) with ``agent``'s recipe,
    the model replaced by the recorded responses and every tool by its recorded result."""
    from tether.runtime.lifecycle.sync import run_sync

    report: RerunReport = run_sync(arerun(agent, events))
    return report
