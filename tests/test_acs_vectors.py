"""The ACS-Core conformance corpus (agent-evidence-vectors 0.17.9) against ``tether acs serve``.

Every member whose subject is a request a Guardian answers runs on the wire, over HTTP, against
a real Guardian process (tests/acs_vectors.py is the observed agent). A member's abstract request
is made a wire request: ``hooks/X`` is ``steps/X``, ``acs: "0.1"`` is ``0.1.0``, its arguments are
wrapped as ``{value}``, its session id is a UUID of its own (uuid5 of member and session, so one
member's state never meets another's) and its agent ids are namespaced by member. Its
substrate fields are honoured, never ignored:

- ``signature_state``: VALID (the default) is a real HMAC-SHA256 under the session key derived
  from the shared secret; INVALID a MAC of other bytes; ABSENT no signature; COVERS_SUBSET a
  true MAC of the envelope without ``signed_fields_omitted``.
- the clock: every timestamp is shifted by (now - the member's ``guardian_clock``, else the
  corpus's own 2026-09-09T12:00:00Z), so a member one hour old is one hour old to the Guardian.
- a handshake first (a ClientHello of every hook) unless the member's first step is one;
  ``approver_capability: none`` declares no approver types, any other member declares ``human``.
- ``intent``: sent as the session's ``steps/sessionStart`` Intent, the way an agent fixes it.
- ``policy.budget`` (3 calls of ``records.lookup``): a quota in the Guardian's own policy file
  (per agent; each member's agents are its own).
- ``approval``: a request bound to the issuing agent, tool and arguments, created and approved
  in tether's own approval store (the store the Guardian reads) before the member runs.
- ``policy_verdict_before_mapping: escalate`` (va200b64093301e14): a second Guardian whose
  policy requires approval for the tool.
- ``approver_response`` (vfcab242ddb38d018, an approver answering ASK): a third Guardian whose
  approver (``--approver``, tests/acs_approvers.py) answers the member's response.

Scoring is the corpus's wire harness's: an accept member passes when every answer allows (a
ServerHello counts); a reject member when its last answer is an error, a deny or a defer, and,
when the member names a code, an error with exactly that code. Every answer that is not a
refusal of an unverifiable request must carry a true signature (checked here too).

Deviations, each deliberate:

- acs-f-7 (v699f3f41215849ca, v448a61c91554a125, v10351021bf6e46b1) sends three or four
  byte-identical steps under one request_id. A Guardian must refuse a repeated request_id
  (§10.3, the corpus's own acs-f-2), so here each step gets a fresh request_id: otherwise the
  accept member v699f fails on replay and the budget members are refused for replay (-32005)
  rather than for the budget they test.
- v100f74962fbb8b94 (an approval issued to agent-A presented by agent-B): over the wire an
  agent presents no approval, so "presented" is agent-B sending the very call (tool and
  arguments) agent-A's approval stands for; tether refuses it -32003
  (``approval_issued_to_another``) rather than asking a person again. Its twin vff6b4d46f470f2ad
  (agent-A sends it) is allowed.

Not run, each with its reason (a test holds this list to the corpus):

- no request on the wire — a verifier's, framework's or deployment's artifact, not a Guardian's
  answer: v0c6dcb9ff13af3c9 (a shell action no hook saw), v221edeb22c4e8634, v4f75a079844635af,
  v6daaec0f6f0c8a14, v986429a577e03404 (sealed chains and witnessed heads), v25f01d8fe1e91bf5,
  v7b0b32fb369136c1 (what a response signature covers), v3c03d4e4ce213e9c, v8557c978bf12ca55
  (ACS-Audit's request_hash), v3232493ab40ae031, v53ef0aaa91303587, v855c3b68b325eec1,
  vd8ac84523a5a038c (who signed a head, and what it is presented as), va2fea96983583972,
  vd57793caa251dec6 (provenance records);
- the observed agent's or the deployment's role: va8eebd3334b97257 (a 504 page read as an
  answer), va0ee5d0830b0490b, vfdd68340c2094962 (a fail-open step's audit event),
  va00ef569d09bf7d5 (a trace sink changing a disposition);
- indeterminate by the corpus's own verdict: v82b6d110b4d68e7c (revocation),
  v9f011986566cb7bc (an HMAC head's signer).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acs_approvers import answers_ask
from acs_vectors import (
    VECTOR_EPOCH,
    WHEEL,
    Agent,
    corpus,
    envelope,
    guardian,
    post,
    response_verifies,
    score,
    signed,
    steps_of,
    wire_request,
)
from conftest import import_or_unavailable, unavailable

import_or_unavailable("rfc8785", "acs")
if not WHEEL.exists():
    unavailable(f"{WHEEL.name} is not downloaded: make acs-vectors")

MANIFEST, MEMBERS = corpus()
ROLES = {row["id"]: row["role"] for row in MANIFEST["requirements"]}
NOT_A_GUARDIAN = {"agent", "deployment"}
FRESH_IDS = {"acs-f-7"}

CORE_POLICY = """\
version: 1
policy_id: acs-vectors
default: allow
rules:
  - id: writes-need-a-person
    effect: require_approval
    when: {tool: records.write}
  - id: reads
    effect: allow
    when: {tool: {in: [records.lookup, records.read, records.delete]}}
