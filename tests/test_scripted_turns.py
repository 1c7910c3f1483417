"""The ScriptedModel's turn, counted fast, is the turn a full count finds (issue 50).

The model remembers how far it counted each conversation log a request was a snapshot of, and
counts only what is new (tether.models.scripted). That memory may change how long an answer
takes, never which answer: for any sequence of requests — snapshots of several logs, taken now or
earlier, from the start or not, tuples, logs rewritten (a compaction), logs dropped and their
ids reused — the answer is the one the full count of the request gives.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import Agent, Budget, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether._snapshots import AppendOnlyLog, Snapshot
from tether.models import scripted
from tether.models.base import COMPACTED, compacted_turns
from tether.types import PLANNED_CALL_PREFIX, Message, ModelRequest, is_planned_turn

SCRIPT = 400  # more turns than any request below holds


def full_count(messages: Any) -> int:
    """The turn as the ScriptedModel counted it before it remembered anything (issue 50)."""
    roles = [m.role for m in messages]
    turn = roles.count("assistant")
    if turn:
        turn -= sum(map(is_planned_turn, messages))
    if len(messages) > 2 and messages[2].role == "user":
        turn += compacted_turns(messages[2])
    return turn


def message(kind: int, n: int) -> Message:
    call = ToolCall(f"c{n}", "t", {})
    planned = ToolCall(f"{PLANNED_CALL_PREFIX}{n}", "t", {})
    return (
        Message.system("s"),
        Message.user("u"),
        Message.user(f"{COMPACTED}{n % 5} were left out"),
        Message.assistant(f"a{n}"),
        Message.assistant("", (call,)),
        Message.assistant("", (planned,)),  # a strategy's planned calls: no model turn
        Message.assistant("said", (planned,)),  # ... with words: a model's
        Message.assistant("", (planned, call)),
        Message.tool(f"c{n}", "t", "r"),
    )[kind]


def answered(model: ScriptedModel, messages: Any,
             loop: asyncio.AbstractEventLoop | None = None) -> int:
    asked = model.complete(ModelRequest(messages))
    response = asyncio.run(asked) if loop is None else loop.run_until_complete(asked)
    return SCRIPT if response.text == "past" else int(response.text[1:])


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 2), st.lists(st.integers(0, 8), max_size=6)),
    st.tuples(st.just("ask"), st.integers(0, 2), st.sampled_from(
        ["now", "older", "tuple", "from", "other"]), st.integers(0, 50)),
    st.tuples(st.just("rewrite"), st.integers(0, 2), st.integers(0, 8), st.integers(0, 8)),
    st.tuples(st.just("drop"), st.integers(0, 2)),
), max_size=60)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_the_remembered_count_answers_as_the_full_count(ops: list[tuple[Any, ...]]) -> None:
    loop = asyncio.new_event_loop()
    try:
        replay(ops, loop)
    finally:
        loop.close()


def replay(ops: list[tuple[Any, ...]], loop: asyncio.AbstractEventLoop) -> None:
    """Run ``ops`` against one model; every answer must be the full count's."""
    model = ScriptedModel([f"t{i}" for i in range(SCRIPT)], when_exhausted="past")
    logs: list[AppendOnlyLog[Message]] = [AppendOnlyLog() for _ in range(3)]
    taken: list[Snapshot[Message]] = []  # snapshots sent earlier, of any log
    serial = 0
    for op in ops:
        log = logs[op[1]]
        if op[0] == "append":
            for kind in op[2]:
                serial += 1
                log.append(message(kind, serial))
        elif op[0] == "ask":
            how, pick = op[2], op[3]
            if how == "now":
                sent: Any = log.snapshot()
            elif how == "older" and taken:
                sent = taken[pick % len(taken)]
            elif how == "from":  # not from the start
                sent = log.snapshot(min(pick % 4, len(log)))
            elif how == "other" and taken:  # an older snapshot's log, as it is now
                sent = taken[pick % len(taken)].source.snapshot()
            else:
                sent = tuple(log)
            if isinstance(sent, Snapshot):
                taken.append(sent)
            assert answered(model, sent, loop) == min(full_count(sent), SCRIPT), (how, sent)
        elif op[0] == "rewrite":  # a compaction: a new log, some turns replaced by a note
            start, end = sorted((op[2] % (len(log) + 1), op[3] % (len(log) + 1)))
            logs[op[1]] = AppendOnlyLog((*log[:start], message(2, end), *log[end:]))
        else:  # the log is let go (freed at once unless a snapshot holds it): its id may be
            logs[op[1]] = AppendOnlyLog()  # another's next
            del log


