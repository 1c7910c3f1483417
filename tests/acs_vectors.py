"""The observed agent's side of the ACS wire, and the ACS-Core vector corpus read from its wheel.

Why apart from the tests: tests/test_acs_vectors.py (the corpus) and tests/test_acs_guardian.py
(hostile cases of our own) both drive a real ``tether acs serve`` over HTTP as an observed agent
would. The signing here is written again from the spec (HKDF-SHA256 of the secret, info the
session id; HMAC-SHA256 over the RFC 8785 form of the envelope without its signature), not
imported from tether, so a wrong canonical form or key on tether's side fails the tests instead
of agreeing with itself.

The corpus is agent-evidence-vectors 0.17.9 (Apache-2.0), downloaded by ``make acs-vectors`` into
.cache/acs-vectors (pinned by sha256, git-ignored) and read straight out of the wheel (a zip):
nothing of it is in this repository.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import os
import re
import sys
import uuid
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mcp_peers import printed_url

ROOT = Path(__file__).resolve().parent.parent
VERSION = "0.17.9"
WHEEL = ROOT / f".cache/acs-vectors/agent_evidence_vectors-{VERSION}-py3-none-any.whl"
CORPUS = "agent_evidence_vectors/corpora/vectors-acs-core/"
SECRET = base64.b64encode(b"tether-acs-test-secret-32-bytes!").decode()
HOOKS = ("sessionStart", "agentTrigger", "turnStart", "userMessage", "agentResponse",
         "knowledgeRetrieval", "memoryContextRetrieval", "memoryStore", "toolCallRequest",
         "toolCallResult", "preCompact", "postCompact", "subagentStart", "subagentStop",
         "skillRegister", "skillLoad", "skillUnload", "turnEnd", "sessionEnd")
ALL_METHODS = [f"steps/{h}" for h in HOOKS]
_URL = re.compile(r"at (http://127\.0\.0\.1:\d+/acs)")


def corpus() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The corpus's MANIFEST and its members, read from the wheel."""
    with zipfile.ZipFile(WHEEL) as wheel:
        manifest = json.loads(wheel.read(CORPUS + "MANIFEST.json"))
        members = [json.loads(wheel.read(name)) for name in sorted(wheel.namelist())
                   if name.startswith(CORPUS + "vectors/") and name.endswith(".json")]
    return manifest, members


# -- signing, as the observed agent does it ------------------------------------------------------

def canonical(value: Any) -> bytes:
    import rfc8785

    return rfc8785.dumps(value)


def session_key(session_id: str, secret: str = SECRET) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=session_id.encode()).derive(base64.b64decode(secret))


def _without(envelope: Mapping[str, Any], where: str, omit: Sequence[str]) -> dict[str, Any]:
    body = copy.deepcopy(dict(envelope))
    body[where].pop("signature", None)
    for dotted in omit:  # "metadata.session_id": a path inside params
        *parents, last = dotted.split(".")
        node = body[where]
        for part in parents:
            node = node[part]
        node.pop(last, None)
    return body


def signature_of(envelope: Mapping[str, Any], session_id: str, *, where: str = "params",
                 omit: Sequence[str] = (), secret: str = SECRET) -> str:
    digest = hmac.new(session_key(session_id, secret), canonical(_without(envelope, where, omit)),
                      hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signed(envelope: dict[str, Any], state: str = "VALID", omit: Sequence[str] = (),
           secret: str = SECRET) -> dict[str, Any]:
    """``envelope`` signed as ``state`` says: VALID, INVALID (a MAC of other bytes), ABSENT,
    COVERS_SUBSET (a true MAC of the envelope without the ``omit`` fields)."""
    params = envelope["params"]
    params.pop("signature", None)
    sid = params["metadata"]["session_id"]
    if state == "ABSENT":
        return envelope
    if state == "INVALID":
        value = base64.b64encode(hashlib.sha256(b"not this envelope").digest()).decode()
    else:
        value = signature_of(envelope, sid, omit=omit if state == "COVERS_SUBSET" else (),
                             secret=secret)
    params["signature"] = {"algorithm": "HMAC-SHA256", "value": value, "key_id": sid}
    return envelope


def response_verifies(response: Mapping[str, Any], session_id: str) -> bool:
    """Whether the Guardian's ``response`` carries a true signature under the session key."""
    where = "result" if "result" in response else "error"
    signature = response[where].get("signature")
    if not isinstance(signature, Mapping):
        return False
    want = signature_of(response, session_id, where=where)
    return hmac.compare_digest(signature["value"], want)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def envelope(method: str, payload: Mapping[str, Any], *, session_id: str, agent_id: str,
             request_id: str | None = None, timestamp: str | None = None,
             acs_version: str = "0.1.0", **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": {
        "acs_version": acs_version, "request_id": request_id or str(uuid.uuid4()),
        "timestamp": timestamp or iso(datetime.now(UTC)),
        "metadata": {"session_id": session_id, "agent_id": agent_id, **extra},
        "payload": dict(payload)}}


