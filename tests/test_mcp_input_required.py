"""A 2026-07-28 server's ``InputRequiredResult`` answered by the calling session and retried
(``tether.mcp.input_required``): declined by default, answered through the same code path and
journal events as the 2025 back-channel (``tests/test_mcp_client_requests.py``), bounded, and
failed closed on anything malformed or too large.

A real SDK server on 127.0.0.1 (``tests/mcp/mrtr_server.py``) records every request it gets,
so what tether sent back is asserted on the wire: the responses, the ``requestState`` echoed
exactly (or absent), a new JSON-RPC id for each retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_peers import ROOT, printed_url
from tether import Agent, Budget, ReAct, ScriptedModel
from tether.mcp import MCPError, MCPServer, connect
from tether.mcp.input_required import MAX_INPUT_REQUESTS, MAX_ROUNDS, MAX_STATE_CHARS
from tether.mcp.requests import MAX_SAMPLING_CHARS
from tether.runtime.chokepoint.asks import Question
from tether.store.sqlite import SQLiteStore
from tether.tools.caller import Elicited
from tether.types import ModelRequest, ModelResponse, ToolCall

SERVER = ROOT / "tests" / "mcp" / "mrtr_server.py"
STATE = 'opaque "state" \\ é ✓ {"n": 1}'  # mrtr_server.STATE
SAMPLING = "You answer a request that the tool server"


class Wire:
    """The tools/call requests the server received, in order."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        bodies = [json.loads(line) for line in self.path.read_text().splitlines()]
        return [b for b in bodies if isinstance(b, dict) and b.get("method") == "tools/call"
                and (tool is None or b["params"]["name"] == tool)]


@contextlib.contextmanager
def mrtr_server(tmp_path: Path) -> Iterator[tuple[str, Wire]]:
    record = tmp_path / "wire.jsonl"
    with printed_url([sys.executable, str(SERVER), str(record)]) as (url, _):
        yield url, Wire(record)


def upstream(url: str, **options: Any) -> MCPServer:
    return MCPServer.http("up", url, prefix="", connect_timeout=15, call_timeout=15,
                          protocol="2026-07-28", **options)


def model(tool: str, arguments: dict[str, Any], seen: list[ModelRequest],
          sampled: str = "the sampled answer") -> ScriptedModel:
    """Calls ``tool`` once, then answers; a sampling request is answered ``sampled``."""
    def respond(request: ModelRequest) -> ModelResponse | str:
        if request.messages[0].content.startswith(SAMPLING):
            seen.append(request)
            return sampled
        if any(m.role == "assistant" for m in request.messages):
            return "done"
        return ModelResponse(tool_calls=(ToolCall("c1", tool, arguments),))

    return ScriptedModel(respond)


class Run:
    """One session of an Agent (journaled in a SQLite store) that calls one tool of the server."""

    def __init__(self, url: str, tmp_path: Path, tool: str, arguments: dict[str, Any] | None = None,
                 budget: Budget | None = None, **options: Any) -> None:
        self.seen: list[ModelRequest] = []
        store = SQLiteStore(tmp_path / "journal.db")
        with connect(upstream(url, **options)) as tools:
            agent = Agent(model=model(tool, arguments or {}, self.seen), reasoning=ReAct(),
                          tools=[*tools], store=store)
            self.session = agent.session("use the tool", budget=budget)
            result = self.session.run()
        (self.result,) = result.trajectory.tool_results
        self.events = [(e.type, e.data) for e in store.read(self.session.id)]
        assert self.session.verify() is None

    @property
    def answer(self) -> dict[str, Any]:
        """What the server got back on the retry (its answer to the call)."""
        assert self.result.status == "ok", self.result.content
        return json.loads(str(self.result.content))  # type: ignore[no-any-return]

    def of(self, *types: str) -> list[tuple[str, Any]]:
        return [(t, d) for t, d in self.events if t in types]


def retried(wire: Wire, tool: str) -> dict[str, Any]:
    """The retry of a call that asked once: a new id, the call's name and arguments."""
    first, retry = wire.calls(tool)
    assert retry["id"] != first["id"]
    assert retry["params"]["name"] == first["params"]["name"]
    assert retry["params"].get("arguments") == first["params"].get("arguments")
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    return retry["params"]  # type: ignore[no-any-return]


# -- elicitation -----------------------------------------------------------------------------

