"""A session's state as a fold over its journal.

Decision: nothing about a session changes except by appending an event; the live session applies
each event to this projection as it is appended, and ``fold(events)`` rebuilds the same state from
stored events. Handlers take the live form of event data (frozen records); ``fold`` first revives
stored plain-JSON data into that form (``tether.runtime.record.revive``), so both paths run the same
handlers and a resumed or audited session sees exactly what the live one saw: the conversation,
what is still to be sent, spend, call signatures, the open turn's decisions, results and
approvals, and the outcome. The events that charge the session (model calls answered, failed,
lost; summaries; sub-agents) have their handlers in ``tether.runtime.record.charges``.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tether._snapshots import AppendOnlyLog, grown
from tether.errors import InvalidArgument
from tether.journal.chain import canonical_json
from tether.policy.base import MadeEffect
from tether.policy.plan import RequestPlan
from tether.runtime.accounting.accountant import Tally
from tether.runtime.accounting.stop import StopReason
from tether.runtime.provenance.labels import PrivateValues
from tether.runtime.provenance.values import Sighting, SightingLog
from tether.runtime.record import charges
from tether.runtime.record.branch_log import BranchLog
from tether.runtime.record.history import Shown, estimate_new, left_out, opening_turns, put_back
from tether.runtime.record.result import Step, ToolResult
from tether.runtime.record.revive import revive
from tether.types import BRANCH_CALL_PREFIX, PLANNED_CALL_PREFIX, Event, Message, ToolCall
from tether.vocabulary import EventType

ERROR_STATUSES = frozenset({"error", "timeout", "rejected"})
# a named tuple built in C: its generated __new__ is a Python call, on every tool result
_sighting = tuple.__new__


def call_signature(tool: str, arguments: Mapping[str, Any] | str) -> str:
    """Normalised identity of a call: same tool and same arguments, whatever the key order."""
    digest = hashlib.blake2b(canonical_json(arguments).encode(), digest_size=12).hexdigest()
    return f"{tool}:{digest}"


class SessionState:
    """Mutable projection of one session's journal.

    ``window`` bounds what a long-lived session (a gateway: one call per turn, for weeks)
    remembers across turns to its last ``window`` calls: the closed steps, the results
    provenance matches against, and the call signatures the loop check counts — so the loop
    check counts repeats within the window. The open turn's decisions, results and approvals
    are cleared at every turn whatever the window, and approval requests live in the approval
    store, never here. What is forgotten is in the journal, which a replay folds whole."""

    __slots__ = ("_done", "_history", "_outbox", "_recent", "_steps_closed", "answer", "approvals",
                 "branches", "compacted_ids", "conversation", "counted", "decisions",
                 "denial_streak", "effects", "error_streak", "granted", "in_flight",
                 "may_have_approvals", "notice", "opening", "output", "output_invalid", "paused",
                 "plan", "planned", "planning", "private", "ran", "results", "settled", "shown",
                 "shown_history", "signatures", "started", "steps", "stop_detail", "stop_reason",
                 "strategy_log", "tainted", "tally", "task", "turn", "turn_from_model",
                 "turn_open", "turn_step", "turn_text", "unsent", "window")

    def __init__(self, window: int | None = None) -> None:
        if window is not None and window < 1:
            raise InvalidArgument("window must be at least 1 call, or None (no bound); got "
                                  f"{window}")
        self.window = window
        self.task = ""
        self.conversation: AppendOnlyLog[Message] = AppendOnlyLog()  # snapshots in O(1)
        self.unsent: list[Message] = []  # written but not yet sent to the model
        self.tally = Tally()
        self.signatures: dict[str, int] = {}
        self.steps: list[Step] = []
        # the open turn: the last response's tool calls and what became of each
        self.turn: tuple[ToolCall, ...] = ()
        self.turn_text = ""
        self.turn_step = 0
        self.turn_open = False
        self.turn_from_model = False  # whether the open turn is a model's answer
        self.results: dict[str, ToolResult] = {}
        # every result of a tool that ran, the whole session long (with a window: the last
        # ones), with what a side-effecting call wrote: what provenance matches arguments
        # against (tether.runtime.provenance.values)
        self.ran = SightingLog()
        self.decisions: dict[str, Mapping[str, Any]] = {}  # call id -> its last decision event
        self.approvals: dict[str, str] = {}  # call id -> approval id
        self.granted: set[str] = set()  # call ids whose approval was used to run them
        self.started: set[str] = set()  # call ids of side-effecting calls that began to run
        self.plan: RequestPlan | None = None  # what the request asks for (session.start)
        # the planner's last event (tether.runtime.lifecycle.planning): its type and data; None:
        # none
        self.planning: tuple[str, Mapping[str, Any]] | None = None
        self.private = PrivateValues()  # private data the session read (provenance.labels)
        # every side effect made, in order (a window keeps the last ``window``); a snapshot
        self.effects: Sequence[MadeEffect] = ()
        self.settled: dict[str, Mapping[str, Any]] = {}  # call id -> an operator's decision
        self.error_streak = 0  # failed tool calls in a row, in call order, before this turn
        self.denial_streak = 0  # refused tool calls in a row, in call order, before this turn
        self.stop_reason: StopReason | None = None
        self.stop_detail = ""
        self.answer: str | None = None
        self.notice = ""  # tether's own words on a run that stopped or paused, not the model's
        self.tainted = False  # set once any untrusted tool output entered the conversation
        self.paused = False
        # whether the approval store may hold a request of this session: one was journaled, or
        # the session resumed (a crash between a request's row and its event leaves the row)
        self.may_have_approvals = False
        self.in_flight: Mapping[str, Any] | None = None  # a model request with no answer yet
        # the provider's own count of the last call's input, when it reported one, and where
        # that call's answer sits in the conversation: what came before it needs no estimate
        self.counted: tuple[int, int] | None = None
        # the answer validated as the recipe's output type, as journaled JSON (None: none yet),
        # and how many answers did not validate (tether.runtime.chokepoint.output)
        self.output: Any = None
        self.output_invalid = 0
        # the ids of the calls a compaction took out of the conversation: still used, so a
        # resumed chokepoint gives a model that repeats one another (context.compactor)
        self.compacted_ids: set[str] = set()
        # what the strategy journaled and was answered, in order — ("note", (kind, data)),
        # ("calls", (reason, calls)) for its planned calls, ("turn", (text, calls)) for each of
        # the model's answers in the conversation — and the results of those calls (by call id):
        # what a strategy that resumes continues from (``Handle.history``)
        self.strategy_log: list[tuple[str, Any]] = []
        self.planned: dict[str, ToolResult] = {}
        # what the session opened with (system prompt, thread, task): a branch's context starts
        # there; and what explored branches asked and ran, apart from the conversation
        self.opening: tuple[Message, ...] = ()
        self.shown: Sequence[Mapping[str, Any]] = ()  # the thread's turns a start names
        self.shown_history: Shown | None = None  # ... as messages (and estimate), if made
        self._history: tuple[Message, ...] = ()  # (tether.runtime.record.history)
        self.branches = BranchLog()
        # derived views, read several times per step: kept up to date by the handlers
        self._done: list[ToolResult] = []  # the open turn's results, in call order
        self._outbox: tuple[Message, ...] | None = None  # None: build it again when read
        self._steps_closed = 0  # how many steps closed, remembered or not
        self._recent: deque[str] = deque()  # with a window: its calls' signatures, in order

    def apply(self, type: str, data: Mapping[str, Any]) -> None:
        handler = _HANDLERS.get(type)
        if handler is not None:
            handler(self, data)

    # -- derived views ------------------------------------------------------------------------

    def outbox(self) -> tuple[Message, ...]:
        """What the next model request adds: unsent notes, then the open turn's tool results
        in the order the model asked for the calls. The same object until it changes."""
        if self._outbox is None:
            tools = [Message.tool(r.call_id, r.name, r.content)
                     for r in self._done] if self.turn_open else ()
            self._outbox = (*self.unsent, *tools)
        return self._outbox

    def unresolved(self) -> list[ToolCall]:
        """Calls of the open turn that have no result yet."""
        if not self.turn_open or len(self._done) == len(self.turn):
            return []
        return [c for c in self.turn if c.id not in self.results]

    def streaks(self) -> tuple[int, int]:
        """Failed and refused calls in a row, in call order, through the open turn."""
        errors, denials = self.error_streak, self.denial_streak
        for r in self._done:
            errors = errors + 1 if r.status in ERROR_STATUSES else 0
            denials = denials + 1 if r.status == "denied" else 0
        return errors, denials

    def trajectory_steps(self) -> tuple[Step, ...]:
        """Every step so far, the current one included as it stands."""
        if not self.turn_step:
            return tuple(self.steps)
        return (*self.steps, self._current_step())

    def _current_step(self) -> Step:
        return Step(self.turn_step, self.turn_text, self.turn, tuple(self._done))

    def _close_step(self) -> None:
        if self.turn_step:
            self.steps.append(self._current_step())
            self._steps_closed += 1
            self.turn_step = 0
            if self.window is not None:
                self._forget(self.window)

    def _forget(self, window: int) -> None:
        """Drop what lies beyond the window, half a window at a time (so each drop is paid
        for by as many calls as it drops)."""
        if len(self.steps) > window + window // 2:
            del self.steps[:len(self.steps) - window]
        if len(self.ran) > window + window // 2:
            self.ran.forget(len(self.ran) - window)

    # -- handlers, one per event type that changes state --------------------------------------

    def _on_start(self, data: Mapping[str, Any]) -> None:
        self.task = data["task"]
        self.plan = RequestPlan.from_dict(data["plan"]) if data.get("plan") else None
        history, tainted, self._history = opening_turns(data.get("thread"), self.shown,
                                                          self.shown_history)
        self.tainted = self.tainted or tainted
        self.unsent = [Message.system(data["system_prompt"]), *history, Message.user(data["task"])]
        self.opening = tuple(self.unsent)
        self._outbox = None

    def journaled(self, new: Sequence[Message]) -> tuple[Sequence[Message], int]:
        return left_out(new, self._history)  # as a request journals it (record.history)

    def estimated(self, new: Sequence[Message], estimate: Callable[[Message], int]) -> int:
        """``new``'s tokens, the history at the estimate its start remembered (record.history)"""
        return estimate_new(new, self._history, self.shown_history, estimate)

    def _sent(self, data: Mapping[str, Any], key: str) -> list[Message]:
        self._history, history = (), self._history
        return put_back(data[key], data.get("history"), history)

    def _on_request(self, data: Mapping[str, Any]) -> None:
        if self.turn_open:
            self.error_streak, self.denial_streak = self.streaks()
            self.turn_open = False
        self.conversation.extend(self._sent(data, "new") if self._history else data["new"])
        self.unsent = []
        self._outbox = None
        self.in_flight = data

    def _on_response(self, data: Mapping[str, Any]) -> None:
        r = charges.answered(self, data)
        self.conversation.append(Message.assistant(r.text, r.tool_calls))
        t = self.tally
        reported = not r.usage.estimated and r.usage.input_tokens > 0
        self.counted = (r.usage.input_tokens, len(self.conversation) - 1) if reported else None
        self.strategy_log.append(("turn", (r.text, r.tool_calls)))
        self._open_turn(r.tool_calls, r.text, t.steps)
        self.turn_from_model = True

    def _on_branch_request(self, data: Mapping[str, Any]) -> None:
        """A model call on an explored branch (``Handle.ask_branch``): in flight until answered,
        so a crash or an interruption during it charges its reservation; never in the
        conversation."""
        self.in_flight = data
        self.branches.on_request(data)

    def _on_branch_response(self, data: Mapping[str, Any]) -> None:
        """A branch call's answer: charged and counted as a step like any model turn; kept for
        a resumed search, out of the conversation."""
        charges.answered(self, data)
        self.branches.on_response(data)

    def _open_turn(self, calls: tuple[ToolCall, ...], text: str, step: int) -> None:
        self._close_step()
        self.turn, self.turn_text, self.turn_step = calls, text, step
        self.turn_open = bool(calls)
        self.turn_from_model = False  # set by a model's response (not a client's or plan's call)
        self.results, self.decisions, self.approvals = {}, {}, {}
        self.granted, self.started, self.settled = set(), set(), {}
        self._done, self._outbox = [], None

    def _on_client_call(self, data: Mapping[str, Any]) -> None:
        """A tool call made through a gateway (an MCP client), not asked for by a model."""
        call: ToolCall = data["call"]
        self._open_turn((call,), "", self._steps_closed + 1)

    def _on_planned(self, data: Mapping[str, Any]) -> None:
        """A strategy's calls from its own validated plan (``Handle.call_planned``): the open
        turn's results and unsent notes go into the conversation first, then an assistant
        message carrying the calls, so the provider sees each call before its result."""
        if self.turn_open:
            self.error_streak, self.denial_streak = self.streaks()
            self.turn_open = False
        calls: tuple[ToolCall, ...] = data["calls"]
        self.conversation.extend(self._sent(data, "flushed") if self._history
                                 else data["flushed"])
        self.conversation.append(Message.assistant("", calls))
        self.unsent = []
        self.strategy_log.append(("calls", (data["reason"], calls)))
        self._open_turn(calls, "", self._steps_closed + 1)

    def _on_strategy_note(self, data: Mapping[str, Any]) -> None:
        self.strategy_log.append(("note", (data["kind"], data["data"])))

    def _on_note(self, data: Mapping[str, Any]) -> None:
        self.unsent.append(Message.user(data["text"]))
        self._outbox = None

    def _on_decision(self, data: Mapping[str, Any]) -> None:
        if data["charged"]:
            self.tally.tool_calls += 1
        self.decisions[data["call_id"]] = data
        if data["call_id"].startswith(BRANCH_CALL_PREFIX):
            return  # an explored branch is its own trajectory: not a repeat of the session's
        sig = data["signature"]
        signatures = self.signatures
        signatures[sig] = signatures.get(sig, 0) + 1
        if self.window is not None:
            recent = self._recent
            recent.append(sig)
            if len(recent) > self.window:
                old = recent.popleft()
                if signatures[old] == 1:
                    del signatures[old]
                else:
                    signatures[old] -= 1

    def _on_approval_requested(self, data: Mapping[str, Any]) -> None:
        self.approvals[data["call_id"]] = data["approval_id"]
        self.may_have_approvals = True

    def _on_approval_granted(self, data: Mapping[str, Any]) -> None:
        self.granted.add(data["call_id"])
        if data["charged"]:
            self.tally.tool_calls += 1

    def _on_started(self, data: Mapping[str, Any]) -> None:
        self.started.add(data["call_id"])
        decided = self.decisions.get(data["call_id"])
        if decided is not None:
            self.effects = grown(self.effects, MadeEffect(
                data["call_id"], data["tool"], decided.get("arguments") or {}), self.window)
        # an operator's retry is used up by the run it allows: interrupted again, it waits again
        self.settled.pop(data["call_id"], None)

    def _on_settled(self, data: Mapping[str, Any]) -> None:
        self.settled[data["call_id"]] = data

    def _on_result(self, data: Mapping[str, Any]) -> None:
        if data.get("untrusted"):
            self.tainted = True
        results = self.results
        result = results[data["call_id"]] = ToolResult(data["call_id"], data["tool"],
                                                       data["content"], data["status"])
        if data["call_id"].startswith(BRANCH_CALL_PREFIX):
            self.branches.on_result(result)
        elif data["call_id"].startswith(PLANNED_CALL_PREFIX) or self.turn_from_model:
            # a planned call's or a model turn's (``Handle.history``); a gateway's client calls
            # are no strategy's, and keeping them would grow a long-lived gateway without end
            self.planned[data["call_id"]] = result
        if data.get("private"):
            self.private.add(data["content"], data["private"])
        if data["status"] in ("ok", "error", "timeout"):
            call_id = data["call_id"]
            sent = self.decisions[call_id].get("arguments") if call_id in self.started else None
            self.ran.append(_sighting(Sighting, (bool(data.get("untrusted")), data["content"],
                                                 tuple(data.get("trusted_fields", ())), sent)))
        self._done = [results[c.id] for c in self.turn if c.id in results]
        self._outbox = None

    def _on_compacted(self, data: Mapping[str, Any]) -> None:
        """Turns replaced by a summary or a note: what every later request is sent."""
        start, end = data["start"], data["end"]
        self.compacted_ids.update(c.id for m in self.conversation[start:end] for c in m.tool_calls)
        old = self.conversation  # a new log: the requests already sent keep what they showed
        self.conversation = AppendOnlyLog((*old[:start], *data["replacement"], *old[end:]))
        self.counted = None  # the provider counted a conversation that is no longer sent

    def _on_plan_amended(self, data: Mapping[str, Any]) -> None:
        """The plan widened by the planner's validated reading: what every later decision
        reads (``Context.plan``)."""
        self.planning = (EventType.PLAN_AMENDED, data)
        self.plan = RequestPlan.from_dict(data["plan"])

    def _on_output_valid(self, data: Mapping[str, Any]) -> None:
        self.output = data["output"]

    def _on_output_invalid(self, data: Mapping[str, Any]) -> None:
        self.output_invalid = data["attempt"]

    def _on_paused(self, data: Mapping[str, Any]) -> None:
        self.paused = True
        self.tally.active_seconds += data["active_seconds"]
        self.stop_reason = StopReason(data["reason"])
        self.stop_detail = data["detail"]
        self.answer, self.notice = _answer_and_notice(data)

    def _on_resumed(self, data: Mapping[str, Any]) -> None:
        self.paused = False
        self.may_have_approvals = True
        self.stop_reason = None

    def _on_end(self, data: Mapping[str, Any]) -> None:
        self._close_step()
        self.stop_reason = StopReason(data["reason"])
        self.stop_detail = data["detail"]
        self.answer, self.notice = _answer_and_notice(data)


