"""tether as an OWASP ACS v0.1.0 Guardian: each request checked, journaled, decided, signed.

Why: another framework's agent (the observed agent) asks an ACS Guardian before and after each
step. tether answers with its own policy and journal, so an agent tether does not run is still
governed by the same decisions, approvals and records as one it does.

Decision: a request passes, in this order, the checks a stranger's bytes need before they mean
anything — shape (-32600/-32602), a known method (-32601), its signature (-32004), freshness
(-32006, ``skew_ms`` either way), a request id (and nonce) never used in the session (-32005,
remembered in the journal across restarts), a version of the negotiated major (-32001), a
handshake first and only methods it negotiated (-32003) — and only then is it journaled and
decided. ``system/ping`` alone skips them all (§13: always allow, never an ACS error, not
chained). Tool calls are decided by the gateway (``tether.serve.acs.dispositions``); the other
hooks are journaled and allowed, the ones ACS-Core requires (sessionStart, userMessage or
agentTrigger, toolCallRequest, toolCallResult, agentResponse, sessionEnd) and the rest alike.
``sessionStart`` fixes the session's Intent; under ``scope_mode: strict`` a call whose
capability it does not list is refused (-32003), and it never grows (no approver extension is
accepted in v0.1 here). Every answer is signed with the session's key, and every content-bearing
step's answer carries the ACS chain head (``chain_hash``) inside the signature. Requests of one
session are handled one at a time, in the order they arrive.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from tether.runtime.approvals.requests import ApprovalStore
from tether.serve.acs.chain import next_entry
from tether.serve.acs.dispositions import (
    handed_off,
    handing_off,
    output_answer,
    settled,
    tool_answer,
    tool_of,
)
from tether.serve.acs.session import (
    MAX_SEEN,
    AcsSession,
    Contract,
    Door,
    Intent,
    known,
    open_session,
)
from tether.serve.acs.wire import (
    CAPABILITY_NOT_NEGOTIATED,
    CHAIN_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REPLAY_DETECTED,
    SESSION_REFUSED,
    TIMESTAMP_OUT_OF_WINDOW,
    UNSUPPORTED_VERSION,
    VERSION,
    AcsRefused,
    Request,
    SessionKeys,
    error,
    major,
    parse_time,
    request_of,
    sign,
    verify,
)

HOOKS = frozenset(f"steps/{name}" for name in (
    "sessionStart", "agentTrigger", "turnStart", "userMessage", "agentResponse",
    "knowledgeRetrieval", "memoryContextRetrieval", "memoryStore", "toolCallRequest",
    "toolCallResult", "preCompact", "postCompact", "subagentStart", "subagentStop",
    "skillRegister", "skillLoad", "skillUnload", "turnEnd", "sessionEnd"))
OTHERS = frozenset({"agbom/snapshot", "agbom/changed", "protocols/MCP/tools/call"})
EVALUATED = HOOKS | OTHERS
MAX_SESSIONS = 1_000  # sessions held in memory; the least recently used idle one is let go
_log = logging.getLogger(__name__)
MAX_DEFERS = 8  # deferrals one session may be given (§6: cascading deferrals are bounded)


def _now_iso(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")


class Guardian:
    """Answers ACS requests (``handle``) under one policy and store.

    Args:
        door: What each session's gateway is built with (policy, observed tools, store...).
        secret: The deployment's key material; each session's HMAC key is derived from it.
        skew_ms: How far a request's timestamp may be from this clock, either way.
        clock: Seconds since the epoch (the clock freshness is judged on).
    """

    def __init__(self, door: Door, secret: bytes, *, skew_ms: int = 300_000,
                 clock: Callable[[], float] = time.time) -> None:
        if len(secret) < 16:
            from tether.errors import InvalidArgument

            raise InvalidArgument("the ACS deployment secret must be at least 16 bytes; "
                                  "generate one with `openssl rand -base64 32`")
        self._door, self._skew, self._clock = door, skew_ms, clock
        self._keys = SessionKeys(secret, MAX_SESSIONS)
        self._sessions: OrderedDict[str, AcsSession] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"<ACS Guardian, {len(self._sessions)} sessions>"

    @property
    def approvals(self) -> ApprovalStore | None:
        """Where the approval requests its ``ask`` and ``defer`` answers name are kept."""
        return self._door.approvals

    async def handle(self, message: object) -> dict[str, Any]:
        """The response to one JSON-RPC request (an error response for a refused one)."""
        if isinstance(message, dict) and message.get("method") == "system/ping":
            return self._ping(message)
        rpc_id = message.get("id") if isinstance(message, dict) else None
        key: bytes | None = None
        try:
            request = request_of(message)
            if request.method not in EVALUATED and request.method != "handshake/hello":
                raise AcsRefused(METHOD_NOT_FOUND, "method_not_found",
                                 f"{request.method!r} is not a method this Guardian answers",
                                 method=request.method)
            candidate = self._keys(request.session_id)
            assert isinstance(message, dict)
            form = verify(message, candidate)  # its params' canonical form, for the chain
            key = candidate
            self._fresh(request)
            lock = self._locks.setdefault(request.session_id, asyncio.Lock())
            async with lock:
                result = await self._answer(request, form)
            response = {"jsonrpc": "2.0", "id": request.id, "result": result}
            return sign(response, "result", key, request.session_id)
        except Exception as exc:  # a Guardian answers, whatever went wrong
            refused = exc if isinstance(exc, AcsRefused) else AcsRefused(
                INTERNAL_ERROR, "internal_error", "the Guardian could not answer this request; "
                "its operator's log says why")
            if not isinstance(exc, AcsRefused):  # the type only: a message may quote a value
                _log.error("ACS request failed: %s", type(exc).__name__)
            answer = error(rpc_id, refused)
            if key is not None:  # only a verified request's refusal is signed
                assert isinstance(message, dict)
                sign(answer, "error", key, message["params"]["metadata"]["session_id"])
            return answer

    def _ping(self, message: Mapping[str, Any]) -> dict[str, Any]:
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        payload = params.get("payload")
        echo = payload.get("echo") if isinstance(payload, Mapping) else None
        rid = params.get("request_id")
        rpc_id = message.get("id")
        return {"jsonrpc": "2.0", "id": rpc_id if isinstance(rpc_id, str | int) else None,
                "result": {"type": "final", "acs_version": VERSION,
                           "request_id": rid if isinstance(rid, str) else None,
                           "decision": "allow",
                           "payload": {"status": "ok",
                                       "echo": echo if isinstance(echo, str) else None,
                                       "server_timestamp": _now_iso(self._clock())}}}

    def _fresh(self, request: Request) -> None:
        sent = parse_time(request.params.get("timestamp"))
        drift = abs(self._clock() - sent) * 1000
        if drift > self._skew:
            raise AcsRefused(TIMESTAMP_OUT_OF_WINDOW, "timestamp_out_of_window",
                             f"the request's timestamp is {drift / 1000:.0f} s from the "
                             f"Guardian's clock, outside the {self._skew} ms window",
                             skew_window_ms=self._skew)

    async def _session(self, request: Request) -> AcsSession:
        held = self._sessions.get(request.session_id)
        if held is not None:
            self._sessions.move_to_end(request.session_id)
            return held
        self._let_go()
        session = await asyncio.to_thread(open_session, self._door, request.session_id,
                                          request.agent_id)
        self._sessions[request.session_id] = session
        return session

    def _let_go(self) -> None:
        """Past ``MAX_SESSIONS`` held, let the least recently used idle session go: its state
        is in the journal, and its next request reopens it from there (a new activation)."""
        for session_id in list(self._sessions):
            if len(self._sessions) < MAX_SESSIONS:
                return
            lock = self._locks.get(session_id)
            if lock is not None and lock.locked():
                continue  # a request of it is being answered
            session = self._sessions.pop(session_id)
            self._locks.pop(session_id, None)
            session.gateway.close("let go from memory; reopened from the journal on its next "
                                  "request")

    async def _answer(self, request: Request, form: bytes) -> dict[str, Any]:
        session = self._sessions.get(request.session_id)
        if session is not None:
            self._sessions.move_to_end(request.session_id)
        else:
            if request.method != "handshake/hello" and not await asyncio.to_thread(
                    known, self._door.store, request.session_id):
                raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "no_handshake",
                                 "send handshake/hello before any hook of this session",
                                 method=request.method)
            session = await self._session(request)
        nonce = request.params.get("nonce")
        if request.request_id in session.seen or (nonce is not None and nonce in session.nonces):
            raise AcsRefused(REPLAY_DETECTED, "replay_detected",
                             "this request_id (or nonce) was already used in this session; "
                             "send a new one")
        if len(session.seen) >= MAX_SEEN:
            raise AcsRefused(SESSION_REFUSED, "session_full",
                             "this session has used as many request ids as one may; start a "
                             "new session")
        if request.agent_id != session.agent_id:
            raise AcsRefused(SESSION_REFUSED, "agent_mismatch",
                             "this session belongs to another agent_id")
        session.seen.add(request.request_id)
        if isinstance(nonce, str):
            session.nonces.add(nonce)
        record: dict[str, Any] = {"method": request.method, "request_id": request.request_id,
                                  "session_id": request.session_id}
        if nonce is not None:
            record["nonce"] = nonce
        try:
            result = await self._dispatch(session, request, record, form)
        except AcsRefused as refused:
            record["refused"] = {"code": refused.code, "reason": refused.reason}
            session.journal(record)
            await session.gateway.journal.aflush()
            raise
        except Exception:  # the call's own events are written all the same
            await session.gateway.journal.aflush()
            raise
        session.journal(record)
        await session.gateway.journal.aflush()
        if request.method == "steps/sessionEnd":
            session.gateway.close("the observed agent ended its ACS session")
            self._forget(session)
        return result

    def _forget(self, session: AcsSession) -> None:
        self._sessions.pop(session.session_id, None)
        self._locks.pop(session.session_id, None)  # its next request is refused: it ended

    async def _dispatch(self, session: AcsSession, request: Request, record: dict[str, Any],
                        form: bytes) -> dict[str, Any]:
        if request.method == "handshake/hello":
            return self._hello(session, request, record)
        contract = session.contract
        if contract is None:
            raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "no_handshake",
                             "send handshake/hello before any hook of this session",
                             method=request.method)
        if major(request.params["acs_version"]) != major(contract.version):
            raise AcsRefused(UNSUPPORTED_VERSION, "version_mismatch",
                             f"this session negotiated {contract.version}; send requests of "
                             "that major version", supported_versions=[contract.version])
        if request.method not in contract.methods:
            raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "method_not_negotiated",
                             f"{request.method} was not in the handshake's methods_implemented",
                             method=request.method)
        state = request.params["metadata"].get("session_state")
        claimed = state.get("chain_hash") if isinstance(state, Mapping) else None
        if claimed is not None and claimed != session.head:  # the agent's cross-check (§8.6)
            raise AcsRefused(CHAIN_MISMATCH, "chain_mismatch",
                             "the chain_hash sent is not the head this Guardian published last; "
                             "re-read the session's answers (an integrity event, not a glitch)")
        answer: dict[str, Any] = {"decision": "allow"}
        payload = request.payload
        if request.method == "steps/sessionStart":
            self._start(session, payload, record)
        elif request.method in ("steps/toolCallRequest", "protocols/MCP/tools/call"):
            answer = await self._tool_call(session, request, record)
        elif request.method == "steps/toolCallResult":
            answer = self._tool_result(session, payload, record)
        else:
            record["payload"] = dict(payload)
        entry = next_entry(session.head, session.steps + 1, request.method, request.params,
                           answer["decision"], form)
        session.head, session.steps = entry["entry_hash"], session.steps + 1
        record["entry"], record["decision"] = entry, answer["decision"]
        if isinstance(answer.get("reasoning"), str):
            record["reasoning"] = answer["reasoning"]
        return {"type": "final", "acs_version": contract.version,
                "request_id": request.request_id, **answer, "chain_hash": session.head,
                "metadata": {"evaluator": "deterministic", "evaluator_version": "tether"}}

    def _hello(self, session: AcsSession, request: Request,
               record: dict[str, Any]) -> dict[str, Any]:
        if session.contract is not None:
            raise AcsRefused(SESSION_REFUSED, "already_negotiated",
                             "this session already completed its handshake; renegotiation "
                             "is not defined in ACS v0.1")
        hello = request.payload
        versions, methods = hello.get("acs_versions_supported"), hello.get("methods_implemented")
        if not isinstance(versions, list) or not isinstance(methods, list) \
                or not _strings(versions) or not _strings(methods):
            raise AcsRefused(INVALID_PARAMS, "invalid_hello",
                             "a ClientHello needs acs_versions_supported and "
                             "methods_implemented (lists of strings)")
        if not any(major(v) == major(VERSION) for v in versions):
            raise AcsRefused(UNSUPPORTED_VERSION, "unsupported_version",
                             f"no common version: this Guardian speaks {VERSION}",
                             supported_versions=[VERSION])
        approvers = hello.get("approver_types_supported")
        contract = Contract(VERSION, frozenset(methods) & EVALUATED,
                            bool(approvers) and _strings(approvers))
        session.contract = contract
        record["contract"] = contract.to_dict()
        return {"type": "final", "acs_version": VERSION, "request_id": request.request_id,
                "decision": "allow", "negotiated_version": VERSION,
                "methods_evaluated": sorted(contract.methods), "selected_transport": "http",
                "timeout_config": {"default_ms": 30_000, "per_method_ms": {}},
                "signature_algorithms_supported": ["HMAC-SHA256"],
                "skew_window_ms": self._skew, "on_decision_failure": "deny",
                "approver_types_supported": ["human"] if contract.can_ask else [],
                "policy_requires_provenance": False, "agbom_serializations_supported": [],
                "trace_emission": trace_emission(self._door.telemetry),
                "profiles_accepted": ["acs-core"]}

    def _start(self, session: AcsSession, payload: Mapping[str, Any],
               record: dict[str, Any]) -> None:
        record["payload"] = dict(payload)
        intent = payload.get("intent")
        if session.intent is not None or not isinstance(intent, Mapping):
            return  # Intent is fixed once set (§8.4): a second one is ignored, and journaled
        parsed = intent.get("parsed")
        if parsed is None:
            return
        if not _strings(parsed):
            raise AcsRefused(INVALID_PARAMS, "invalid_intent",
                             "intent.parsed must be a list of capability names")
        provenance = intent.get("parser_provenance")
        if not isinstance(provenance, Mapping) or provenance.get("origin") != "user_input":
            raise AcsRefused(INVALID_PARAMS, "invalid_intent",
                             "intent.parser_provenance.origin must be user_input (§8.4)")
        session.intent = Intent(frozenset(parsed), intent.get("scope_mode") == "strict")
        record["intent"] = session.intent.to_dict()

    async def _tool_call(self, session: AcsSession, request: Request,
                         record: dict[str, Any]) -> dict[str, Any]:
        name, asked = tool_of(request.method, request.payload)
        capability = request.payload.get("capability")
        capability = capability if isinstance(capability, str) else name
        intent = session.intent
        if intent is not None and intent.strict and capability not in intent.parsed:
            raise AcsRefused(CAPABILITY_NOT_NEGOTIATED, "outside_intent",
                             f"{capability!r} is outside the session's Intent (strict)",
                             capability=capability)
        arguments = {k: v["value"] for k, v in asked.items()}
        record["tool"] = name
        session.witness.clear()
        handoff, token = handing_off(name)
        try:
            result = await session.gateway.call(name, arguments, stored=False)  # with the hook
        finally:
            handed_off(token)
        approval = None
        if session.witness.approval_id is not None and handoff.decided is None:
            approval = await asyncio.to_thread(settled, self._door.approvals,
                                               session.witness.approval_id)
        answer = tool_answer(arguments, result, handoff, session.witness,
                             can_ask=bool(session.contract and session.contract.can_ask),
                             defers_left=MAX_DEFERS - session.defers,
                             approval_ttl=self._door.approval_ttl, approval=approval)
        if answer["decision"] == "defer":
            session.defers += 1
        decision = session.witness.decision
        if decision is not None and "output" in decision.mask_in and decision.fields:
            # masked in every later result of the tool in this session (the results of two
            # calls of one tool cannot be told apart for sure): the stricter reading
            masked = sorted(set(session.output_masks.get(name, ())) | set(decision.fields))
            session.output_masks[name] = tuple(masked)
            record["output_mask"] = {"tool": name, "fields": masked}
        return answer

    def _tool_result(self, session: AcsSession, payload: Mapping[str, Any],
                     record: dict[str, Any]) -> dict[str, Any]:
        tool = payload.get("tool")
        name = tool.get("name") if isinstance(tool, Mapping) else payload.get("tool_name")
        fields = session.output_masks.get(name, ()) if isinstance(name, str) else ()
        answer, shown = output_answer(payload.get("outputs"), fields)
        for value in (payload.get("outputs") or {}).values() if fields and isinstance(
                payload.get("outputs"), Mapping) else ():
            if isinstance(value, str) and value:
                session.gateway.journal.redact(value)
        record["payload"] = {**payload, "outputs": shown}
        return answer


def trace_emission(sinks: Iterable[object]) -> dict[str, bool]:
    """What the ServerHello says this Guardian emits of ACS Trace: spans, OCSF records (a sink
    that says its ``signal`` and ``shape``: ``OTelSink`` and ``SIEMSink`` given shape="acs")."""
    acs = [getattr(sink, "signal", "") for sink in sinks if getattr(sink, "shape", "") == "acs"]
    return {"otel_enabled": "otel" in acs, "ocsf_enabled": "ocsf" in acs}


def _strings(value: object) -> bool:
    return (isinstance(value, list) and len(value) <= 256
            and all(isinstance(v, str) and len(v) <= 200 for v in value))
