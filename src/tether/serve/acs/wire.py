"""The ACS v0.1.0 wire: envelopes checked, signed and verified, refusals named by their code.

Why a module of its own: everything here is about bytes a stranger sent, before any of it means
anything to tether — whether it is a JSON-RPC request of the ACS shape, whether it was signed by
someone holding the deployment's secret, over exactly these bytes, and whether it is fresh. What
the request then asks (a handshake, a hook) is ``tether.serve.acs.guardian``'s.

Decision: one canonical form, RFC 8785 (``tether.serve.acs.jcs``: the ``rfc8785`` package's
bytes, written faster), for what is signed: the whole envelope with its ``signature`` removed
(the request's ``params.signature``, the response's ``result.signature`` or
``error.signature``), so a signature never covers less than the envelope it came in — a
producer cannot declare partial coverage. The HMAC-SHA256 key of a session is HKDF-SHA256 of
the deployment secret with ``info`` the session id (no salt, 32 bytes), ``key_id`` the session
id: the same derivation the reference Guardian uses, so one deployment secret serves every
session and no session's key opens another's. Every refusal is an ``AcsRefused`` carrying a
code of the spec's fixed registry (§17.1) and a machine-readable reason; its message never
quotes a signature, a key or a payload value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tether.errors import RunError
from tether.serve.acs.jcs import dumps

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR = -32603
SESSION_REFUSED, UNSUPPORTED_VERSION, PROVENANCE_REQUIRED = -32000, -32001, -32002
CAPABILITY_NOT_NEGOTIATED, SIGNATURE_INVALID, REPLAY_DETECTED = -32003, -32004, -32005
TIMESTAMP_OUT_OF_WINDOW, CHAIN_MISMATCH = -32006, -32007

VERSION = "0.1.0"  # the one version this Guardian speaks
ALGORITHM = "HMAC-SHA256"
_METHOD = re.compile(r"^(steps/|protocols/|agbom/|trace/|system/|handshake/|wrapped:).+")
_SESSION = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
_VERSION = re.compile(r"^(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?$")


class AcsRefused(RunError):
    """An ACS request refused on the wire: ``code`` is the JSON-RPC or §17.1 registry code,
    ``reason`` a machine-readable word, ``data`` the per-code fields (never a secret)."""

    def __init__(self, code: int, reason: str, message: str, **data: Any) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.data = code, reason, message, data


def canonical(value: Any) -> bytes:
    """``value`` in RFC 8785 canonical form (UTF-8 bytes): what is signed and hashed
    (``tether.serve.acs.jcs``: ``rfc8785.dumps``, byte for byte, faster)."""
    try:
        return dumps(value)
    except (ValueError, RecursionError):  # rfc8785's CanonicalizationError; a lone surrogate
        raise AcsRefused(INVALID_PARAMS, "not_canonical",
                         "the envelope holds a value RFC 8785 cannot write (NaN, Infinity, an "
                         "integer past 2**53, nesting too deep); send plain JSON") from None


def session_key(secret: bytes, session_id: str) -> bytes:
    """The session's HMAC key: HKDF-SHA256(secret, salt none, info session id), 32 bytes."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=session_id.encode()).derive(secret)


class SessionKeys:
    """Each session's HMAC key, derived once and kept (``size`` of them, the oldest let go):
    HKDF cost about 57 thousand instructions a request, two fifths of what checking the signature
    costs. A key is a function of the secret and the session id alone, so a kept one is the key
    derived anew; every request's signature is still checked against it."""

    def __init__(self, secret: bytes, size: int) -> None:
        self._secret, self._size = secret, size
        self._keys: dict[str, bytes] = {}

    def __call__(self, session_id: str) -> bytes:
        key = self._keys.get(session_id)
        if key is None:
            if len(self._keys) >= self._size:
                del self._keys[next(iter(self._keys))]
            key = self._keys[session_id] = session_key(self._secret, session_id)
        return key


def _unsigned(envelope: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``envelope`` without its ``where`` member's signature: a shallow copy of the two levels
    it changes (what is canonicalised is only read, never changed)."""
    body = dict(envelope)
    part = body.get(where)
    if isinstance(part, dict):
        body[where] = {k: v for k, v in part.items() if k != "signature"}
    return body


def forms(envelope: Mapping[str, Any], where: str) -> tuple[bytes, bytes]:
    """The canonical form of ``envelope`` without ``where``'s signature (what the signature
    covers), and of that member alone without it (a request's params, which its chain entry
    hashes). The member is written once and set into the envelope's form where RFC 8785 puts
    it, when every other member's name is ASCII (code point and UTF-16 order agree) and sorts
    on one side of ``where``; otherwise the envelope is written whole (the member again)."""
    part = envelope.get(where)
    alone = canonical({k: v for k, v in part.items() if k != "signature"}
                      if isinstance(part, dict) else part)
    rest = {k: v for k, v in envelope.items() if k != where}
    if isinstance(part, dict) and where.isascii() and where.isalnum():  # written as it reads
        named = b'"' + where.encode() + b'":' + alone
        if all(type(k) is str and k.isascii() and k < where for k in rest):
            return (canonical(rest)[:-1] + b"," if rest else b"{") + named + b"}", alone
        if all(type(k) is str and k.isascii() and k > where for k in rest):
            return b"{" + named + b"," + canonical(rest)[1:], alone
    return canonical(_unsigned(envelope, where)), alone


def _digest(key: bytes, form: bytes) -> bytes:
    return hmac.new(key, form, hashlib.sha256).digest()


def mac(key: bytes, envelope: Mapping[str, Any], where: str) -> str:
    """The base64 HMAC-SHA256 of ``envelope`` without ``where``'s signature, under ``key``."""
    return base64.b64encode(_digest(key, canonical(_unsigned(envelope, where)))).decode()


