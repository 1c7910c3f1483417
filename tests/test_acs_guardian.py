"""tether as an ACS Guardian, hostile inputs first: forged, replayed, stale, early, unknown,
unwritable requests; then what the dispositions mean (a mask's modify, a partial allow, a deny,
a degrade, an approver-incapable client) and what the journal keeps.

These cases drive ``Guardian.handle`` in this process (the object ``tether acs serve`` serves);
those that need a process boundary — a restart, ``tether approvals approve`` from another
process, the HTTP size limit, stdio framing, the secret's environment variable — are in
tests/test_acs_processes.py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from acs_vectors import (
    SECRET,
    canonical,
    envelope,
    hello_payload,
    iso,
    response_verifies,
    signed,
    tool_payload,
)
from conftest import import_or_unavailable

import_or_unavailable("rfc8785", "acs")

from tether.integrations.decided import FOREIGN_META  # noqa: E402
from tether.policy.yaml_policy import YamlPolicy  # noqa: E402
from tether.runtime.approvals.approver import Approver  # noqa: E402
from tether.runtime.approvals.requests import StoredApprovals  # noqa: E402
from tether.serve.acs import Door, Guardian  # noqa: E402
from tether.serve.acs.dispositions import ObservedTool  # noqa: E402
from tether.serve.acs.guardian import MAX_DEFERS  # noqa: E402
from tether.store.memory import MemoryStore  # noqa: E402

POLICY = """\
version: 1
policy_id: hostile
default: allow
rules:
  - id: no-deletes
    effect: deny
    when: {tool: records.delete}
    reason: records are never deleted by an agent
  - id: writes-need-a-person
    effect: require_approval
    when: {tool: records.write}
  - id: ssn-masked
    effect: mask
    when: {tool: records.lookup}
    fields: [ssn]
    mask_in: [input, output, journal]
  - id: send-only-to
    effect: partial_allow
    when: {tool: mail.send}
    fields: [to, subject]
  - id: search-degrades
    effect: degrade
    when: {tool: web.search}
    fallback: records.lookup