def test_elicitation_is_declined_by_default_journaled_and_sent_back(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "ask")
    # a declined elicitation is an answer: the call goes on with it
    assert run.answer == {"responses": {"who": {"action": "decline"}}, "state": STATE}
    ((kind, data),) = run.of("elicitation.refused", "elicitation.requested")
    assert kind == "elicitation.refused" and data["call_id"] == "c1"
    assert data["server"] == "up" and "configured" in data["reason"]
    params = retried(wire, "ask")
    assert params["inputResponses"] == {"who": {"action": "decline"}}
    assert params["requestState"] == STATE


def test_an_answerer_answers_and_the_retry_echoes_the_state_exactly(tmp_path: Path) -> None:
    asked: list[Question] = []

    def answer(question: Question) -> dict[str, Any]:
        asked.append(question)
        return {"name": "Ada", "age": 7}

    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "ask", elicitation=answer)
    accepted = {"action": "accept", "content": {"name": "Ada", "age": 7}}
    assert run.answer == {"responses": {"who": accepted}, "state": STATE}
    (question,) = asked
    assert (question.message, question.call_id, question.server) == ("Who are you?", "c1", "up")
    requested, answered = run.of("elicitation.requested", "elicitation.answered")
    assert requested[1]["approval_id"] == answered[1]["approval_id"] == question.approval_id
    assert answered[1]["action"] == "accept" and answered[1]["content"] == accepted["content"]
    params = retried(wire, "ask")
    assert params["requestState"] == STATE  # not parsed, not re-encoded: the same string
    assert params["inputResponses"] == {"who": accepted}
    # the opaque state is the server's: it is not journaled
    assert STATE not in json.dumps([d for _, d in run.events], ensure_ascii=False)


def test_no_request_state_is_sent_when_none_was_given(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "ask_nostate", elicitation=lambda q: {"name": "Bo"})
    assert run.answer["state"] is None
    params = retried(wire, "ask_nostate")
    assert "requestState" not in params
    assert params["inputResponses"] == {"who": {"action": "accept", "content": {"name": "Bo"}}}


def test_a_form_asking_for_a_password_is_declined_before_anyone_is_asked(
        tmp_path: Path) -> None:
    asked: list[Question] = []
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "password",
                  elicitation=lambda q: asked.append(q) or {"user": "u", "password": "hunter2"})
    assert not asked
    assert run.answer["responses"] == {"p": {"action": "decline"}}
    ((kind, data),) = run.of("elicitation.refused", "elicitation.requested")
    assert kind == "elicitation.refused" and "'password'" in data["reason"]
    assert "secret" in data["reason"]
    assert "hunter2" not in wire.path.read_text()


def test_a_relay_with_no_client_waiting_is_declined_and_journaled(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, _):
        run = Run(url, tmp_path, "ask", elicitation="relay")
    assert run.answer["responses"] == {"who": {"action": "decline"}}
    ((_, data),) = run.of("elicitation.refused")
    assert "no MCP client waits" in data["reason"]


def test_a_call_outside_a_session_has_its_elicitation_declined(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire), connect(
            upstream(url, elicitation=lambda q: {"name": "x"})) as tools:
        text = asyncio.run(tools.invoke("ask", {}))
    assert json.loads(text)["responses"] == {"who": {"action": "decline"}}
    assert retried(wire, "ask")["requestState"] == STATE


@pytest.mark.parametrize(("tool", "said"), [
    ("sample", r"sampling call \(input 's'\), which tether did not make: declined: the call "
               r"was made outside a session"),
    ("roots", r"asked for roots/list: tether exposes no roots"),
])
def test_a_call_outside_a_session_cannot_sample_or_list_roots(tmp_path: Path, tool: str,
                                                              said: str) -> None:
    with mrtr_server(tmp_path) as (url, wire), connect(
            upstream(url, sampling="session")) as tools, pytest.raises(MCPError, match=said):
        asyncio.run(tools.invoke(tool, {}))
    assert len(wire.calls(tool)) == 1  # not retried


# -- sampling --------------------------------------------------------------------------------

def test_sampling_is_declined_by_default_journaled_and_fails_the_call(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "sample", {"prompt": "hi"})
    # a sampling request has no way to be declined inside inputResponses: the call fails
    assert run.result.status == "error"
    assert "sampling call (input 's'), which tether did not make" in str(run.result.content)
    assert "MCPServer(sampling=...)" in str(run.result.content)
    ((_, data),) = run.of("sampling.refused")
    assert "configured" in data["reason"] and data["call_id"] == "c1"
    assert not run.seen and len(wire.calls("sample")) == 1  # no model call, no retry


