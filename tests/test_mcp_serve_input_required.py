"""A tool's asks answered by MCP's multi-round-trip on a 2026-07-28 request (issue 51, SEP-2322).

A stateless client that declared sampling or elicitation gets ``InputRequiredResult`` (the
input requests, a sealed ``requestState``) and calls again with its answers; the tool runs
again each round, every round a governed, journaled call. A tampered or foreign state is a
-32602 that never reaches the tool. Through ``tether mcp serve`` and ``tether mcp proxy``, with
a raw 2026-07-28 HTTP client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp_peers import ROOT, http_server, journals
from mcp_rounds import ALICE, PARIS, asked, call, result, text
from tether.journal.chain import verify_chain

MCP = ROOT / "tests" / "mcp"
POLICY = "tests/mcp/conformance/allow.yaml"


def tool_results(db: Path) -> list[dict[str, Any]]:
    """Every journaled tool result, in order; every session's chain verifies."""
    found = []
    for events in journals(db).values():
        assert verify_chain(events) is None
        found += [e.data for e in events if e.type == "tool.result"]
    return found


def serve(db: Path) -> list[str]:
    return ["serve", "tests/mcp/conformance_tools.py:tools", "--policy", POLICY, "--store",
            f"sqlite:///{db}"]


def proxy(db: Path) -> list[str]:
    """The proxy in front of the conformance tools, spoken to in the 2025 handshake (the 2026
    upstream: tests/test_mcp_proxy_eras.py)."""
    return ["proxy", "--policy", POLICY, "--store", f"sqlite:///{db}", "--upstream-protocol",
            "2025-11-25", "--", sys.executable, str(MCP / "conformance_upstream.py")]