"""
SSN = "123-45-6789"


class Local:
    """A Guardian in this process, and an observed agent's envelopes for it."""

    def __init__(self, clock: float | None = None, approver: Approver | None = None) -> None:
        self.store = MemoryStore()
        names = ("records.lookup", "records.delete", "records.write", "mail.send", "web.search")
        door = Door(YamlPolicy.from_string(POLICY), tuple(ObservedTool(n, FOREIGN_META)
                                                          for n in names),
                    self.store, StoredApprovals(self.store), (), None, None, 3600.0,
                    approver=approver)
        self.guardian = Guardian(door, base64.b64decode(SECRET),
                                 **({"clock": lambda: clock} if clock is not None else {}))
        self.session_id, self.agent_id = str(uuid.uuid4()), "agent-1"

    def message(self, method: str, payload: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return envelope(method, payload, session_id=self.session_id, agent_id=self.agent_id,
                        **options)

    def send(self, message: dict[str, Any], state: str = "VALID") -> dict[str, Any]:
        answer = asyncio.run(self.guardian.handle(signed(message, state)))
        if "result" in answer or "signature" in answer.get("error", {}):
            assert response_verifies(answer, self.session_id), answer
        return answer

    def hello(self, **options: Any) -> dict[str, Any]:
        return self.send(self.message("handshake/hello", hello_payload(**options)))

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return self.send(self.message("steps/toolCallRequest", tool_payload(name, arguments)))

    def hooks(self) -> list[dict[str, Any]]:
        return [e.data for s in self.store.sessions() for e in self.store.read(s.session_id)
                if e.type == "acs.hook"]

    def journal_text(self) -> str:
        return "\n".join(json.dumps(e.data, default=str) for s in self.store.sessions()
                         for e in self.store.read(s.session_id))


def code(answer: Mapping[str, Any]) -> int | None:
    return answer.get("error", {}).get("code")


# -- refused on the wire -------------------------------------------------------------------------

def test_a_tampered_request_is_refused_and_never_journaled() -> None:
    local = Local()
    local.hello()
    message = signed(local.message("steps/toolCallRequest",
                                   tool_payload("records.delete", {"id": "c-1"})))
    message["params"]["payload"]["tool"]["name"] = "records.lookup"  # after signing
    answer = asyncio.run(local.guardian.handle(message))
    assert code(answer) == -32004 and answer["error"]["data"]["reason"] == "signature_mismatch"
    assert "signature" not in answer["error"]  # an unverified request's refusal is unsigned
    assert [h["method"] for h in local.hooks()] == ["handshake/hello"]


@pytest.mark.parametrize(("state", "reason"), [("ABSENT", "signature_missing"),
                                               ("INVALID", "signature_mismatch")])
def test_a_missing_or_wrong_signature_is_refused(state: str, reason: str) -> None:
    local = Local()
    local.hello()
    answer = local.send(local.message("steps/toolCallRequest",
                                      tool_payload("records.lookup", {"id": "c-1"})), state)
    assert code(answer) == -32004 and answer["error"]["data"]["reason"] == reason


def test_a_signature_over_a_subset_of_the_envelope_is_refused() -> None:
    local = Local()
    local.hello()
    message = local.message("steps/toolCallRequest", tool_payload("records.lookup", {"id": 1}))
    answer = asyncio.run(local.guardian.handle(
        signed(message, "COVERS_SUBSET", omit=("metadata.session_id",))))
    assert code(answer) == -32004


def test_another_sessions_key_does_not_open_this_one() -> None:
    local = Local()
    local.hello()
    message = local.message("steps/toolCallRequest", tool_payload("records.lookup", {"id": 1}))
    signed(message)
    other = signed(envelope("steps/toolCallRequest", {}, session_id=str(uuid.uuid4()),
                            agent_id="agent-1"))
    message["params"]["signature"] = other["params"]["signature"]
    assert code(asyncio.run(local.guardian.handle(message))) == -32004


@pytest.mark.parametrize("offset", [timedelta(minutes=-6), timedelta(minutes=6),
                                    timedelta(days=-400)])
def test_stale_and_future_timestamps_are_refused(offset: timedelta) -> None:
    local = Local()
    local.hello()
    when = iso(datetime.now(UTC) + offset)
    answer = local.send(local.message("steps/toolCallRequest",
                                      tool_payload("records.lookup", {"id": 1}), timestamp=when))
    assert code(answer) == -32006 and answer["error"]["data"]["skew_window_ms"] == 300_000
    inside = iso(datetime.now(UTC) + offset / abs(offset.total_seconds()) * 60)  # a minute
    assert local.send(local.message("steps/toolCallRequest", tool_payload(
        "records.lookup", {"id": 1}), timestamp=inside))["result"]["decision"] == "allow"


def test_the_clock_freshness_is_judged_on_is_the_guardians() -> None:
    then = datetime(2026, 9, 9, 12, tzinfo=UTC)
    local = Local(clock=then.timestamp())
    assert code(local.send(local.message("handshake/hello", hello_payload()))) == -32006
    answer = local.send(local.message("handshake/hello", hello_payload(),
                                      timestamp=iso(then - timedelta(minutes=1))))
    assert answer["result"]["negotiated_version"] == "0.1.0"


def test_a_request_id_is_used_once_and_so_is_a_nonce() -> None:
    local = Local()
    local.hello()
    message = local.message("steps/toolCallRequest", tool_payload("records.lookup", {"id": 1}))
    first = local.send(json.loads(json.dumps(message)))
    assert first["result"]["decision"] == "allow"
    assert code(local.send(message)) == -32005
    start, end = local.message("steps/turnStart", {}), local.message("steps/turnEnd", {})
    start["params"]["nonce"] = end["params"]["nonce"] = "n" * 20
    assert "result" in local.send(start)
    assert code(local.send(end)) == -32005
    end["params"]["nonce"] = "n" * 10  # shorter than 16: not a nonce
    assert code(local.send(end)) == -32602


def test_a_hook_before_the_handshake_is_refused_and_nothing_is_journaled() -> None:
    local = Local()
    answer = local.call("records.lookup", {"id": 1})
    assert code(answer) == -32003 and answer["error"]["data"]["reason"] == "no_handshake"
    assert local.hooks() == [] and local.store.sessions() == []


def test_unknown_methods_unnegotiated_methods_and_versions() -> None:
    local = Local()
    local.hello(methods=["steps/toolCallRequest"])
    assert code(local.send(local.message("steps/inventedHook", {}))) == -32601
    assert code(local.send(local.message("tools/call", {}))) == -32600  # not an ACS method
    unnegotiated = local.send(local.message("steps/userMessage", {"content": "hi"}))
    assert code(unnegotiated) == -32003
    assert unnegotiated["error"]["data"]["method"] == "steps/userMessage"
    newer = local.send(local.message("steps/toolCallRequest", tool_payload("records.lookup", {}),
                                     acs_version="1.0.0"))
    assert code(newer) == -32001
    assert code(local.hello()) == -32000  # renegotiation is not defined in v0.1


def test_a_hello_with_no_common_version_is_refused() -> None:
    local = Local()
    answer = local.hello(versions=["1.0.0", "2.1.0"])
    assert code(answer) == -32001 and answer["error"]["data"]["supported_versions"] == ["0.1.0"]


@pytest.mark.parametrize("body", [[], 7, "x", {"jsonrpc": "1.0"}, {"jsonrpc": "2.0"}])
def test_shapes_that_are_not_one_acs_request_are_refused(body: Any) -> None:
    answer = asyncio.run(Local().guardian.handle(body))
    assert code(answer) == -32600


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60])
def test_values_the_canonical_form_cannot_write_are_refused(value: float) -> None:
    local = Local()
    local.hello()
    message = local.message("steps/userMessage", {"content": "hi"})
    message["params"]["payload"]["weight"] = value
    message["params"]["signature"] = {"algorithm": "HMAC-SHA256", "key_id": local.session_id,
                                      "value": "AAAA"}
    answer = asyncio.run(local.guardian.handle(message))
    assert code(answer) == -32602 and answer["error"]["data"]["reason"] == "not_canonical"