def sign(envelope: dict[str, Any], where: str, key: bytes, key_id: str) -> dict[str, Any]:
    """Sign ``envelope`` in place (its ``where`` member gets the signature); returns it."""
    value = mac(key, envelope, where)
    envelope[where]["signature"] = {"algorithm": ALGORITHM, "value": value, "key_id": key_id}
    return envelope


def verify(message: Mapping[str, Any], key: bytes) -> bytes:
    """AcsRefused(SIGNATURE_INVALID) unless ``message``'s ``params.signature`` is an
    HMAC-SHA256 over the whole canonical envelope under ``key``; returns the canonical form of
    its params without the signature (``forms``: written once, for the chain entry too)."""
    signature = message["params"].get("signature")
    if signature is None:
        raise AcsRefused(SIGNATURE_INVALID, "signature_missing",
                         "the request carries no signature; ACS-Core requires one (sign the "
                         "canonical envelope with the session's HMAC-SHA256 key)")
    if (not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM
            or not isinstance(signature.get("value"), str)
            or not isinstance(signature.get("key_id"), str)):
        raise AcsRefused(SIGNATURE_INVALID, "signature_malformed",
                         "the signature must be {algorithm: 'HMAC-SHA256', value, key_id}")
    try:
        given = base64.b64decode(signature["value"], validate=True)
    except (binascii.Error, ValueError):
        raise AcsRefused(SIGNATURE_INVALID, "signature_malformed",
                         "the signature's value is not base64") from None
    whole, params = forms(message, "params")
    if not hmac.compare_digest(given, _digest(key, whole)):
        raise AcsRefused(SIGNATURE_INVALID, "signature_mismatch",
                         "the signature does not cover this envelope (every member but the "
                         "signature, in RFC 8785 form) under the session's key")
    return params


def major(version: object) -> int | None:
    """The major number of an ``X.Y.Z`` (or ``X.Y``) version, None if it is not one."""
    match = _VERSION.match(version) if isinstance(version, str) else None
    return int(match.group(1)) if match else None


def parse_time(value: object) -> float:
    """Seconds since the epoch of an ISO 8601 timestamp with a zone; AcsRefused otherwise."""
    invalid = AcsRefused(INVALID_PARAMS, "timestamp_invalid",
                         "params.timestamp must be an ISO 8601 time with a zone "
                         "(2026-09-09T12:00:00Z)")
    if not isinstance(value, str) or len(value) > 40:
        raise invalid
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise invalid from None
    if moment.tzinfo is None:
        raise invalid
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class Request:
    """A request whose shape was checked: its id, method, params and the fields read from them."""

    id: str | int
    method: str
    params: Mapping[str, Any]
    session_id: str
    agent_id: str
    request_id: str
    payload: Mapping[str, Any]


def _bad(what: str) -> AcsRefused:
    return AcsRefused(INVALID_PARAMS, "invalid_params", what)


def request_of(message: object) -> Request:
    """``message`` checked as an ACS JSON-RPC request; AcsRefused naming what is wrong."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise AcsRefused(INVALID_REQUEST, "invalid_request",
                         "send one JSON-RPC 2.0 request object (jsonrpc '2.0', method, id, "
                         "params); batches and notifications are not accepted")
    method, rpc_id = message.get("method"), message.get("id")
    if not isinstance(method, str) or not _METHOD.match(method) or len(method) > 200:
        raise AcsRefused(INVALID_REQUEST, "invalid_request",
                         "method must be an ACS method (steps/..., handshake/hello, system/...)")
    if isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int):
        raise AcsRefused(INVALID_REQUEST, "invalid_request",
                         "a request needs an id (string or number): notifications are not "
                         "supported in ACS v0.1.0")
    params = message.get("params")
    if not isinstance(params, dict):
        raise _bad("params must be an object")
    metadata, payload = params.get("metadata"), params.get("payload", {})
    if not isinstance(metadata, dict):
        raise _bad("params.metadata must be an object with session_id and agent_id")
    session_id, agent_id = metadata.get("session_id"), metadata.get("agent_id")
    if not isinstance(session_id, str) or not _SESSION.match(session_id):
        raise _bad("params.metadata.session_id must be 1 to 128 letters, digits or ._:@-")
    if not isinstance(agent_id, str) or not _SESSION.match(agent_id):
        raise _bad("params.metadata.agent_id must be 1 to 128 letters, digits or ._:@-")
    request_id = params.get("request_id")
    if not isinstance(request_id, str) or len(request_id) > 64:
        raise _bad("params.request_id must be a UUID")
    try:
        uuid.UUID(request_id)
    except ValueError:
        raise _bad("params.request_id must be a UUID") from None
    if not isinstance(params.get("acs_version"), str):
        raise _bad("params.acs_version is required (0.1.0)")
    if not isinstance(payload, dict):
        raise _bad("params.payload must be an object")
    nonce = params.get("nonce")
    if nonce is not None and (not isinstance(nonce, str) or not 16 <= len(nonce) <= 64):
        raise _bad("params.nonce, when given, must be a string of 16 to 64 characters")
    return Request(rpc_id, method, params, session_id, agent_id, request_id, payload)


def error(rpc_id: object, refused: AcsRefused) -> dict[str, Any]:
    """The JSON-RPC error response for ``refused`` (unsigned)."""
    return {"jsonrpc": "2.0", "id": rpc_id if isinstance(rpc_id, str | int) else None,
            "error": {"code": refused.code, "message": refused.message,
                      "data": {"reason": refused.reason, "message": refused.message,
                               **refused.data}}}