def _answer_and_notice(data: Mapping[str, Any]) -> tuple[str, str]:
    """The model's answer and tether's notice from an end or pause. Journals written before the
    two had fields of their own kept tether's notice in ``answer``, always starting
    ``[tether]``: read back, it is a notice."""
    answer: str = data["answer"]
    if "notice" in data:
        return answer, data["notice"]
    if answer.startswith("[tether] "):
        return "", answer
    return answer, ""


_HANDLERS: dict[str, Callable[[SessionState, Mapping[str, Any]], None]] = {
    EventType.SESSION_START: SessionState._on_start,
    EventType.MODEL_REQUEST: SessionState._on_request,
    EventType.MODEL_RESPONSE: SessionState._on_response,
    EventType.MODEL_ERROR: charges.failed,
    EventType.MODEL_LOST: charges.lost,
    EventType.MODEL_UNMETERED: charges.lost,
    EventType.CLIENT_CALL: SessionState._on_client_call,
    EventType.STRATEGY_CALLS: SessionState._on_planned,
    EventType.STRATEGY_NOTE: SessionState._on_strategy_note,
    EventType.BRANCH_REQUEST: SessionState._on_branch_request,
    EventType.BRANCH_RESPONSE: SessionState._on_branch_response,
    EventType.BRANCH_SIMULATED: lambda state, data: state.branches.on_simulated(data),
    EventType.SESSION_NOTE: SessionState._on_note,
    EventType.TOOL_DECISION: SessionState._on_decision,
    EventType.APPROVAL_REQUESTED: SessionState._on_approval_requested,
    EventType.APPROVAL_GRANTED: SessionState._on_approval_granted,
    EventType.TOOL_STARTED: SessionState._on_started,
    EventType.SUBAGENT_CHARGE: charges.subagent,
    EventType.EFFECT_SETTLED: SessionState._on_settled,
    EventType.TOOL_RESULT: SessionState._on_result,
    EventType.COMPACTION_REQUEST: charges.summary_asked,
    EventType.COMPACTION_RESPONSE: charges.summary_charged,
    EventType.COMPACTION_ERROR: charges.summary_charged,
    EventType.CONTEXT_COMPACTED: SessionState._on_compacted,
    EventType.PLAN_REQUEST: charges.plan_asked,
    EventType.PLAN_RESPONSE: charges.plan_charged,
    EventType.PLAN_ERROR: charges.plan_failed,
    EventType.PLAN_AMENDED: SessionState._on_plan_amended,
    EventType.SAMPLING_REQUEST: charges.sampling_sent,
    EventType.SAMPLING_RESPONSE: charges.sampled,
    EventType.SAMPLING_ERROR: charges.sampled,
    EventType.OUTPUT_VALID: SessionState._on_output_valid,
    EventType.OUTPUT_INVALID: SessionState._on_output_invalid,
    EventType.SESSION_PAUSED: SessionState._on_paused,
    EventType.SESSION_RESUMED: SessionState._on_resumed,
    EventType.SESSION_END: SessionState._on_end,
}


def fold(events: Iterable[Event], shown: Sequence[Mapping[str, Any]] = ()) -> SessionState:
    """A session's state rebuilt from its stored events (and the thread turns its start names,
    ``shown``): the same state the live session built as it appended them."""
    state = SessionState()
    state.shown = shown
    for event in events:
        state.apply(event.type, revive(event.type, event.data))
    return state