def test_sampling_is_a_governed_model_call_of_the_session(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "sample", {"prompt": "Summarise: tether", "max_tokens": 500},
                  sampling="session", sampling_max_tokens=64, budget=Budget(max_tokens=100_000))
    (request,) = run.seen
    assert request.max_output_tokens == 64  # the server's ceiling, below the request's 500
    assert request.messages[0].role == "system" and "untrusted" in request.messages[0].content
    sent = run.answer["responses"]["s"]
    assert sent["role"] == "assistant" and sent["content"] == {"type": "text",
                                                               "text": "the sampled answer"}
    assert retried(wire, "sample")["requestState"] == "sampled"
    (_, asked), (_, answered) = run.of("sampling.request", "sampling.response")
    assert asked["call_id"] == "c1" and asked["max_output_tokens"] == 64
    assert answered["text"] == "the sampled answer" and answered["output_tokens"] > 0
    # charged to the session: its tokens count
    turns = [ModelResponse.from_dict(d["response"]) for t, d in run.events
             if t == "model.response"]
    assert run.session.spend().tokens == sum(r.usage.total_tokens for r in turns) + (
        answered["input_tokens"] + answered["output_tokens"])


def test_a_sampling_request_past_the_budget_is_refused(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "sample", {"prompt": "tether ", "repeat": 2000},
                  sampling="session", budget=Budget(max_tokens=2000))
    assert run.result.status == "error" and "did not make" in str(run.result.content)
    assert not run.seen and run.of("sampling.refused")
    assert run.session.spend().tokens <= 2000
    assert len(wire.calls("sample")) == 1


def test_a_huge_sampling_prompt_is_refused_unsent(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "huge", sampling="session")
    assert run.result.status == "error"
    assert f"at most {MAX_SAMPLING_CHARS}" in str(run.result.content)
    ((_, data),) = run.of("sampling.refused")
    assert "200000 characters long" in data["reason"]
    assert not run.seen and len(wire.calls("huge")) == 1


# -- roots, several, rounds ------------------------------------------------------------------

def test_roots_are_refused_journaled_and_fail_the_call(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "roots")
    assert run.result.status == "error"
    assert "tether exposes no roots" in str(run.result.content)
    ((_, data),) = run.of("roots.refused")
    assert data["call_id"] == "c1" and "no roots capability" in data["reason"]
    assert len(wire.calls("roots")) == 1
    from tether.journal.views.timeline import timeline

    assert "up's roots request during c1 refused" in "\n".join(
        timeline(list(run.session.replay())))


def test_several_requests_at_once_are_each_answered(tmp_path: Path) -> None:
    def answer(question: Question) -> dict[str, Any]:
        return {"ok": True} if question.message == "Second?" else {"name": "Cy"}

    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "several", elicitation=answer, sampling="session")
    responses = run.answer["responses"]
    assert responses["a"] == {"action": "accept", "content": {"name": "Cy"}}
    assert responses["b"] == {"action": "accept", "content": {"ok": True}}
    assert responses["s"]["content"]["text"] == "the sampled answer"
    assert len(run.of("elicitation.answered")) == 2 and len(run.of("sampling.response")) == 1
    assert set(retried(wire, "several")["inputResponses"]) == {"a", "b", "s"}


def test_rounds_retry_with_each_rounds_state_and_a_new_id(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "rounds", {"n": 3}, elicitation=lambda q: {"name": q.message})
    assert run.answer == {"responses": {"q3": {"action": "accept",
                                               "content": {"name": "Round 3?"}}},
                          "state": "round-3"}
    calls = wire.calls("rounds")
    assert [c["params"].get("requestState") for c in calls] == [None, "round-1", "round-2",
                                                                "round-3"]
    assert [list(c["params"].get("inputResponses") or {}) for c in calls] == [
        [], ["q1"], ["q2"], ["q3"]]  # each round answers only what that round asked
    assert len({c["id"] for c in calls}) == 4
    assert len(run.of("elicitation.answered")) == 3


def test_a_state_only_round_is_retried_with_the_state_and_no_responses(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "still")
    assert run.answer == {"responses": {}, "state": "working"}
    first, retry = wire.calls("still")
    assert retry["params"]["requestState"] == "working"
    assert "inputResponses" not in retry["params"] and retry["id"] != first["id"]


def test_a_server_that_never_stops_asking_is_cut_off(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, wire):
        run = Run(url, tmp_path, "forever", elicitation=lambda q: {})
    assert run.result.status == "error"
    assert f"still asked for input after {MAX_ROUNDS} rounds" in str(run.result.content)
    assert len(wire.calls("forever")) == MAX_ROUNDS + 1  # the call and one retry a round


# -- malformed and hostile results: the call fails closed, nothing is answered --------------