def test_an_older_snapshot_of_a_log_is_counted_whole() -> None:
    model = ScriptedModel([f"t{i}" for i in range(10)])
    log: AppendOnlyLog[Message] = AppendOnlyLog([Message.system("s"), Message.user("u")])
    early = log.snapshot()
    log.extend([Message.assistant("a"), Message.user("n"), Message.assistant("b")])
    assert answered(model, log.snapshot()) == 2
    assert answered(model, early) == 0  # counted up to 2 turns; this one holds none
    assert answered(model, log.snapshot(2)) == 2  # from another start: counted whole


def test_what_the_model_remembers_goes_with_the_log() -> None:
    model = ScriptedModel(["t0", "t1"])
    log: AppendOnlyLog[Message] = AppendOnlyLog([Message.system("s"), Message.user("u")])
    assert answered(model, log.snapshot()) == 0
    assert len(model._places) == 1
    del log
    gc.collect()
    assert model._places == {}


def test_a_long_session_counts_each_message_once(monkeypatch: Any) -> None:
    """The work of finding a turn does not grow with the session: a 300-step session counts
    each message of its conversation about once, not once per later step."""
    counted = []
    full = scripted.model_turns

    def counting(messages: Any) -> int:
        counted.append(len(messages))
        return full(messages)

    monkeypatch.setattr(scripted, "model_turns", counting)

    @tool
    def read(n: int) -> str:
        """Read item n."""
        return f"item {n}"

    steps = 300
    turns: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "read", {"n": i}),)) for i in range(steps)]
    agent = Agent(model=ScriptedModel([*turns, "done"]), reasoning=ReAct(), tools=[read])
    result = agent.run("go", budget=Budget(max_steps=steps + 5))
    assert result.stop_reason == "finished" and len(result.trajectory.steps) == steps + 1
    assert len(counted) == steps + 1
    assert sum(counted) <= 2 * (2 * steps + 2)  # the conversation's messages, about once each


def test_a_log_at_the_id_of_a_gone_one_is_counted_whole() -> None:
    model = ScriptedModel([f"t{i}" for i in range(10)])
    opening = (Message.system("s"), Message.user("u"))
    gone: AppendOnlyLog[Message] = AppendOnlyLog((*opening, *(Message.assistant("a"),) * 3))
    assert answered(model, gone.snapshot()) == 3
    address = id(gone)
    del gone
    made = [AppendOnlyLog(opening) for _ in range(1000)]  # one of them where it was
    (log,) = [log for log in made if id(log) == address]
    log.extend([Message.user("x")] * 4)
    assert answered(model, log.snapshot()) == 0


def test_a_responders_unnamed_calls_are_named_by_the_turn_a_full_count_finds() -> None:
    """A responder's answer does not depend on the turn, so the model counts turns only to
    name the calls it gives without an id: ``call_<turn>_<n>``, the turn of the full count, on
    a thread's continuation too (its history's answers are model turns)."""
    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return "kept"

    def respond(request: ModelRequest) -> ModelResponse | str:
        if sum(m.role == "tool" for m in request.messages) < 4:  # two turns of two calls
            return ModelResponse(tool_calls=(ToolCall("", "note", {"text": "x"}),
                                             ToolCall("", "note", {"text": "y"})))
        return "done"

    model = ScriptedModel(respond)
    requests: list[ModelRequest] = []
    original = model.complete

    async def seen(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return await original(request)

    model.complete = seen  # type: ignore[method-assign]
    agent = Agent(model=model, reasoning=ReAct(), tools=[note])
    result = agent.run("take notes")
    assert result.answer == "done"
    ids = [c.id for m in requests[-1].messages for c in m.tool_calls]
    turns = [full_count(r.messages) + 1 for r in requests[:2]]
    assert turns == [1, 2]
    assert ids == [f"call_{t}_{n}" for t in turns for n in (1, 2)]