def test_a_failure_inside_the_guardian_is_an_internal_error_that_names_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    local = Local()
    local.hello()

    async def broken(*_: Any, **__: Any) -> Any:
        raise OSError(f"disk full while writing {SSN}")

    monkeypatch.setattr(local.guardian, "_dispatch", broken)
    answer = local.call("records.lookup", {"ssn": SSN})
    assert code(answer) == -32603 and SSN not in json.dumps(answer)


def test_ping_needs_no_signature_and_always_allows() -> None:
    local = Local()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "system/ping",
            "params": {"payload": {"echo": "are you there"}}}
    answer = asyncio.run(local.guardian.handle(ping))
    assert answer["result"]["decision"] == "allow"
    assert answer["result"]["payload"]["echo"] == "are you there"
    assert local.hooks() == []  # not chained, not journaled


def test_a_session_belongs_to_the_agent_that_opened_it() -> None:
    local = Local()
    local.hello()
    local.agent_id = "agent-2"
    assert code(local.call("records.lookup", {"id": 1})) == -32000


def test_an_ended_session_takes_no_more_requests() -> None:
    local = Local()
    local.hello()
    assert local.send(local.message("steps/sessionEnd", {"session_reason": "completed"}))[
        "result"]["decision"] == "allow"
    assert code(local.call("records.lookup", {"id": 1})) == -32000


# -- dispositions --------------------------------------------------------------------------------

def test_a_mask_is_a_modify_of_the_input_and_of_the_output_and_never_journaled() -> None:
    local = Local()
    local.hello()
    asked = local.call("records.lookup", {"id": "c-1", "ssn": SSN})["result"]
    assert asked["decision"] == "modify"
    assert asked["modifications"] == {"redactions": [
        {"path": "/arguments/ssn/value", "replacement": "[masked]"}]}
    other = "987-65-4321"  # the output's own value, not the one the input had
    result = local.send(local.message("steps/toolCallResult", {
        "tool": {"name": "records.lookup"}, "outputs": {"name": "Ada", "ssn": other}}))["result"]
    assert result["decision"] == "modify"
    assert result["modifications"] == {"redactions": [
        {"path": "/outputs/ssn", "replacement": "[masked]"}]}
    # the agent quotes it later: the journal still never holds it
    local.send(local.message("steps/agentResponse", {"content": f"Ada's SSN is {other}"}))
    assert SSN not in local.journal_text() and other not in local.journal_text()
    assert "Ada" in local.journal_text()


