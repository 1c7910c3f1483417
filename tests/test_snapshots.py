"""A session's history handed out in constant time (issue 50): append-only logs and snapshots.

A model request's messages and a decision's ``Context.effects`` are snapshots of append-only logs
(tether._snapshots), not copies made at every step. What must hold: a snapshot shows forever what
the log held when it was taken, and behaves as the tuple of those items (compares, hashes, adds,
slices, pickles); the log refuses every change but growth at its end; a compaction, or a side
effect taken back, makes a new log, so requests already sent keep showing what they showed; and
the effects a window keeps are still the last ``window`` ones.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import (
    Agent,
    Budget,
    Compaction,
    Message,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether._snapshots import AppendOnlyLog, Snapshot
from tether.errors import WrongType
from tether.policy import Decision, Effect
from tether.policy.base import Action, Context, MadeEffect, Resource, Subject
from tether.runtime.record.state import SessionState
from tether.vocabulary import EventType


def test_the_log_only_grows_at_its_end() -> None:
    log: AppendOnlyLog[int] = AppendOnlyLog([1, 2])
    log.append(3)
    log.extend([4])
    log += [5]
    assert log == [1, 2, 3, 4, 5]
    changes = [lambda: log.__setitem__(0, 9), lambda: log.__setitem__(slice(0, 1), [9]),
               lambda: log.__delitem__(0), lambda: log.insert(0, 9), lambda: log.pop(),
               lambda: log.remove(1), log.clear, log.sort, log.reverse,
               lambda: log.__imul__(2)]
    for change in changes:
        with pytest.raises(WrongType, match="append-only"):
            change()
    assert log == [1, 2, 3, 4, 5]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(), max_size=12), st.integers(0, 14), st.lists(st.integers(),
       max_size=6), st.integers(-16, 16), st.integers(-16, 16))
def test_a_snapshot_is_the_tuple_it_was_taken_as(items: list[int], start: int,
                                                  later: list[int], a: int, b: int) -> None:
    log: AppendOnlyLog[int] = AppendOnlyLog(items)
    start = min(start, len(log))
    snap = log.snapshot(start)
    was = tuple(items[start:])
    log.extend(later)  # what the log gains after it was taken is not in it
    assert snap == was and was == snap and not snap != was  # noqa: SIM202
    assert len(snap) == len(was) and list(snap) == list(was)
    assert hash(snap) == hash(was)
    assert snap[a:b] == was[a:b] and snap[::-1] == was[::-1]
    assert tuple(reversed(snap)) == tuple(reversed(was))
    assert snap + (7,) == was + (7,) and (7,) + snap == (7,) + was  # noqa: RUF005
    assert snap + snap == was + was
    assert repr(snap) == repr(was)
    assert pickle.loads(pickle.dumps(snap)) == was and copy.deepcopy(snap) == was
    assert type(pickle.loads(pickle.dumps(snap))) is tuple
    for at in (a, b):
        if -len(was) <= at < len(was):
            assert snap[at] == was[at]
        else:
            with pytest.raises(IndexError):
                snap[at]
    for item in (*items, *later, 99):
        assert (item in snap) == (item in was)
        assert snap.count(item) == was.count(item)
    assert snap == log.snapshot(start)[:len(was)]
    assert (snap == log.snapshot(start)) == (not later)
    assert snap != [*was]  # a list is not a tuple, nor a snapshot of one


@tool
def read(n: int) -> str:
    """Read item n."""
    return f"item {n}: " + "x" * 300


def _turns(steps: int) -> list[ModelResponse | str]:
    return [ModelResponse(tool_calls=(ToolCall(f"c{i}", "read", {"n": i}),))
            for i in range(steps)] + ["done"]


def test_a_sessions_requests_are_snapshots_of_one_log_each_still_what_was_sent() -> None:
    sent: list[tuple[Any, tuple[Message, ...]]] = []
    script = _turns(6)

    def respond(request: ModelRequest) -> ModelResponse | str:
        sent.append((request.messages, tuple(request.messages)))  # as it is when sent
        return script[sum(m.role == "assistant" for m in request.messages)]

    result = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[read]).run("go")
    assert result.answer == "done" and len(sent) == 7
    assert all(type(messages) is Snapshot for messages, _ in sent)
    assert len({id(messages.source) for messages, _ in sent}) == 1  # no copy: one log
    assert all(messages == then for messages, then in sent)  # later turns changed none
    assert [len(m) for m, _ in sent] == [2 + 2 * i for i in range(7)]


def test_a_compaction_makes_a_new_log_and_the_requests_sent_keep_what_they_showed() -> None:
    sent: list[tuple[Any, tuple[Message, ...]]] = []
    script = _turns(10)

    def respond(request: ModelRequest) -> ModelResponse | str:
        sent.append((request.messages, tuple(request.messages)))
        turn = sum(m.role == "assistant" for m in request.messages)
        note = request.messages[2].content if len(request.messages) > 2 else ""
        if note.startswith("[tether] Turns 1-"):
            turn += int(note.split("-", 1)[1].split(" ", 1)[0])
        return script[turn]

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[read],
                  compaction=Compaction(strategy="drop", context_window=1200))
    session = agent.session("go")
    assert session.run().answer == "done"
    assert any(e.type == "context.compacted" for e in session.replay())
    logs = [messages.source for messages, _ in sent]
    assert len({id(log) for log in logs}) > 1  # each compaction: a new log
    assert all(messages == then for messages, then in sent)


def _started(state: SessionState, n: int) -> None:
    call = f"c{n}"
    state.apply(EventType.TOOL_DECISION, {"call_id": call, "charged": True, "signature": call,
                                          "arguments": {"n": n}})
    state.apply(EventType.TOOL_STARTED, {"call_id": call, "tool": "write"})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([None, 1, 2, 3, 5]),
       st.lists(st.sampled_from(["start", "take back", "restore"]), max_size=40))
def test_the_effects_are_every_one_made_or_the_windows_last(window: int | None,
                                                            ops: list[str]) -> None:
    state = SessionState(window)
    made: list[MadeEffect] = []
    previous: tuple[Any, list[MadeEffect]] | None = None  # before the last start
    for n, op in enumerate(ops):
        before = state.effects
        seen = tuple(before)
        if op == "start":
            previous = (before, list(made))
            _started(state, n)
            made.append(MadeEffect(f"c{n}", "write", {"n": n}))
        elif op == "take back" and state.effects:  # a start the store refused
            state.effects = state.effects[:-1]  # (as chokepoint.halts.unstarted does)
            made.pop()
        elif op == "restore" and previous is not None:  # ... or put back what was before it
            state.effects, made = previous[0], previous[1]
            previous = None
        assert before == seen  # what a decision was given before is what it was
        kept = made if window is None else made[-window:]
        assert state.effects == tuple(kept)
        if window is not None:
            if isinstance(state.effects, Snapshot):  # a window's log stays bounded
                assert len(state.effects.source) <= 2 * window
            del made[:-window]


def test_a_decisions_context_gets_the_effects_without_a_copy() -> None:
    seen: list[Context] = []

    class Watch:
        inline = True

        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            seen.append(context)
            return Decision(Effect.ALLOW, "ok", "watch")

    @tool(side_effect=True)
    def write(n: int) -> str:
        """Write item n."""
        return f"wrote {n}"

    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "write", {"n": i}),)) for i in range(4)]
    agent = Agent(model=ScriptedModel([*script, "done"]), reasoning=ReAct(), tools=[write],
                  policy=Watch())
    assert agent.run("go", budget=Budget(max_steps=10)).answer == "done"
    assert [len(c.effects) for c in seen] == [0, 1, 2, 3]  # each as it was at its decision
    assert [e.arguments for e in seen[-1].effects] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert type(seen[-1].effects) is Snapshot and seen[-1].effects.source is seen[1].effects.source
