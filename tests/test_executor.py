"""Tool execution through whole runs: the gates, failures, truncation, the tool-error ceiling,
timeouts, concurrency of read-only calls, ordering of side-effecting ones, loop detection."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from tether import (
    Agent,
    Budget,
    Limits,
    ModelRequest,
    ModelResponse,
    ReAct,
    Result,
    ScriptedModel,
    StopReason,
    ToolCall,
    tool,
)
from tether.runtime.chokepoint.executor import Rejected, ToolExecutor
from tether.tools import Calculator, ToolArgumentError, ToolContext, ToolMeta, ToolRegistry
from tether.types import Event, ToolSpec


def turn(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=calls)


def make_agent(tools: list[Any], script: Any, **kwargs: Any) -> Agent:
    when_exhausted = kwargs.pop("when_exhausted", None)
    model = ScriptedModel(script, when_exhausted=when_exhausted)
    return Agent(model=model, reasoning=ReAct(), tools=tools, **kwargs)


def events_of(session_events: list[Event], kind: str) -> list[Mapping[str, Any]]:
    return [e.data for e in session_events if e.type == kind]


def journal(agent: Agent, task: str = "task", **kwargs: Any) -> tuple[Result, list[Event]]:
    session = agent.session(task, **kwargs)
    result = session.run()
    assert session.verify() is None
    return result, session.replay()


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@tool
def count(n: int) -> str:
    """Return n."""
    return str(n)


# -- gate: unknown tool ---


def test_unknown_tool_lists_the_visible_tools_and_the_run_goes_on() -> None:
    agent = make_agent([echo, Calculator()], [
        turn(ToolCall("c1", "delete_everything", {})),
        turn(ToolCall("c2", "echo", {"text": "hi"})),
        "done"])
    result, events = journal(agent)
    assert result.stop_reason is StopReason.FINISHED
    assert result.answer == "done"
    bad = result.trajectory.steps[0].results[0]
    assert bad.status == "rejected"
    assert bad.call_id == "c1"
    assert "unknown tool 'delete_everything'" in bad.content
    assert "Available tools: echo, calculator." in bad.content
    good = result.trajectory.steps[1].results[0]
    assert (good.status, good.content) == ("ok", "echo: hi")
    # the unknown call never reached the policy gate
    assert [d["call_id"] for d in events_of(events, "tool.decision")] == ["c2"]
    assert [r["status"] for r in events_of(events, "tool.result")] == ["rejected", "ok"]


def test_unknown_tool_with_no_tools_says_none() -> None:
    executor = ToolExecutor(ToolRegistry())
    with pytest.raises(Rejected) as err:
        executor.resolve(ToolCall("c1", "anything", {}))
    assert "Available tools: (none)." in err.value.result.content
    assert err.value.result.status == "rejected"


# -- gate: malformed JSON ---


@pytest.mark.parametrize("raw", ['{"text": "hi"', '["hi"]', '"hi"', "text=hi", "null"])
def test_malformed_json_shows_what_arrived(raw: str) -> None:
    ran: list[str] = []

    @tool
    def say(text: str) -> str:
        """Say it."""
        ran.append(text)
        return text

    call = ToolCall.from_json("c1", "say", raw)
    assert call.arguments == raw  # kept as the raw text, never guessed
    agent = make_agent([say], [turn(call), "done"])
    result, events = journal(agent)
    assert result.stop_reason is StopReason.FINISHED
    (r,) = result.trajectory.steps[0].results
    assert r.status == "rejected"
    assert "not a JSON object" in r.content
    assert f"Received: {raw!r}." in r.content
    assert "Send the arguments as a JSON object" in r.content
    assert ran == []
    assert events_of(events, "tool.decision") == []


def test_malformed_json_that_is_long_is_shown_cut() -> None:
    raw = '{"text": "' + "a" * 1000
    agent = make_agent([echo], [turn(ToolCall.from_json("c1", "echo", raw)), "done"])
    content = agent.run("task").trajectory.steps[0].results[0].content
    assert repr(raw[:200]) + "…" in content
    assert "a" * 250 not in content


def test_empty_argument_text_means_no_arguments() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    agent = make_agent([now], [turn(ToolCall.from_json("c1", "now", "  ")), "done"])
    (r,) = agent.run("task").trajectory.steps[0].results
    assert (r.status, r.content) == ("ok", "noon")


# -- gate: schema ---


@pytest.mark.parametrize(("arguments", "field"), [
    ({"n": "many"}, "n"),
    ({}, "n"),
    ({"n": 1, "m": 2}, "m"),
    ({"n": [1]}, "n"),
])
def test_schema_mismatch_names_the_field_and_does_not_run(arguments: dict[str, Any],
                                                          field: str) -> None:
    ran: list[int] = []

    @tool
    def square(n: int) -> int:
        """Square n."""
        ran.append(n)
        return n * n

    agent = make_agent([square], [turn(ToolCall("c1", "square", arguments)),
                                  turn(ToolCall("c2", "square", {"n": 3})), "done"])
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    bad = result.trajectory.steps[0].results[0]
    assert bad.status == "rejected"
    assert f"invalid arguments for 'square': field {field!r}" in bad.content
    assert "Fix that field and call again." in bad.content
    assert result.trajectory.steps[1].results[0].content == "9"
    assert ran == [3]


def test_extra_key_is_rejected_even_when_the_rest_is_valid() -> None:
    ran: list[str] = []

    @tool
    def send(to: str, body: str) -> str:
        """Send a message."""
        ran.append(to)
        return "sent"

    agent = make_agent([send], [
        turn(ToolCall("c1", "send", {"to": "bob", "body": "hi", "bcc": "eve"})), "done"])
    (r,) = agent.run("task").trajectory.steps[0].results
    assert r.status == "rejected"
    assert "field 'bcc'" in r.content
    assert ran == []


class CustomTool:
    """A hand-written tool whose own validate() fails with something unexpected."""

    name = "custom"
    meta = ToolMeta()
    spec = ToolSpec("custom", "A custom tool.", {"type": "object", "properties": {}})

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if "x" in arguments:
            raise ToolArgumentError("x", "x must be even")
        raise KeyError("validator bug")

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return "ran"


def test_a_tool_validator_that_crashes_gives_a_result_not_a_crash() -> None:
    agent = make_agent([CustomTool()], [
        turn(ToolCall("c1", "custom", {"x": 1}), ToolCall("c2", "custom", {})), "done"])
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    r1, r2 = result.trajectory.steps[0].results
    assert r1.status == r2.status == "rejected"
    assert "field 'x'" in r1.content
    assert "x must be even" in r1.content
    assert "KeyError" in r2.content


# -- every call gets a result, in order ---


def scenario_tools() -> list[Any]:
    @tool
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    return [echo, count, fail]


def mixed_turn() -> ModelResponse:
    return turn(
        ToolCall("c1", "echo", {"text": "one"}),
        ToolCall("c2", "nope", {}),
        ToolCall.from_json("c3", "echo", "{broken"),
        ToolCall("c4", "count", {"n": "x"}),
        ToolCall("c5", "count", {"n": 5}),
        ToolCall("c6", "fail", {}),
    )


EXPECTED = [("c1", "ok"), ("c2", "rejected"), ("c3", "rejected"), ("c4", "rejected"),
            ("c5", "ok"), ("c6", "error")]


def test_every_call_in_a_turn_gets_one_result_in_order_in_the_conversation() -> None:
    requests: list[ModelRequest] = []

    def respond(request: ModelRequest) -> ModelResponse | str:
        requests.append(request)
        return mixed_turn() if len(requests) == 1 else "done"

    agent = make_agent(scenario_tools(), respond)
    result, events = journal(agent)
    assert result.stop_reason is StopReason.FINISHED
    assert len(requests) == 2
    tool_messages = [m for m in requests[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == [c for c, _ in EXPECTED]
    assert tool_messages[0].content == "echo: one"
    assert tool_messages[4].content == "5"
    assert "kaput" in tool_messages[5].content
    # the tool messages directly follow the assistant turn that asked for them
    roles = [m.role for m in requests[1].messages]
    assert roles == ["system", "user", "assistant"] + ["tool"] * 6
    # exactly one journaled result per call, and the trajectory holds them all
    journaled = sorted((d["call_id"], d["status"]) for d in events_of(events, "tool.result"))
    assert journaled == EXPECTED
    got = sorted((r.call_id, r.status) for r in result.trajectory.steps[0].results)
    assert got == EXPECTED


def test_trajectory_and_the_next_request_list_results_in_call_order() -> None:
    # The journal records results in the order they happened (a rejected call is known before
    # a batched read-only one has run); the trajectory and what the model is sent next follow
    # the order in which the model asked for the calls.
    agent = make_agent(scenario_tools(), [mixed_turn(), "done"])
    result, events = journal(agent)
    assert [(r.call_id, r.status) for r in result.trajectory.steps[0].results] == EXPECTED
    sent = events_of(events, "model.request")[1]["new"]
    assert [m["tool_call_id"] for m in sent] == [call_id for call_id, _ in EXPECTED]


def test_error_ceiling_counts_failures_in_call_order() -> None:
    agent = make_agent([echo], [
        turn(ToolCall("c1", "echo", {"text": "a"}), ToolCall("c2", "nope", {}),
             ToolCall("c3", "nope", {})), "stopped"],
        limits=Limits(tool_error_ceiling=2))
    assert agent.run("task").stop_reason is StopReason.TOOL_ERROR_CEILING


# -- failures inside a tool ---


def raising_tools() -> list[Any]:
    @tool
    def sync_boom(x: int) -> str:
        """Fails."""
        raise ValueError(f"bad input {x}")

    @tool
    async def async_boom(x: int) -> str:
        """Fails."""
        await asyncio.sleep(0)
        raise ValueError(f"bad input {x}")

    return [sync_boom, async_boom]


@pytest.mark.parametrize("name", ["sync_boom", "async_boom"])
def test_tool_exception_becomes_an_error_result(name: str) -> None:
    agent = make_agent(raising_tools(), [turn(ToolCall("c1", name, {"x": 7})), "recovered"])
    result, events = journal(agent)
    assert result.stop_reason is StopReason.FINISHED
    assert result.answer == "recovered"
    (r,) = result.trajectory.steps[0].results
    assert r.status == "error"
    assert r.content == f"Error: {name!r} failed: ValueError: bad input 7"
    assert events_of(events, "tool.result")[0]["status"] == "error"


@pytest.mark.parametrize("is_async", [False, True])
def test_a_tools_own_timeout_error_is_an_error_not_a_timeout(is_async: bool) -> None:
    def raise_it() -> str:
        raise TimeoutError("upstream did not answer")

    async def araise_it() -> str:
        raise TimeoutError("upstream did not answer")

    fn = araise_it if is_async else raise_it
    fn.__doc__ = "Calls upstream."
    upstream = tool(name="upstream", timeout=30)(fn)
    agent = make_agent([upstream], [turn(ToolCall("c1", "upstream", {})), "done"],
                       budget=Budget(max_seconds=10))
    start = time.monotonic()
    result = agent.run("task")
    assert time.monotonic() - start < 1
    (r,) = result.trajectory.steps[0].results
    assert r.status == "error"
    assert "upstream did not answer" in r.content
    assert "timed out after" not in r.content
    # the tool's own error is not the time budget running out
    assert result.stop_reason is StopReason.FINISHED


def test_sync_tool_raising_stop_iteration_fails_promptly() -> None:
    @tool(timeout=5)
    def first(items: list[int]) -> int:
        """First item."""
        return next(iter(items))

    agent = make_agent([first], [turn(ToolCall("c1", "first", {"items": []})), "done"])
    start = time.monotonic()
    result = agent.run("task")
    assert time.monotonic() - start < 1
    (r,) = result.trajectory.steps[0].results
    assert r.status == "error"
    assert "StopIteration" in r.content


@pytest.mark.parametrize("is_async", [False, True])
def test_sys_exit_inside_a_tool_does_not_end_the_host(is_async: bool) -> None:
    def cli() -> str:
        sys.exit(2)  # e.g. argparse on bad input

    async def acli() -> str:
        sys.exit(2)

    fn = acli if is_async else cli
    fn.__doc__ = "Wraps a CLI."
    wrapped = tool(name="cli")(fn)
    agent = make_agent([wrapped], [turn(ToolCall("c1", "cli", {})), "still here"])
    result = agent.run("task")
    assert result.answer == "still here"
    (r,) = result.trajectory.steps[0].results
    assert r.status == "error"
    assert "SystemExit" in r.content


# -- rendering and truncation ---


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")

    __repr__ = __str__


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [Unprintable(), nested(100_000)],
                         ids=["broken-str", "too-deep"])
def test_a_result_that_cannot_be_rendered_is_an_error_result(value: Any) -> None:
    @tool
    def odd() -> Any:
        """Returns something odd."""
        return value

    agent = make_agent([odd], [turn(ToolCall("c1", "odd", {})), "done"])
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    (r,) = result.trajectory.steps[0].results
    assert r.status == "error"
    assert r.content.startswith("Error: 'odd' failed:")


@pytest.mark.parametrize(("value", "expected"), [
    ({"city": "Zürich", "n": 1}, '{"city": "Zürich", "n": 1}'),
    ([1, 2.5, None, True], "[1, 2.5, null, true]"),
    (None, "null"),
    (42, "42"),
    ("plain text", "plain text"),
    ({"when": {1, 2}}, '{"when": "{1, 2}"}'),
])
def test_results_are_rendered_as_text(value: Any, expected: str) -> None:
    @tool
    def give() -> Any:
        """Gives a value."""
        return value

    agent = make_agent([give], [turn(ToolCall("c1", "give", {})), "done"])
    (r,) = agent.run("task").trajectory.steps[0].results
    assert (r.status, r.content) == ("ok", expected)


def test_large_result_is_truncated_and_the_truncation_announced() -> None:
    @tool
    def dump() -> str:
        """Dumps a lot."""
        return "x" * 500

    agent = make_agent([dump], [turn(ToolCall("c1", "dump", {})), "done"], max_result_chars=50)
    result, events = journal(agent)
    (r,) = result.trajectory.steps[0].results
    assert r.status == "ok"
    assert r.content == ("x" * 50 + "\n[tether: result truncated: showing the first 50 of 500 "
                         "characters]")
    assert events_of(events, "tool.result")[0]["content"] == r.content


def test_result_at_the_limit_is_not_truncated() -> None:
    @tool
    def dump(n: int) -> list[int]:
        """Dumps n numbers."""
        return list(range(n))

    agent = make_agent([dump], [turn(ToolCall("c1", "dump", {"n": 3}),
                                     ToolCall("c2", "dump", {"n": 4})), "done"],
                       max_result_chars=len("[0, 1, 2]"))
    r1, r2 = agent.run("task").trajectory.steps[0].results
    assert r1.content == "[0, 1, 2]"
    assert r2.content.startswith("[0, 1, 2,\n[tether: result truncated")  # JSON counted too
    assert "of 12 characters" in r2.content


def test_max_result_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_result_chars"):
        make_agent([echo], ["x"], max_result_chars=0)


# -- the tool-error ceiling ---


def always_calling(name: str, final: str = "gave up",
                   args: Any = None) -> Any:
    """A model that calls ``name`` every turn (different args each time) until tools go."""
    def respond(request: ModelRequest) -> ModelResponse | str:
        if not request.tools:
            return final
        i = sum(1 for m in request.messages if m.role == "assistant")
        return turn(ToolCall(f"c{i}", name, {"n": i} if args is None else args))
    return respond


def test_tool_error_ceiling_stops_the_run() -> None:
    ran: list[int] = []

    @tool
    def flaky(n: int) -> str:
        """Always fails."""
        ran.append(n)
        raise ConnectionError("service down")

    agent = make_agent([flaky], always_calling("flaky"), limits=Limits(tool_error_ceiling=3))
    result, events = journal(agent)
    assert result.stop_reason is StopReason.TOOL_ERROR_CEILING
    assert "3 tool calls failed in a row" in result.stop_detail
    assert ran == [0, 1, 2]
    assert result.answer == "gave up"  # the wrap-up turn, without tools
    requests = events_of(events, "model.request")
    assert requests[-1]["final"] is True
    assert requests[-1]["tools"] in ([], ())
    assert events_of(events, "session.end")[0]["reason"] == "tool_error_ceiling"


def test_a_success_resets_the_error_count() -> None:
    @tool
    def maybe(ok: bool) -> str:
        """Fails unless ok."""
        if not ok:
            raise ConnectionError("down")
        return "fine"

    def c(i: int, ok: bool) -> ModelResponse:
        # vary the id so each call is distinct; identical args repeat on purpose, so allow it
        return turn(ToolCall(f"c{i}", "maybe", {"ok": ok}))

    agent = make_agent([maybe], [c(1, False), c(2, False), c(3, True), c(4, False), "done"],
                       limits=Limits(tool_error_ceiling=3, loop_warn_at=9, loop_stop_at=10))
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    assert [s.results[0].status for s in result.trajectory.steps[:4]] == [
        "error", "error", "ok", "error"]


@pytest.mark.parametrize("kind", ["unknown", "malformed", "schema", "timeout"])
def test_every_kind_of_failure_counts_toward_the_ceiling(kind: str) -> None:
    @tool(timeout=0.05)
    async def slow(n: int) -> str:
        """Slow."""
        await asyncio.sleep(1)
        return "late"

    def respond(request: ModelRequest) -> ModelResponse | str:
        if not request.tools:
            return "gave up"
        i = sum(1 for m in request.messages if m.role == "assistant")
        call = {
            "unknown": ToolCall(f"c{i}", "missing", {}),
            "malformed": ToolCall.from_json(f"c{i}", "slow", "{"),
            "schema": ToolCall(f"c{i}", "slow", {"n": "x"}),
            "timeout": ToolCall(f"c{i}", "slow", {"n": i}),
        }[kind]
        return turn(call)

    agent = make_agent([slow], respond, limits=Limits(tool_error_ceiling=2))
    result = agent.run("task")
    assert result.stop_reason is StopReason.TOOL_ERROR_CEILING
    assert len(result.trajectory.tool_results) == 2


@pytest.mark.parametrize("kwargs", [
    {"tool_error_ceiling": 0},
    {"loop_warn_at": 3, "loop_stop_at": 3},
    {"loop_warn_at": 0, "loop_stop_at": 3},
])
def test_invalid_limits_raise(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        Limits(**kwargs)


# -- timeouts ---


def test_async_tool_past_its_timeout_returns_on_time() -> None:
    @tool(timeout=0.2)
    async def slow() -> str:
        """Sleeps."""
        await asyncio.sleep(5)
        return "late"

    agent = make_agent([slow], [turn(ToolCall("c1", "slow", {})), "done"])
    start = time.monotonic()
    result = agent.run("task")
    elapsed = time.monotonic() - start
    assert 0.15 < elapsed < 0.8
    assert result.stop_reason is StopReason.FINISHED
    assert result.answer == "done"
    (r,) = result.trajectory.steps[0].results
    assert r.status == "timeout"
    assert r.content == "Error: 'slow' timed out after 0.2s and was abandoned."


def test_hung_sync_tool_returns_on_time() -> None:
    @tool(timeout=0.2)
    def hung() -> str:
        """Blocks."""
        time.sleep(30)
        return "late"

    agent = make_agent([hung], [turn(ToolCall("c1", "hung", {})), "done"])
    start = time.monotonic()
    result = agent.run("task")
    elapsed = time.monotonic() - start
    assert 0.15 < elapsed < 0.8
    assert result.answer == "done"
    (r,) = result.trajectory.steps[0].results
    assert r.status == "timeout"
    assert "timed out after 0.2s" in r.content


def test_late_result_of_an_abandoned_sync_tool_is_dropped_quietly() -> None:
    finished = threading.Event()
    thread_errors: list[Any] = []

    @tool(timeout=0.05)
    def slowish() -> str:
        """Slow."""
        try:
            time.sleep(0.25)
            return "late"
        finally:
            finished.set()

    old_hook = threading.excepthook
    threading.excepthook = thread_errors.append
    try:
        agent = make_agent([slowish], [turn(ToolCall("c1", "slowish", {})), "done"])
        result = agent.run("task")  # the loop is closed before the tool returns
        assert result.trajectory.steps[0].results[0].status == "timeout"
        assert finished.wait(2)
        time.sleep(0.05)
    finally:
        threading.excepthook = old_hook
    assert thread_errors == []


async def test_late_result_while_the_loop_still_runs_is_dropped_quietly() -> None:
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: loop_errors.append(ctx))
    finished = threading.Event()

    @tool(timeout=0.05)
    def slowish() -> str:
        """Slow."""
        try:
            time.sleep(0.2)
            raise RuntimeError("too late to matter")
        finally:
            finished.set()

    agent = make_agent([slowish], [turn(ToolCall("c1", "slowish", {})), "done"])
    result = await agent.arun("task")
    assert result.trajectory.steps[0].results[0].status == "timeout"
    while not finished.is_set():
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)
    assert loop_errors == []


def test_time_budget_cuts_a_tool_short_and_stops_the_run() -> None:
    @tool(timeout=30)
    async def slow() -> str:
        """Sleeps."""
        await asyncio.sleep(5)
        return "late"

    agent = make_agent([slow], [turn(ToolCall("c1", "slow", {})), "partial answer"],
                       budget=Budget(max_seconds=0.6, final_turn_share=0.5))
    start = time.monotonic()
    result = agent.run("task")
    assert time.monotonic() - start < 0.9
    assert result.stop_reason is StopReason.TIME_BUDGET
    assert result.answer == "partial answer"
    (r,) = result.trajectory.steps[0].results
    assert r.status == "timeout"


# -- concurrency and ordering ---


def timed_tools(log: list[tuple[str, float, float]], seconds: float) -> list[Any]:
    @tool
    async def read_a(x: int) -> str:
        """Reads A."""
        start = time.monotonic()
        await asyncio.sleep(seconds)
        log.append(("read_a", start, time.monotonic()))
        return "a"

    @tool
    async def read_b(x: int) -> str:
        """Reads B."""
        start = time.monotonic()
        await asyncio.sleep(seconds)
        log.append(("read_b", start, time.monotonic()))
        return "b"

    @tool
    def read_sync(x: int) -> str:
        """Reads, blocking."""
        start = time.monotonic()
        time.sleep(seconds)
        log.append((f"read_sync{x}", start, time.monotonic()))
        return "s"

    @tool(side_effect=True)
    async def write_a(x: int) -> str:
        """Writes A."""
        start = time.monotonic()
        await asyncio.sleep(seconds)
        log.append(("write_a", start, time.monotonic()))
        return "wa"

    @tool(side_effect=True)
    def write_b(x: int) -> str:
        """Writes B, blocking."""
        start = time.monotonic()
        time.sleep(seconds)
        log.append(("write_b", start, time.monotonic()))
        return "wb"

    return [read_a, read_b, read_sync, write_a, write_b]


def spans(log: list[tuple[str, float, float]]) -> dict[str, tuple[float, float]]:
    return {name: (start, end) for name, start, end in log}


def test_read_only_async_tools_of_one_turn_run_concurrently() -> None:
    log: list[tuple[str, float, float]] = []
    agent = make_agent(timed_tools(log, 0.3), [
        turn(ToolCall("c1", "read_a", {"x": 1}), ToolCall("c2", "read_b", {"x": 1})), "done"])
    start = time.monotonic()
    result = agent.run("task")
    elapsed = time.monotonic() - start
    assert elapsed < 0.5
    assert [r.content for r in result.trajectory.steps[0].results] == ["a", "b"]
    s = spans(log)
    assert s["read_a"][0] < s["read_b"][1] and s["read_b"][0] < s["read_a"][1]  # overlap


def test_read_only_sync_tools_of_one_turn_run_concurrently() -> None:
    log: list[tuple[str, float, float]] = []
    agent = make_agent(timed_tools(log, 0.3), [
        turn(ToolCall("c1", "read_sync", {"x": 1}), ToolCall("c2", "read_sync", {"x": 2})),
        "done"])
    start = time.monotonic()
    agent.run("task")
    assert time.monotonic() - start < 0.5
    s = spans(log)
    assert s["read_sync1"][0] < s["read_sync2"][1] and s["read_sync2"][0] < s["read_sync1"][1]


def test_side_effecting_tools_run_in_order_without_overlap() -> None:
    log: list[tuple[str, float, float]] = []
    agent = make_agent(timed_tools(log, 0.12), [
        turn(ToolCall("c1", "write_b", {"x": 1}), ToolCall("c2", "write_a", {"x": 1})), "done"])
    start = time.monotonic()
    result = agent.run("task")
    assert time.monotonic() - start >= 0.24
    assert [name for name, _, _ in sorted(log, key=lambda e: e[1])] == ["write_b", "write_a"]
    s = spans(log)
    assert s["write_b"][1] <= s["write_a"][0]
    assert [r.content for r in result.trajectory.steps[0].results] == ["wb", "wa"]


def test_a_side_effecting_call_is_a_barrier_between_read_only_ones() -> None:
    log: list[tuple[str, float, float]] = []
    agent = make_agent(timed_tools(log, 0.1), [
        turn(ToolCall("c1", "read_a", {"x": 1}), ToolCall("c2", "read_b", {"x": 1}),
             ToolCall("c3", "write_a", {"x": 1}), ToolCall("c4", "read_sync", {"x": 1})),
        "done"])
    result = agent.run("task")
    s = spans(log)
    assert s["read_a"][0] < s["read_b"][1] and s["read_b"][0] < s["read_a"][1]
    assert s["write_a"][0] >= max(s["read_a"][1], s["read_b"][1])
    assert s["read_sync1"][0] >= s["write_a"][1]
    assert [r.content for r in result.trajectory.steps[0].results] == ["a", "b", "wa", "s"]


# -- loop detection ---


def counting_lookup(calls: list[dict[str, Any]]) -> Any:
    @tool
    def lookup(a: int, b: int = 0) -> str:
        """Look something up."""
        calls.append({"a": a, "b": b})
        return f"value {a + b}"

    return lookup


WARNING = "[tether warning: this exact call was already made"


def test_repeated_identical_call_is_warned_then_stopped() -> None:
    executed: list[dict[str, Any]] = []
    lookup = counting_lookup(executed)
    agent = make_agent([lookup], [
        turn(ToolCall("c1", "lookup", {"a": 1, "b": 2})),
        turn(ToolCall("c2", "lookup", {"b": 2, "a": 1})),  # same call, other key order
        turn(ToolCall("c3", "lookup", {"a": 1, "b": 2})),
    ], when_exhausted="wrapped up")
    result, events = journal(agent)

    assert len(executed) == 2  # the third identical call did not run
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert "repeated 3 times" in result.stop_detail
    assert result.answer == "wrapped up"
    first, second, third = (s.results[0] for s in result.trajectory.steps[:3])
    assert (first.status, first.content) == ("ok", "value 3")
    assert second.status == "ok"
    assert second.content.startswith("value 3\n")
    assert WARNING in second.content
    assert WARNING not in first.content
    assert third.status == "skipped"
    assert "loop_detected" in third.content
    assert "Not executed" in third.content
    wrap_up = events_of(events, "model.request")[-1]
    assert wrap_up["final"] is True
    assert any("loop_detected" in m["content"] for m in wrap_up["new"])
    assert len(events_of(events, "model.request")) == 4
    assert events_of(events, "session.end")[0]["reason"] == "loop_detected"


def test_identical_calls_within_one_turn_are_caught_too() -> None:
    executed: list[dict[str, Any]] = []
    lookup = counting_lookup(executed)
    agent = make_agent([lookup, echo], [
        turn(ToolCall("c1", "lookup", {"a": 1}), ToolCall("c2", "lookup", {"a": 1}),
             ToolCall("c3", "lookup", {"a": 1}), ToolCall("c4", "echo", {"text": "x"})),
    ], when_exhausted="final")
    result = agent.run("task")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert len(executed) == 2
    by_id = {r.call_id: r for r in result.trajectory.tool_results}
    assert sorted(by_id) == ["c1", "c2", "c3", "c4"]
    r1, r2, r3, r4 = (by_id[c] for c in ("c1", "c2", "c3", "c4"))
    assert r1.status == r2.status == "ok"
    assert WARNING in r2.content
    assert r3.status == r4.status == "skipped"
    assert "run is stopping" in r4.content  # later calls of the turn are not run either


def test_different_arguments_are_not_a_loop() -> None:
    executed: list[dict[str, Any]] = []
    lookup = counting_lookup(executed)
    agent = make_agent([lookup], [turn(ToolCall(f"c{i}", "lookup", {"a": i})) for i in range(4)]
                       + ["done"])
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    assert len(executed) == 4
    assert not any(WARNING in r.content for r in result.trajectory.tool_results)


def test_same_arguments_to_different_tools_are_not_a_loop() -> None:
    agent = make_agent([count, Calculator()], [
        turn(ToolCall("c1", "count", {"n": 1})),
        turn(ToolCall("c2", "calculator", {"expression": "1"})),
        turn(ToolCall("c3", "count", {"n": 2})),
        "done"])
    result = agent.run("task")
    assert result.stop_reason is StopReason.FINISHED
    assert not any(WARNING in r.content for r in result.trajectory.tool_results)


def test_loop_limits_are_configurable() -> None:
    executed: list[dict[str, Any]] = []
    lookup = counting_lookup(executed)
    agent = make_agent([lookup], always_calling("lookup", final="enough", args={"a": 5}),
                       limits=Limits(loop_warn_at=3, loop_stop_at=4))
    result = agent.run("task")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert len(executed) == 3
    contents = [r.content for r in result.trajectory.tool_results]
    assert [WARNING in c for c in contents[:3]] == [False, False, True]
    assert result.answer == "enough"


# -- the executor on its own ---


async def test_executor_run_never_raises_for_a_failing_tool() -> None:
    @tool
    async def boom() -> str:
        """Fails."""
        raise LookupError("nothing here")

    executor = ToolExecutor(ToolRegistry([boom]))
    found, arguments = executor.resolve(ToolCall("c1", "boom", {}))
    assert found is boom
    assert arguments == {}
    context = ToolContext("s1", "c1", 1)
    result = await executor.run(boom, "c1", arguments, context, timeout=1.0)
    assert (result.call_id, result.name, result.status) == ("c1", "boom", "error")
    assert result.content == "Error: 'boom' failed: LookupError: nothing here"