def test_a_masked_output_that_is_not_text_is_not_journaled_either() -> None:
    local = Local()
    local.hello()
    local.call("records.lookup", {"id": "c-1"})
    result = local.send(local.message("steps/toolCallResult", {
        "tool": {"name": "records.lookup"}, "outputs": {"ssn": 987654321}}))["result"]
    assert result["decision"] == "modify"
    assert "987654321" not in local.journal_text()


def test_partial_allow_withholds_the_other_arguments() -> None:
    local = Local()
    local.hello()
    answer = local.call("mail.send", {"to": "a@example.com", "subject": "hi", "bcc": "x"})
    assert answer["result"]["decision"] == "modify"
    assert answer["result"]["modifications"]["redactions"] == [
        {"path": "/arguments/bcc", "replacement": None}]


def test_deny_and_degrade_are_refusals_that_say_why() -> None:
    local = Local()
    local.hello()
    denied = local.call("records.delete", {"id": "c-1"})["result"]
    assert denied["decision"] == "deny"
    assert denied["reasoning"] == "records are never deleted by an agent"
    degraded = local.call("web.search", {"q": "x"})["result"]
    assert degraded["decision"] == "deny" and degraded["reason_codes"] == ["degraded"]
    assert degraded["policy_data"] == {"tether": {"fallback": "records.lookup"}}


@pytest.mark.parametrize("payload", [{}, {"tool": {"name": ""}}, {"tool": "records.lookup"},
                                     {"tool": {"name": "records.lookup"}, "arguments": {"id": 1}},
                                     {"tool": {"name": "records.lookup"}, "arguments": [1]}])
def test_a_tool_call_of_the_wrong_shape_is_refused(payload: dict[str, Any]) -> None:
    local = Local()
    local.hello()
    assert code(local.send(local.message("steps/toolCallRequest", payload))) == -32602


def test_an_unknown_tool_is_refused() -> None:
    local = Local()
    local.hello()
    assert code(local.call("shell.exec", {"command": "rm -rf /"})) == -32003


def test_a_client_without_an_approver_is_deferred_then_denied_never_asked() -> None:
    local = Local()
    local.hello(approvers=())
    answers = [local.call("records.write", {"id": "c-1", "n": i})["result"]
               for i in range(MAX_DEFERS + 1)]
    assert [a["decision"] for a in answers] == ["defer"] * MAX_DEFERS + ["deny"]
    assert answers[0]["defer_details"]["timeout_decision"] == "deny"
    assert answers[-1]["reason_codes"] == ["approver_unavailable"]


def test_every_content_bearing_answer_publishes_the_chain_head() -> None:
    local = Local()
    local.hello()
    heads = [local.send(local.message(m, {}))["result"]["chain_hash"]
             for m in ("steps/sessionStart", "steps/userMessage", "steps/agentResponse")]
    assert len(set(heads)) == 3 and all(len(h) == 64 for h in heads)
    entries = [h["entry"] for h in local.hooks() if "entry" in h]
    assert [e["entry_hash"] for e in entries] == heads
    previous = None
    for entry in entries:  # §8.2, computed here on its own
        content = {k: v for k, v in entry.items() if k not in ("entry_hash", "previous_hash")}
        tail = bytes.fromhex(previous) if previous else b""
        assert entry.get("previous_hash") == previous
        assert entry["entry_hash"] == hashlib.sha256(canonical(content) + tail).hexdigest()
        previous = entry["entry_hash"]


def test_a_chain_head_the_agent_sends_must_be_the_one_published() -> None:
    local = Local()
    local.hello()
    head = local.send(local.message("steps/sessionStart", {}))["result"]["chain_hash"]
    good = local.message("steps/userMessage", {"content": "hi"},
                         session_state={"chain_hash": head})
    assert local.send(good)["result"]["decision"] == "allow"
    stale = local.message("steps/userMessage", {"content": "again"},
                          session_state={"chain_hash": head})  # no longer the head
    assert code(local.send(stale)) == -32007