def hello_payload(methods: Sequence[str] = ALL_METHODS, *, approvers: Sequence[str] = ("human",),
                  versions: Sequence[str] = ("0.1.0",)) -> dict[str, Any]:
    hello: dict[str, Any] = {"acs_versions_supported": list(versions),
                             "methods_implemented": list(methods),
                             "transports_supported": ["http"], "provenance_producer": "none"}
    if approvers:
        hello["approver_types_supported"] = list(approvers)
    return hello


def tool_payload(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": {"name": name}, "arguments": {k: {"value": v} for k, v in arguments.items()}}


def post(url: str, body: Any, *, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
    import httpx

    data = raw if raw is not None else json.dumps(body).encode()
    reply = httpx.post(url, content=data, headers={"content-type": "application/json"},
                       timeout=30.0)
    return reply.status_code, reply.json()


class Agent:
    """One observed agent's session against a Guardian at ``url``."""

    def __init__(self, url: str, agent_id: str = "agent-1", session_id: str | None = None,
                 secret: str = SECRET) -> None:
        self.url, self.agent_id = url, agent_id
        self.session_id = session_id or str(uuid.uuid4())
        self.secret = secret

    def envelope(self, method: str, payload: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return envelope(method, payload, session_id=self.session_id, agent_id=self.agent_id,
                        **options)

    def send(self, message: dict[str, Any], state: str = "VALID") -> dict[str, Any]:
        return post(self.url, signed(message, state, secret=self.secret))[1]

    def hello(self, **options: Any) -> dict[str, Any]:
        return self.send(self.envelope("handshake/hello", hello_payload(**options)))

    def call(self, name: str, arguments: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return self.send(self.envelope("steps/toolCallRequest", tool_payload(name, arguments),
                                       **options))


# -- the Guardian, as a process ------------------------------------------------------------------

@contextmanager
def guardian(policy: Path, store: str, *, tools: Path | None = None, secret: str = SECRET,
             extra: Sequence[str] = ()) -> Iterator[str]:
    """``tether acs serve`` in a subprocess until the block ends; yields its URL."""
    argv = [sys.executable, "-m", "tether", "acs", "serve", "--policy", str(policy),
            "--store", store, "--port", "0", *(["--tools", str(tools)] if tools else []),
            *extra]
    env = {"TETHER_ACS_SECRET": secret,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    with printed_url(argv, env=env, timeout=60, pattern=_URL) as (url, _):
        yield url


# -- a corpus member on the wire -----------------------------------------------------------------

VECTOR_EPOCH = datetime(2026, 9, 9, 12, tzinfo=UTC)  # the corpus's own "now"
NAMESPACE = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


def steps_of(member: Mapping[str, Any]) -> list[dict[str, Any]]:
    payload = member["payload"]
    if "steps" in payload:
        return [step["request"] for step in payload["steps"]]
    return [payload["request"]] if "request" in payload else []


def wire_request(vector: Mapping[str, Any], member: Mapping[str, Any], agent: str,
                 session_id: str, shift: timedelta, fresh_id: bool) -> dict[str, Any]:
    """The abstract request of a member as it goes on the wire."""
    method = str(vector["method"]).replace("hooks/", "steps/", 1)
    params = vector.get("params", {})
    if method == "handshake/hello":
        payload = dict(params)
        if member["payload"].get("approver_capability") != "none":
            payload["approver_types_supported"] = ["human"]
    else:
        tool = params.get("tool", {})
        payload = tool_payload(tool["name"], tool.get("arguments", {}))
    version = "0.1.0" if vector.get("acs") == "0.1" else str(vector.get("acs"))
    extra = {k: v for k, v in vector.get("metadata", {}).items()
             if k not in ("session_id", "agent_id")}
    sent = datetime.fromisoformat(vector["timestamp"]) + shift
    return envelope(method, payload, session_id=session_id, agent_id=agent,
                    request_id=str(uuid.uuid4()) if fresh_id else vector["request_id"],
                    timestamp=iso(sent), acs_version=version, **extra)


def score(member: Mapping[str, Any], answers: Sequence[Mapping[str, Any]]) -> str:
    """PASS, FAIL or FAIL-CODE, as the corpus's own wire harness scores: an accept member passes
    when every answer allows (a ServerHello counts); a reject member when its last answer is an
    error, a deny or a defer — and, when a code is expected, an error with exactly that code."""
    expected = member["expected"]
    if expected["verdict"] == "allow":
        ok = all("result" in a and a["result"].get("decision") == "allow" for a in answers)
        return "PASS" if ok else "FAIL"
    last = answers[-1]
    refused = "error" in last or last["result"].get("decision") in ("deny", "defer")
    if not refused:
        return "FAIL"
    if expected.get("codeValue") is not None:
        return "PASS" if last.get("error", {}).get("code") == expected["codeValue"] else \
            "FAIL-CODE"
    return "PASS"
