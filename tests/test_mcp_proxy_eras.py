"""Both MCP protocol eras through one ``tether mcp proxy`` (issue 51, part 5), governance
unchanged: a handshake (2025-11-25) client and a stateless (2026-07-28) client, each in front of
an upstream spoken to in either era (``--upstream-protocol``).

The upstream (tests/mcp/resolve_upstream.py) is written the way the ``mcp`` SDK's users write a
server that speaks both eras: resolvers that ask the user (``Elicit``) and the client's model
(``Sample``), which the SDK sends on the back-channel in 2025 and as ``InputRequiredResult`` —
under its own keys, a round's asks at once — in 2026. Whatever pairing, the upstream's asks
reach the client waiting for the call, each journaled; a policy's refusal stops a call before
the upstream sees it; a form asking for a secret never reaches a client; and an approval admits
one completed call, across the rounds a stateless client takes to answer it, and no more.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession, types
from mcp_peers import ROOT, approve, http_server, journals, status, text
from mcp_rounds import ALICE, PARIS, asked, call, result
from mcp_rounds import text as final_text
from tether.journal.anchors import check_anchors
from tether.journal.chain import verify_chain
from tether.store.sqlite import SQLiteStore
from tether.types import Event

UPSTREAM = ROOT / "tests" / "mcp" / "resolve_upstream.py"
POLICY = ROOT / "tests" / "mcp" / "eras_policy.yaml"
ERAS = ("2025-11-25", "2026-07-28")


@contextlib.contextmanager
def proxy(db: Path, upstream: str) -> Iterator[str]:
    """``tether mcp proxy`` over HTTP in front of the resolving upstream, spoken to in
    ``upstream``'s era; its URL."""
    with http_server(["proxy", "--policy", str(POLICY), "--store", f"sqlite:///{db}",
                      "--upstream-protocol", upstream, "--", sys.executable,
                      str(UPSTREAM)]) as (url, _):
        yield url


def events(db: Path) -> list[Event]:
    """Every session's events (each chain verified), in order."""
    found = []
    for session in journals(db).values():
        assert verify_chain(session) is None
        found += session
    return found


def count(found: list[Event], kind: str) -> int:
    return sum(e.type == kind for e in found)


def assert_password_form_refused(journaled: list[Event]) -> None:
    (refusal,) = [e.data for e in journaled if e.type == "elicitation.refused"]
    assert "password" in refusal["reason"]


def answer(request: dict[str, Any]) -> dict[str, Any]:
    return ALICE if request["method"] == "elicitation/create" else PARIS


def rounds(url: str, name: str) -> tuple[list[list[str]], Any]:
    """Call ``name`` as a stateless client, answering every round, until it completes: the keys
    each round asked, and the last response."""
    keys: list[list[str]] = []
    response = call(url, name)
    while result(response)["resultType"] == "input_required":
        requests, state = asked(response)
        keys.append(list(requests))
        response = call(url, name, answers={k: answer(r) for k, r in requests.items()},
                        state=state)
    return keys, response


@pytest.mark.parametrize("upstream", ERAS)
def test_a_stateless_client_is_asked_in_rounds_whichever_era_the_upstream_speaks(
        tmp_path: Path, upstream: str) -> None:
    db = tmp_path / "j.db"
    with proxy(db, upstream) as url:
        keys, done = rounds(url, "quiz")
    assert final_text(done) == "Alice says Paris"
    if upstream == "2026-07-28":  # the upstream's own keys, both asks in one round
        assert len(keys) == 1 and [k.split(":")[-1] for k in keys[0]] == [
            "ask_name", "ask_capital"]
    else:  # a handshake upstream asks in turn and names no keys: the proxy numbers them
        assert keys == [["elicitation-1"], ["sampling-2"]]
    journaled = events(db)
    results = [e.data["status"] for e in journaled if e.type == "tool.result"]
    assert results == ["error"] * len(keys) + ["ok"]  # each round a governed call
    assert count(journaled, "tool.decision") == len(keys) + 1
    answered = [e.data for e in journaled if e.type == "elicitation.answered"]
    assert [a["action"] for a in answered][-1] == "accept"
    assert count(journaled, "sampling.answered") == 1