def test_an_overlay_declares_tools_the_policy_does_not_name() -> None:
    from tether.policy.overlay import parse_overlay
    from tether.serve.acs import acs_guardian

    overlay = parse_overlay('tools:\n  calendar.read: {side_effect: false, egress: false}\n')
    local = Local()
    local.guardian = acs_guardian(YamlPolicy.from_string(POLICY), secret=base64.b64decode(
        SECRET), store=local.store, overlay=overlay)
    local.hello()
    assert local.call("calendar.read", {"day": "mon"})["result"]["decision"] == "allow"
    assert local.call("records.delete", {"id": 1})["result"]["decision"] == "deny"
    assert code(local.call("calendar.write", {"day": "mon"})) == -32003


def test_a_wrapped_mcp_tool_call_is_decided_as_a_tool_call() -> None:
    local = Local()
    local.hello(methods=["protocols/MCP/tools/call"])
    answer = local.send(local.message("protocols/MCP/tools/call", {
        "name": "records.delete", "arguments": {"id": "c-1"}}))
    assert answer["result"]["decision"] == "deny"


def test_a_session_let_go_from_memory_is_reopened_from_the_journal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tether.serve.acs.guardian as module

    monkeypatch.setattr(module, "MAX_SESSIONS", 2)
    local = Local()
    local.hello()
    first = local.message("steps/userMessage", {"content": "hi"})
    assert "result" in local.send(json.loads(json.dumps(first)))
    mine = local.session_id
    for _ in range(2):  # two more sessions: the first is let go
        local.session_id = str(uuid.uuid4())
        local.hello()
    assert mine not in local.guardian._sessions
    local.session_id = mine
    assert code(local.send(first)) == -32005  # its ids are remembered
    assert local.call("records.lookup", {})["result"]["decision"] == "allow"  # and its contract


# -- an agent or service approver (§9) -----------------------------------------------------------

def _approver_said(said: Any) -> Approver:
    def rule(request: Any) -> Any:
        if isinstance(said, Exception):
            raise said
        return said(request) if callable(said) else said
    return Approver(rule, "risk-service")


def test_an_approver_decides_at_once_and_the_answer_says_so() -> None:
    local = Local(approver=_approver_said(lambda r: r.arguments.get("id") == "c-1"))
    local.hello(approvers=())  # the approver decides: the client's own approver is not needed
    assert local.call("records.write", {"id": "c-1"})["result"]["decision"] == "allow"
    denied = local.call("records.write", {"id": "c-2"})["result"]
    assert denied["decision"] == "deny" and denied["reason_codes"] == ["approval_denied"]
    assert "'risk-service' denied it" in denied["reasoning"]
    decided = {a.arguments["id"]: (a.status, a.approver)
               for a in StoredApprovals(local.store).every()}
    assert decided == {"c-1": ("used", "risk-service"), "c-2": ("denied", "risk-service")}
    assert local.call("records.lookup", {})["result"]["decision"] == "allow"  # never asked


@pytest.mark.parametrize("said", ["ASK", {"decision": "ASK"}, "maybe", RuntimeError("down")],
                         ids=["ASK", "acs-shaped-ASK", "not-a-verdict", "raises"])
def test_an_approver_that_gives_no_verdict_grants_nothing(said: Any) -> None:
    """ACS-R-012: an approver must not answer ASK. Neither that, nor any other answer that is
    not a verdict, nor a failure, lets the call run: -32003, the request denied."""
    local = Local(approver=_approver_said(said))
    local.hello()
    refused = local.call("records.write", {"id": "c-1"})["error"]
    assert refused["code"] == -32003 and refused["data"]["reason"] == "approver_gave_no_verdict"
    assert "down" not in refused["message"]  # what the approver raised stays in the journal
    (request,) = StoredApprovals(local.store).every()
    assert request.status == "denied" and request.note.startswith("no verdict: ")
    assert local.hooks()[-1]["refused"]["reason"] == "approver_gave_no_verdict"


def test_an_approver_that_leaves_it_to_a_person_asks() -> None:
    local = Local(approver=_approver_said(None))
    local.hello()
    asked = local.call("records.write", {"id": "c-1"})["result"]
    assert asked["decision"] == "ask"
    assert StoredApprovals(local.store).get(asked["ask_details"]["approval_id"]).status \
        == "pending"