@pytest.mark.parametrize(("tool", "said"), [
    ("unknown_method", r"input request 'x' asks for method 'tools/list', which is none of "
                       r"elicitation/create, sampling/createMessage, roots/list"),
    ("bad_params", r"input request 'x' \(elicitation/create\) has params that do not parse "
                   r"\(params.message: Field required\)"),
    ("state_number", r"its requestState is not a string \(7\)"),
    ("crowd", rf"asked for 100 inputs in one round \(tether answers at most "
              rf"{MAX_INPUT_REQUESTS}\)"),
    ("big_state", rf"sent a requestState of 1000000 characters \(tether echoes at most "
                  rf"{MAX_STATE_CHARS}\)"),
])
def test_a_malformed_or_oversized_input_required_result_fails_closed(
        tmp_path: Path, tool: str, said: str) -> None:
    asked: list[Question] = []
    with mrtr_server(tmp_path) as (url, wire), connect(
            upstream(url, elicitation=lambda q: asked.append(q) or {})) as tools:
        with pytest.raises(MCPError, match=rf"MCP server 'up' .*{said}; the call of {tool!r} "
                                           r"did not complete"):
            asyncio.run(tools.invoke(tool, {}))
        assert json.loads(asyncio.run(tools.invoke("ask_nostate", {})))  # still connected
    assert not asked and len(wire.calls(tool)) == 1  # nothing answered, never retried


def test_a_malformed_result_in_a_session_is_a_tool_error(tmp_path: Path) -> None:
    with mrtr_server(tmp_path) as (url, _):
        run = Run(url, tmp_path, "big_state", elicitation=lambda q: {"name": "x"})
    assert run.result.status == "error" and "requestState of 1000000" in str(
        run.result.content)
    assert not run.of("elicitation.requested", "elicitation.refused")



# -- relayed to the MCP client that made the call (what tether mcp proxy does) --------------

class Client:
    """A ``tether.tools.caller.Caller``: the MCP client waiting on a proxied call."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.sampled: list[str] = []

    async def log(self, level: Any, message: str, *, logger: str | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None,
                       message: str | None = None) -> None:
        return None

    async def sample(self, prompt: str, *, max_tokens: int,
                     system_prompt: str | None = None) -> str:
        self.sampled.append(prompt)
        return "42"

    async def elicit(self, message: str, schema: Any) -> Elicited:
        self.asked.append(message)
        return Elicited("accept", {"ok": True} if message == "Second?" else {"name": "Di"})


class KeyedClient(Client):
    """A caller that takes the ask's key, as ``Caller`` declares it (``Client`` is one written
    before asks had keys, and is asked without)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str | None] = []

    async def sample(self, prompt: str, *, max_tokens: int, system_prompt: str | None = None,
                     key: str | None = None) -> str:
        self.keys.append(key)
        return await super().sample(prompt, max_tokens=max_tokens, system_prompt=system_prompt)

    async def elicit(self, message: str, schema: Any, *, key: str | None = None) -> Elicited:
        self.keys.append(key)
        return await super().elicit(message, schema)


@pytest.mark.parametrize("kind", [Client, KeyedClient])
def test_a_relayed_call_asks_the_client_that_waits_for_it(tmp_path: Path,
                                                          kind: type[Client]) -> None:
    """Whether or not the caller takes an ask's key (``Caller`` declares it; one written
    before keys does not), it is asked; one that takes it gets the server's own."""
    from tether.policy.base import AllowAll
    from tether.runtime.chokepoint.gateway import Gateway

    client = kind()
    with mrtr_server(tmp_path) as (url, wire), connect(
            upstream(url, elicitation="relay", sampling="relay")) as tools:
        gateway = Gateway(list(tools), policy=AllowAll(), client="t", check_policy_names=False)
        result = asyncio.run(gateway.call("several", {}, caller=client))
        events = [(e.type, e.data) for e in gateway.journal.events()]
        gateway.close("done")
    assert result.status == "ok", result.content
    responses = json.loads(str(result.content))["responses"]
    assert responses["a"] == {"action": "accept", "content": {"name": "Di"}}
    assert responses["b"] == {"action": "accept", "content": {"ok": True}}
    assert responses["s"]["content"] == {"type": "text", "text": "42"}
    assert client.asked == ["First?", "Second?"] and client.sampled == ["Summarise: tether"]
    kinds = [t for t, _ in events]
    assert kinds.count("elicitation.relayed") == 2 and kinds.count("sampling.relayed") == 1
    assert [d["by"] for t, d in events if t == "elicitation.answered"] == ["client", "client"]
    assert set(retried(wire, "several")["inputResponses"]) == {"a", "b", "s"}
    if isinstance(client, KeyedClient):
        assert sorted(k or "" for k in client.keys) == ["a", "b", "s"]