quotas:
  - {id: lookups, tool: records.lookup, limit: 3, window: 1h, per: agent}
"""
# the member's approver_response, {"decision": "ASK"}, is what this approver answers
ASKS = f"{Path(__file__).parent / 'acs_approvers.py'}:answers_ask"
ESCALATE_POLICY = """\
version: 1
policy_id: acs-vectors-escalate
default: allow
rules:
  - id: lookups-need-a-person
    effect: require_approval
    when: {tool: records.lookup}
"""


def why_not_run(member: Mapping[str, Any]) -> str | None:
    if member["kind"] == "indeterminate":
        return f"indeterminate: {member['expected']['unmeasurableBecause'][:80]}..."
    if not steps_of(member):
        return "no request on the wire: " + ", ".join(sorted(member["payload"]))[:80]
    roles = {ROLES[r] for r in member["requirements"]}
    if roles <= NOT_A_GUARDIAN:
        return f"tests the {'/'.join(sorted(roles))}, not the Guardian's answer"
    return None


RUN = [m for m in MEMBERS if why_not_run(m) is None]


def test_the_corpus_is_the_pinned_one_and_every_member_is_accounted_for() -> None:
    assert MANIFEST["suite"] == "acs-core-negative-conformance"
    assert MANIFEST["counts"]["accept"] == 15 and MANIFEST["counts"]["reject"] == 26
    assert len(MEMBERS) == 43
    not_run = {m["id"]: why_not_run(m) for m in MEMBERS if why_not_run(m) is not None}
    assert len(RUN) == 22 and len(not_run) == 21, not_run
    assert {m["id"] for m in RUN} | set(not_run) == {m["id"] for m in MEMBERS}
    listed = set(re.findall(r"v[0-9a-f]{16}", __doc__.split("Not run,")[1]))
    assert listed == set(not_run)  # the docstring names each member not run


@pytest.fixture(scope="module")
def guardians(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("acs-vectors")
    core, escalate = base / "core.yaml", base / "escalate.yaml"
    core.write_text(CORE_POLICY)
    escalate.write_text(ESCALATE_POLICY)
    core_store, escalate_store = f"sqlite:///{base}/core.db", f"sqlite:///{base}/escalate.db"
    approver_store = f"sqlite:///{base}/approver.db"
    with guardian(core, core_store) as core_url, \
            guardian(escalate, escalate_store) as escalate_url, \
            guardian(core, approver_store, extra=("--approver", ASKS)) as approver_url:
        yield {"core": (core_url, core_store), "escalate": (escalate_url, escalate_store),
               "approver": (approver_url, approver_store)}


def _agent(member: Mapping[str, Any], name: str | None) -> str:
    return f"{name or 'agent'}.{member['id'][:9]}"


def _seed_approval(store_url: str, member: Mapping[str, Any], vector: Mapping[str, Any]) -> None:
    """The member's approval, in tether's approval store: bound to the agent it was issued
    for, the tool and the arguments, and approved by its approver."""
    from tether.runtime.approvals.requests import StoredApprovals, new_request
    from tether.store.opening import open_store

    approval = member["payload"]["approval"]
    issued = approval["issued_for"]
    arguments = dict(vector["params"]["tool"]["arguments"])
    store = open_store(store_url)
    try:
        approvals = StoredApprovals(store)
        request = new_request(session_id="acs-vectors-seed", call_id="seed",
                              bound_to=f"client::{_agent(member, issued['agent_id'])}",
                              tool=issued["tool"], shown=arguments, arguments=arguments,
                              reason="seeded by the vector harness", policy_id="acs-vectors",
                              ttl=3600)
        approvals.add(request)
        approvals.approve(request.id, approver=approval["approver"]["id"])
    finally:
        store.close()


def run_member(member: Mapping[str, Any], guardians: Mapping[str, Any]) -> list[dict[str, Any]]:
    payload = member["payload"]
    which = ("escalate" if "policy_verdict_before_mapping" in payload
             else "approver" if "approver_response" in payload else "core")
    url, store_url = guardians[which]
    steps = steps_of(member)
    first = steps[0]
    agent = _agent(member, first.get("metadata", {}).get("agent_id"))
    session_id = str(uuid.uuid5(uuid.UUID(int=0),
                                f"{member['id']}:{first['metadata']['session_id']}"))
    clock = payload.get("guardian_clock")
    reference = datetime.fromisoformat(clock) if clock else VECTOR_EPOCH
    shift = datetime.now(UTC) - reference
    setup = Agent(url, agent, session_id)
    if not str(first["method"]).startswith("handshake/"):
        approvers = () if payload.get("approver_capability") == "none" else ("human",)
        assert "result" in setup.hello(approvers=approvers)
    if "intent" in payload:
        answer = setup.send(setup.envelope("steps/sessionStart", {"intent": payload["intent"]}))
        assert answer["result"]["decision"] == "allow", answer
    if "approval" in payload:
        _seed_approval(store_url, member, first)
    if "approver_response" in payload:  # the approver the third Guardian runs answers it
        assert answers_ask(None) == payload["approver_response"]
    answers = []
    for vector in steps:
        message = wire_request(vector, member, agent, session_id, shift,
                               fresh_id=member["family"] in FRESH_IDS)
        answer = post(url, signed(message, payload.get("signature_state", "VALID"),
                                  payload.get("signed_fields_omitted", ())))[1]
        if "result" in answer or "signature" in answer.get("error", {}):
            assert response_verifies(answer, session_id), answer
        answers.append(answer)
    return answers


@pytest.mark.parametrize("member", RUN, ids=[m["id"] for m in RUN])
def test_member(member: Mapping[str, Any], guardians: Mapping[str, Any]) -> None:
    answers = run_member(member, guardians)
    verdict = score(member, answers)
    assert verdict == "PASS", (member["expected"], answers)


def test_a_step_with_the_members_own_unsigned_placeholder_is_refused(
        guardians: Mapping[str, Any]) -> None:
    """The corpus ships every request with the placeholder signature "AAAA": sent as it is
    (after a true handshake) it is refused as SIGNATURE_INVALID, so the members above pass by
    their real signatures, not because nothing is checked."""
    url, _ = guardians["core"]
    agent = Agent(url, "placeholder")
    agent.hello()
    message = envelope("steps/toolCallRequest", {"tool": {"name": "records.lookup"},
                                                 "arguments": {"id": {"value": "c-1"}}},
                       session_id=agent.session_id, agent_id="placeholder")
    message["params"]["signature"] = {"algorithm": "HMAC-SHA256", "key_id": "k1",
                                      "value": "AAAA"}
    assert post(url, message)[1]["error"]["code"] == -32004
