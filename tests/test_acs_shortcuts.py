"""What the Guardian no longer does twice (or at all), and that each shortcut gives the same
answer.

A request's params are written in RFC 8785 form once (``wire.forms``) and that form serves both
the signature's check (set into the envelope's form) and the chain entry's ``request_hash``; a
session's HMAC key is derived once (``wire.SessionKeys``); the dispositions' witness hears the
journal on its bus, not as a telemetry sink (which would give every call a trace span nobody
reads); a tool call's result and the hook that answers it are written in one transaction
(``Gateway.call(stored=False)``), still before the answer. These tests hold each shortcut to what
it replaces — ``rfc8785.dumps`` of the envelope without its signature, the spec's request hash,
HKDF of the secret, the gateway's record kept — and fail if the shortcut is taken out (the
params written twice, a key derived on every request, the witness a sink, a second write).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acs_vectors import SECRET, envelope, hello_payload, signed, tool_payload
from conftest import import_or_unavailable

rfc8785 = import_or_unavailable("rfc8785", "acs")

from tether.policy import AllowAll  # noqa: E402
from tether.serve.acs import acs_guardian, wire  # noqa: E402
from tether.serve.acs.wire import AcsRefused, SessionKeys, forms, session_key  # noqa: E402
from tether.store.memory import MemoryStore  # noqa: E402

NAMES = st.sampled_from(["id", "jsonrpc", "method", "a", "zz", "params", "result", "error",
                         "é", "\ue000", "\U0001f600", "Params", ""]) | st.text(max_size=3)
LEAVES = st.none() | st.booleans() | st.text(max_size=4) | st.integers(-5, 2**54) | st.floats()
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(NAMES, inner, max_size=3), max_leaves=8)
MEMBER = (st.dictionaries(NAMES, VALUES, max_size=4) | VALUES
          | st.fixed_dictionaries({"signature": VALUES}, optional={"x": VALUES}))


def _rfc8785(value: Any) -> bytes | str:
    try:
        return rfc8785.dumps(value)  # type: ignore[no-any-return]
    except (ValueError, RecursionError):
        return "refused"


def _forms(envelope: dict[str, Any], where: str) -> tuple[bytes | str, bytes | str]:
    try:
        return forms(envelope, where)
    except AcsRefused as refused:
        assert refused.reason == "not_canonical"
        return "refused", "refused"


@settings(max_examples=800, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=4), st.sampled_from(["params", "result", "error"]),
       MEMBER)
@example({"id": "1", "jsonrpc": "2.0", "method": "steps/x"}, "params", {"signature": 1, "a": 2})
@example({"id": 1, "jsonrpc": "2.0"}, "error", {"code": 1})
@example({"z": 1, "a": 2}, "params", {})
@example({"\U0001f600": 1, "\ue000": 2}, "params", {})
def test_the_envelope_and_its_member_are_written_as_rfc8785_writes_them(
        rest: dict[str, Any], where: str, member: Any) -> None:
    message = {**rest, where: member}
    part = ({k: v for k, v in member.items() if k != "signature"} if isinstance(member, dict)
            else member)
    whole, alone = _rfc8785({**rest, where: part}), _rfc8785(part)
    got = _forms(message, where)
    if "refused" in (whole, alone):
        assert got == ("refused", "refused")
    else:
        assert got == (whole, alone)


def _guardian() -> Any:
    return acs_guardian(AllowAll(), secret=base64.b64decode(SECRET), store=MemoryStore(),
                        tools=["lookup"])


def _requests(session_id: str) -> list[dict[str, Any]]:
    return [signed(envelope(method, payload, session_id=session_id, agent_id="a"))
            for method, payload in (("handshake/hello", hello_payload()),
                                    ("steps/sessionStart", {}),
                                    ("steps/toolCallRequest", tool_payload("lookup", {"id": 1})))]


def test_a_requests_params_are_written_once_and_hashed_as_the_spec_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    guardian, session_id = _guardian(), str(uuid.uuid4())
    *first, call = _requests(session_id)
    for message in first:
        assert "result" in asyncio.run(guardian.handle(message))
    written: list[Any] = []
    real = wire.dumps
    monkeypatch.setattr(wire, "dumps", lambda value: written.append(value) or real(value))
    answer = asyncio.run(guardian.handle(call))
    assert answer["result"]["decision"] == "allow"
    params = {k: v for k, v in call["params"].items() if k != "signature"}
    assert [value for value in written if value == params] == [params]  # once, not twice
    (entry,) = [e.data["entry"] for s in guardian._door.store.sessions()
                for e in guardian._door.store.read(s.session_id)
                if e.type == "acs.hook" and e.data["method"] == "steps/toolCallRequest"]
    assert entry["request_hash"] == hashlib.sha256(rfc8785.dumps(params)).hexdigest()


def test_a_sessions_key_is_derived_once_and_every_request_is_still_verified(
        monkeypatch: pytest.MonkeyPatch) -> None:
    derived: list[str] = []
    monkeypatch.setattr(wire, "session_key", lambda secret, session_id: derived.append(
        session_id) or session_key(secret, session_id))
    guardian, session_id = _guardian(), str(uuid.uuid4())
    hello, start, call = _requests(session_id)
    for message in (hello, start):
        assert "result" in asyncio.run(guardian.handle(message))
    call["params"]["payload"]["arguments"]["id"]["value"] = 2  # after signing
    assert asyncio.run(guardian.handle(call))["error"]["data"]["reason"] == "signature_mismatch"
    assert derived == [session_id]


def test_the_kept_keys_are_bounded_and_each_is_the_derived_one() -> None:
    secret = base64.b64decode(SECRET)
    keys = SessionKeys(secret, 2)
    for session_id in ("s-1", "s-2", "s-3", "s-1"):
        assert keys(session_id) == session_key(secret, session_id)
    assert sorted(keys._keys) == ["s-1", "s-3"]  # s-1 let go for s-3, then derived again


def test_the_witness_hears_the_journal_without_turning_telemetry_on() -> None:
    guardian, session_id = _guardian(), str(uuid.uuid4())
    for message in _requests(session_id):
        assert asyncio.run(guardian.handle(message))["result"]["decision"] == "allow"
    session = guardian._sessions[session_id]
    assert session.gateway._telemetry == ()  # no sink: no call carries a trace span
    assert session.witness in tuple(session.gateway.journal.bus)
    assert session.witness.decision is not None  # it heard the call's decision


def test_a_calls_result_and_its_hook_are_written_in_one_transaction_before_the_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    guardian, session_id = _guardian(), str(uuid.uuid4())
    *first, call = _requests(session_id)
    for message in first:
        assert "result" in asyncio.run(guardian.handle(message))
    store = guardian._door.store
    writes: list[list[str]] = []
    real = store.append
    monkeypatch.setattr(store, "append", lambda session, events, *rest: writes.append(
        [e.type for e in events]) or real(session, events, *rest))
    answer = asyncio.run(guardian.handle(call))
    assert answer["result"]["decision"] == "allow"
    # a side effect's start is written before it runs (tool.started, on its own: the gateway's
    # rule); the call's result and the hook that answers it are written together
    assert writes[-1] == ["tool.result", "acs.hook"]
    assert writes[0][:2] == ["client.call", "tool.decision"]
    written = [kind for write in writes for kind in write]
    gateway = guardian._sessions[session_id].gateway
    assert [e.type for e in store.read(gateway.id)][-len(written):] == written


def test_a_call_whose_answer_fails_is_written_all_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.serve.acs import guardian as module

    guardian, session_id = _guardian(), str(uuid.uuid4())
    *first, call = _requests(session_id)
    for message in first:
        assert "result" in asyncio.run(guardian.handle(message))

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("a bug after the decision")

    monkeypatch.setattr(module, "tool_answer", broken)
    answer = asyncio.run(guardian.handle(call))
    assert answer["error"]["data"]["reason"] == "internal_error"
    gateway = guardian._sessions[session_id].gateway
    kinds = [e.type for e in guardian._door.store.read(gateway.id)]
    assert "client.call" in kinds and "tool.result" in kinds  # the gateway's record is kept
