"""A tool's question for a person: an approval request the session asks, answers and journals.

Why: an MCP server may ask, while it runs a tool, "ask the user this" (``elicitation/create``).
The answer is a person's word given inside a call the chokepoint already admitted, so it goes
where a person's word on a call goes: the approval store, bound to the session and the call,
expiring, and journaled — never a side channel.

Decisions:

- A question is an approval request (``tool`` ``elicitation:<server>``, ``policy_id``
  ``mcp.elicitation``) whose ttl is what is left of the call's time. The answerer (if any) is
  asked first; without one, a person answers with ``tether approvals approve ID --note
  '<JSON object>'`` (the content) or denies it. No answer in time: declined.
- The content is checked by the caller's ``check`` (the requested schema) before it is
  accepted; values under secret-looking keys are journaled masked, every string with the
  session's secrets blanked.
- A proxied call's question may instead be relayed to the client waiting for the call
  (``relay_elicit``), whose answer is untrusted and checked the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from tether.journal.redaction import MASKED
from tether.runtime.approvals.requests import ApprovalError, new_request
from tether.runtime.chokepoint.ask_ledger import AskLedger
from tether.tools.asking import Question, secret_looking
from tether.tools.caller import InputNeeded
from tether.vocabulary import EventType

POLL = 0.2  # seconds between looks at the store for a person's answer



async def elicit(asks: AskLedger, server: str, message: str, schema: Mapping[str, Any],
                 answerer: Callable[[Question], Any] | None,
                 check: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
    """Ask a person (or ``answerer``) ``server``'s question (see ``CallAsks.elicit``), once
    ``asks`` admitted it and with its turn."""
    journal, approvals = asks.session.journal, asks.session.approvals
    ttl = asks.time_left()
    if ttl <= 0:
        journal.append(EventType.ELICITATION_REFUSED, {"call_id": asks.call_id, "server": server,
                                               "reason": "the tool call's time is up"})
        return None
    said, asked = journal.hide_secrets(message), dict(schema)
    shown: dict[str, Any] = {"message": said, "schema": asked}
    request = new_request(
        session_id=asks.session_id, bound_to=asks.session.bound_to, call_id=asks.call_id,
        tool=f"elicitation:{server}", shown=shown, arguments=shown,
        reason=f"MCP server {server!r} asks, during the call of {asks.tool!r}: "
               f"{said}", policy_id="mcp.elicitation", ttl=ttl,
        tenant_id=asks.session.tenant_id)
    approvals.add(request)
    journal.append(EventType.ELICITATION_REQUESTED, {
        "call_id": asks.call_id, "server": server, "approval_id": request.id,
        "message": said, "schema": asked,
        "expires_at": request.expires_at})
    await asks.flush()  # a person can see it before it is answered
    question = Question(server, said, asked, asks.session_id,
                        asks.call_id, asks.tool, request.id, request.expires_at)
    if answerer is not None:
        by = f"answerer:{getattr(answerer, '__qualname__', type(answerer).__name__)}"
        try:
            answer = answerer(question)
            if inspect.isawaitable(answer):
                async with asyncio.timeout(max(0.0, asks.time_left())):
                    answer = await answer
        except Exception as exc:
            return _declined(asks, server, request.id, by, f"the answerer failed "
                             f"({type(exc).__name__}: {exc})")
        if answer is None:
            return _declined(asks, server, request.id, by, "the answerer declined")
    else:
        by, answer = await _person(asks, request.id)
        if answer is None:
            why = "nobody answered in time" if by == "tether" else "a person declined"
            return _declined(asks, server, request.id, by, why)
    try:
        content = check(answer)
    except ValueError as exc:
        return _declined(asks, server, request.id, by, f"the answer does not match the "
                         f"requested schema: {exc}")
    try:
        if approvals.get(request.id) is not None and answerer is not None:
            approvals.approve(request.id, approver=by, note="answered in process")
        current = approvals.get(request.id)
        if current is not None and current.status == "approved":
            approvals.consume(request.id, current.call_hash,
                              by=f"{asks.session_id}/{asks.call_id}")
    except ApprovalError as exc:  # decided by someone else meanwhile, or expired
        return _declined(asks, server, request.id, by, str(exc))
    journal.append(EventType.ELICITATION_ANSWERED, {
        "call_id": asks.call_id, "server": server, "approval_id": request.id,
        "action": "accept", "by": by, "content": _shown(asks, content)})
    return content


async def _person(asks: AskLedger, approval_id: str) -> tuple[str, Any]:
    """Wait for a person's decision on the request: (who, the content) — the content is
    the JSON object in the approval's note, ``{}`` without one; None: denied, or not
    decided in time (who is then ``tether``)."""
    approvals = asks.session.approvals
    while True:
        current = approvals.get(approval_id)
        if current is None:
            return "tether", None
        if current.status == "approved":
            try:
                content = json.loads(current.note) if current.note.strip() else {}
            except ValueError:
                content = current.note  # refused by the schema check, with the reason
            return current.approver or "person", content
        if current.status != "pending":
            return current.approver or "person", None
        left = min(asks.time_left(), current.expires_at - time.time())
        if left <= 0:
            return "tether", None
        await asyncio.sleep(min(POLL, left))


def _declined(asks: AskLedger, server: str, approval_id: str, by: str,
              reason: str) -> dict[str, Any] | None:
    approvals, journal = asks.session.approvals, asks.session.journal
    current = approvals.get(approval_id)
    if current is not None and current.status == "pending":
        with contextlib.suppress(ApprovalError):  # decided meanwhile
            approvals.deny(approval_id, approver=by, note=reason[:500])
    journal.append(EventType.ELICITATION_ANSWERED, {
        "call_id": asks.call_id, "server": server, "approval_id": approval_id,
        "action": "decline", "by": by, "reason": journal.hide_secrets(reason)})
    return None


def _shown(asks: AskLedger, content: Mapping[str, Any]) -> dict[str, Any]:
    """The content as the journal may show it: secret-looking keys masked, the session's
    secrets blanked."""
    def one(key: str, value: Any) -> Any:
        if secret_looking(key):
            return MASKED
        return asks.session.journal.hide_secrets(value) if isinstance(value, str) else value

    return {k: one(k, v) for k, v in content.items()}


async def relay_elicit(asks: AskLedger, server: str, message: str, schema: Mapping[str, Any],
                       check: Callable[[Any], dict[str, Any]], key: str | None = None
                       ) -> dict[str, Any] | None:
    """Ask the call's caller ``server``'s form (see ``CallAsks.relay_elicit``), once ``asks``
    admitted it and with its turn; ``key``, the server's name for the ask, is the caller's
    too."""
    journal = asks.session.journal
    journal.append(EventType.ELICITATION_RELAYED, {
        "call_id": asks.call_id, "server": server,
        "message": journal.hide_secrets(message), "schema": dict(schema)})
    await asks.flush()

    def answered(action: str, **data: Any) -> None:
        journal.append(EventType.ELICITATION_ANSWERED, {
            "call_id": asks.call_id, "server": server, "approval_id": None,
            "action": action, "by": "client", **data})

    try:
        async with asyncio.timeout(max(0.0, asks.time_left())):
            answer = await asks.caller.elicit(message, schema, key=key)
    except InputNeeded as exc:  # a 2026-07-28 client answers on the call's next round
        answered("decline", reason=journal.hide_secrets(str(exc)))
        raise
    except Exception as exc:
        answered("decline", reason="the call's time ran out" if isinstance(
            exc, TimeoutError) else journal.hide_secrets(
            f"the client did not answer: {type(exc).__name__}: {exc}"))
        return None
    action = getattr(answer, "action", None)
    if action != "accept":
        answered("decline", reason=f"the client answered {str(action)[:20]!r}")
        return None
    try:
        content = check(getattr(answer, "content", None))
    except ValueError as exc:
        answered("decline", reason=journal.hide_secrets(
            f"the client's answer does not match the requested schema: {exc}"))
        return None
    answered("accept", content=_shown(asks, content))
    return content