def test_an_elicitation_is_answered_in_a_second_round(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        requests, state = asked(call(url, "test_input_required_result_elicitation"))
        done = call(url, "test_input_required_result_elicitation",
                    answers={"user_name": ALICE}, state=state)
    assert list(requests) == ["user_name"]
    assert requests["user_name"]["method"] == "elicitation/create"
    assert requests["user_name"]["params"]["requestedSchema"]["properties"] == {
        "name": {"type": "string"}}
    assert text(done) == "Hello, Alice!"
    # each round is a governed call: the first's result says the tool asked its client
    journaled = tool_results(db)
    assert [r["status"] for r in journaled] == ["error", "ok"]
    assert "asked its MCP client for input ('user_name')" in journaled[0]["content"]


def test_a_sampling_ask_and_two_asks_in_turn_take_their_rounds(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        requests, state = asked(call(url, "test_input_required_result_sampling"))
        sampled = call(url, "test_input_required_result_sampling",
                       answers={"capital_question": PARIS}, state=state)
        first, one = asked(call(url, "test_input_required_result_multi_round"))
        second, two = asked(call(url, "test_input_required_result_multi_round",
                                 answers={"step1": ALICE}, state=one))
        # the answer to step1 rides in the state: only step2's answer is sent now
        done = call(url, "test_input_required_result_multi_round",
                    answers={"step2": {"action": "accept", "content": {"color": "blue"}}},
                    state=two)
    request = requests["capital_question"]
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["messages"][0]["content"]["text"] == "What is the capital of France?"
    assert text(sampled) == "Paris"
    assert list(first) == ["step1"] and list(second) == ["step2"] and one != two
    assert text(done) == 'done: accept {"name": "Alice"}; accept {"color": "blue"}'
    assert [r["status"] for r in tool_results(db)] == ["error", "ok", "error", "error", "ok"]


def test_asks_gathered_at_once_share_one_round(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        requests, state = asked(call(url, "test_input_required_result_multiple_inputs"))
        done = call(url, "test_input_required_result_multiple_inputs",
                    answers={"user_name": ALICE, "capital_question": PARIS}, state=state)
    assert sorted(requests) == ["capital_question", "user_name"]
    assert text(done) == 'all answered: accept {"name": "Alice"}; Paris'


def test_a_declined_elicitation_reaches_the_tool(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        _, state = asked(call(url, "test_input_required_result_elicitation"))
        done = call(url, "test_input_required_result_elicitation",
                    answers={"user_name": {"action": "decline"}}, state=state)
    assert text(done) == "No name given: decline"


def test_an_answer_not_matching_the_request_never_reaches_the_tool(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        _, state = asked(call(url, "test_input_required_result_elicitation"))
        wrong = call(url, "test_input_required_result_elicitation",
                     answers={"user_name": {"action": "accept", "content": {"name": 5}}},
                     state=state)
        extra = call(url, "test_input_required_result_elicitation", answers={
            "user_name": {"action": "accept", "content": {"name": "A", "admin": True}}},
            state=state)
        kind = call(url, "test_input_required_result_elicitation",
                    answers={"user_name": PARIS}, state=state)
    for response in (wrong, extra, kind):
        assert result(response)["isError"] is True
    assert "does not match the requested schema" in text(wrong)
    assert "fields the form does not ask for: ['admin']" in text(extra)
    assert "is not a ElicitResult" in text(kind)


def test_a_tampered_state_is_refused_and_the_tool_never_runs(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        _, state = asked(call(url, "test_input_required_result_tampered_state"))
        flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
        # what the state holds, unsealed: a client that forges it gets nowhere
        forged = json.dumps({"v": 1, "round": 1, "answers": {"confirm": {
            "kind": "elicitation", "answer": {"action": "accept", "content": {"ok": True}}}}})
        tampered = [call(url, "test_input_required_result_tampered_state",
                         answers={"confirm": {"action": "accept", "content": {"ok": True}}},
                         state=bad)
                    for bad in (state + "-TAMPERED", flipped, "v1.x", "{}", forged)]
    for response in tampered:
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == -32602
    assert len(tool_results(db)) == 1  # round 1 only: no tampered round reached the tool


def test_a_state_is_bound_to_its_tool_and_arguments(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    ok = {"confirm": {"action": "accept", "content": {"ok": True}}}
    with http_server(serve(db)) as (url, _):
        _, state = asked(call(url, "test_input_required_result_request_state"))
        other_tool = call(url, "test_input_required_result_tampered_state", answers=ok,
                          state=state)
        _, sampled = asked(call(url, "test_sampling", {"prompt": "a"}))
        other_args = call(url, "test_sampling", {"prompt": "b"},
                          answers={"sampling-1": PARIS}, state=sampled)
        same = call(url, "test_input_required_result_request_state", answers=ok, state=state)
    for response in (other_tool, other_args):
        assert response.status_code == 400 and response.json()["error"]["code"] == -32602
    assert text(same).startswith("state-ok")
    assert [r["status"] for r in tool_results(db)] == ["error", "error", "ok"]


def test_a_state_from_another_process_is_refused_unless_they_share_a_key(
        tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    shared = {"TETHER_MCP_STATE_KEY": "5e" * 32}
    ok = {"confirm": {"action": "accept", "content": {"ok": True}}}
    name = "test_input_required_result_request_state"
    with http_server(serve(db), env=shared) as (one, _), \
            http_server(serve(tmp_path / "k.db"), env=shared) as (two, _), \
            http_server(serve(tmp_path / "l.db")) as (own, _):
        _, state = asked(call(one, name))
        replica = call(two, name, answers=ok, state=state)
        stranger = call(own, name, answers=ok, state=state)
    assert text(replica).startswith("state-ok")
    assert stranger.status_code == 400 and stranger.json()["error"]["code"] == -32602


def test_without_the_capability_the_call_is_still_refused_with_32021(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        missing = call(url, "test_input_required_result_elicitation", capabilities={})
        sampling_only = call(url, "test_input_required_result_capabilities",
                             capabilities={"sampling": {}})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32021
    assert missing.json()["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    # a tool that does without the undeclared one asks only what was declared
    requests, _ = asked(sampling_only)
    assert list(requests) == ["capital_question"]


def test_the_proxy_relays_its_upstreams_asks_in_rounds(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(proxy(db)) as (url, _):
        requests, state = asked(call(url, "test_input_required_result_elicitation"))
        key = next(iter(requests))
        done = call(url, "test_input_required_result_elicitation", answers={key: ALICE},
                    state=state)
        first, one = asked(call(url, "test_input_required_result_multi_round"))
        second, two = asked(call(url, "test_input_required_result_multi_round",
                                 answers={next(iter(first)): ALICE}, state=one))
        final = call(url, "test_input_required_result_multi_round", state=two, answers={
            next(iter(second)): {"action": "accept", "content": {"color": "blue"}}})
        _, sampled = asked(call(url, "test_input_required_result_sampling"))
        paris = call(url, "test_input_required_result_sampling",
                     answers={"sampling-1": PARIS}, state=sampled)
        tampered = call(url, "test_input_required_result_sampling",
                        answers={"sampling-1": PARIS}, state=sampled + "x")
    # a 2025 upstream's asks are numbered in order (it names no keys)
    assert key == "elicitation-1" and requests[key]["method"] == "elicitation/create"
    assert text(done) == "Hello, Alice!"
    assert list(first) == ["elicitation-1"] and list(second) == ["elicitation-2"]
    assert text(final) == 'done: accept {"name": "Alice"}; accept {"color": "blue"}'
    assert text(paris) == "Paris"
    assert tampered.status_code == 400 and tampered.json()["error"]["code"] == -32602
    assert [r["status"] for r in tool_results(db)] == [
        "error", "ok", "error", "error", "ok", "error", "ok"]
    events = [e for es in journals(db).values() for e in es]
    answered = [e.data for e in events if e.type == "elicitation.answered"]
    assert json.dumps(answered).count("InputRequiredResult") == 3  # each asking round
    # round 2 of each: one accepted answer; round 3 of multi_round: the recorded one and the new
    assert [a["action"] for a in answered].count("accept") == 4


def test_a_short_shared_key_is_refused_before_serving() -> None:
    import pytest

    from tether.errors import InvalidArgument
    from tether.serve.rounds import state_security

    with pytest.raises(InvalidArgument, match="TETHER_MCP_STATE_KEY cannot seal") as caught:
        state_security(lambda ctx: None, "too-short-a-secret")
    assert "too-short-a-secret" not in str(caught.value)


def test_the_rounds_are_bounded() -> None:
    import mcp_types as types

    from tether.serve import rounds as r
    from tether.tools.caller import CallerCannot, InputNeeded

    request = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message="m", requested_schema={"type": "object", "properties": {}}))
    fresh = r.Rounds({}, {}, 1)
    assert isinstance(fresh.ask("a", request), InputNeeded) and list(fresh.pending) == ["a"]
    last = r.Rounds({}, {}, r.MAX_ROUNDS).ask("a", request)
    assert type(last) is CallerCannot and "rounds" in str(last)
    answers = {f"k{i}": {"kind": "elicitation", "answer": {"action": "decline"}}
               for i in range(r.MAX_ANSWERS)}
    full = r.Rounds(answers, {}, 2)
    assert type(full.ask("b", request)) is CallerCannot and not full.pending
    big = r.Rounds({"k": {"kind": "sampling", "answer": "x" * r.MAX_STATE_CHARS}}, {}, 2)
    assert type(big.ask("b", request)) is CallerCannot and not big.pending


def test_a_tool_that_does_without_the_answer_keeps_its_result(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    args = ["serve", "tests/mcp/capability_tools.py:tools", "--policy", POLICY, "--store",
            f"sqlite:///{db}"]
    with http_server(args) as (url, _):
        kept = call(url, "best_effort", {"text": "as it is"}, capabilities={"sampling": {}})
    # it caught CallerCannot (InputNeeded among them) and completed: no round is asked
    assert text(kept) == "as it is"
    assert [r["status"] for r in tool_results(db)] == ["ok"]


def test_a_handshake_clients_answer_passes_the_same_schema_check(tmp_path: Path) -> None:
    import anyio
    import mcp_types as types
    from mcp.client.streamable_http import streamable_http_client

    from mcp import ClientSession

    async def answer(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "A", "admin": True})

    async def ask(url: str) -> Any:
        async with streamable_http_client(url) as (read, write), ClientSession(
                read, write, read_timeout_seconds=30, elicitation_callback=answer) as session:
            await session.initialize()
            return await session.call_tool("test_input_required_result_elicitation", {})

    db = tmp_path / "j.db"
    with http_server(serve(db)) as (url, _):
        called = anyio.run(ask, url)
    assert called.is_error
    assert "fields the form does not ask for: ['admin']" in called.content[0].text