class Client:
    """A handshake client's answers to the back-channel, and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.sampled: list[str] = []

    async def on_elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(str(params.message))
        return types.ElicitResult(action="accept", content={"name": "Ann"})

    async def on_sample(self, context: Any, params: Any) -> types.CreateMessageResult:
        self.sampled.append(" ".join(str(m.content.text) for m in params.messages))
        return types.CreateMessageResult(role="assistant", model="client-model",
                                         content=types.TextContent(type="text", text="Lyon"))


@contextlib.asynccontextmanager
async def handshake(url: str, client: Client) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(
            read, write, read_timeout_seconds=60, elicitation_callback=client.on_elicit,
            sampling_callback=client.on_sample) as session:
        await session.initialize()
        yield session


@pytest.mark.parametrize("upstream", ERAS)
async def test_a_handshake_client_is_asked_on_its_back_channel_whichever_era_the_upstream_speaks(
        tmp_path: Path, upstream: str) -> None:
    db = tmp_path / "j.db"
    client = Client()
    with proxy(db, upstream) as url:
        async with handshake(url, client) as session:
            done = await session.call_tool("quiz", {})
            secret = await session.call_tool("login", {})
            refused = await session.call_tool("shout", {"text": "hi"})
    assert text(done) == "Ann says Lyon"
    assert client.asked == ["What is your name?"]  # the login form never reached the client
    assert client.sampled == ["What is the capital of France?"]
    assert secret.is_error and "signed in" not in str(secret.content)
    assert refused.is_error and status(refused) == "denied"
    journaled = events(db)
    assert [e.data["status"] for e in journaled if e.type == "tool.result"] == [
        "ok", "error", "denied"]
    assert count(journaled, "elicitation.relayed") == 1
    assert count(journaled, "sampling.relayed") == 1
    assert_password_form_refused(journaled)


@pytest.mark.parametrize("upstream", ERAS)
def test_a_refused_call_and_a_secret_form_never_reach_past_the_proxy(tmp_path: Path,
                                                                    upstream: str) -> None:
    db = tmp_path / "j.db"
    with proxy(db, upstream) as url:
        refused = result(call(url, "shout", {"text": "hi"}))
        secret = result(call(url, "login"))
    assert refused["resultType"] == "complete" and refused["isError"]
    assert refused["_meta"]["tether/status"] == "denied"
    # the form asking for a password is declined by the proxy: no round is asked of the client
    assert secret["resultType"] == "complete" and secret["isError"]
    journaled = events(db)
    assert count(journaled, "elicitation.relayed") == 0
    assert_password_form_refused(journaled)


@pytest.mark.parametrize("upstream", ERAS)
def test_an_approval_admits_one_completed_call_across_its_rounds(tmp_path: Path,
                                                                 upstream: str) -> None:
    db = tmp_path / "j.db"
    with proxy(db, upstream) as url:
        waiting = result(call(url, "greet"))
        assert waiting["_meta"]["tether/status"] == "approval_required"
        first = waiting["_meta"]["tether/approval"]
        approve(db, first)  # a person, from another process
        requests, state = asked(call(url, "greet"))
        answers = {k: answer(r) for k, r in requests.items()}
        done = call(url, "greet", answers=answers, state=state)
        replayed = result(call(url, "greet", answers=answers, state=state))
        again = result(call(url, "greet"))
    assert final_text(done) == "Hello, Alice!"
    # the approval was used up by the completed call: replaying its last round, or calling
    # again, waits for a person
    assert replayed["_meta"]["tether/status"] == "approval_required"
    assert again["_meta"]["tether/status"] == "approval_required"
    store = SQLiteStore(db)
    try:
        records = {r["id"]: r for r in store.list_approvals()}
        carried = [r for r in records.values() if r.get("approver_auth") == "carried"]
        assert records[first]["status"] == "used"
        (carry,) = carried
        assert carry["status"] == "used" and first in carry["note"]
        assert carry["call_hash"] == records[first]["call_hash"]
        sessions = {s.session_id: store.read(s.session_id) for s in store.sessions()}
        assert check_anchors(store.anchors(), sessions, store.list_approvals(), None,
                             store.anchor_lanes()) == []
    finally:
        store.close()


def test_a_stateless_request_whose_headers_name_another_call_never_reaches_the_chokepoint(
        tmp_path: Path) -> None:
    """A balancer or gateway in front may route by the ``Mcp-Method`` / ``Mcp-Name`` headers; a
    request whose headers say one call and whose body another is refused (-32020) before any
    decision, so the headers cannot smuggle a call past a rule keyed on them."""
    db = tmp_path / "j.db"
    with proxy(db, "2026-07-28") as url:
        renamed = call(url, "shout", {"text": "hi"}, headers={"Mcp-Name": "quiz"})
        remethod = call(url, "shout", {"text": "hi"}, headers={"Mcp-Method": "tools/list"})
        bare = call(url, "quiz", headers={"Mcp-Method": "", "Mcp-Name": ""})
        allowed = result(call(url, "shout", {"text": "hi"}))
    for refused in (renamed, remethod, bare):
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
    assert allowed["_meta"]["tether/status"] == "denied"  # the policy's answer, once decided
    journaled = events(db)
    assert [e.data["call"]["name"] for e in journaled if e.type == "client.call"] == ["shout"]
