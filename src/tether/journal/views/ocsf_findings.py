"""OCSF records from outside a session's fold: a broken hash chain, and MCP pin records.

Why apart from ``ocsf``: neither comes from a live session's events — a tamper finding is what
verifying a *stored* journal found, a pin record comes from the pin file (pins are not kept in
the journal) — so only ``tether audit export --format ocsf`` makes them, never the live sink.
They share the session records' envelope (``metadata``, ``product``, profiles) and are as
deterministic: the same journal and the same pin file always give the same records.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tether.journal.views.ocsf import (
    DETECTION_FINDING,
    _Context,
    _control,
    _policy,
    _Record,
    product_version,
)
from tether.types import Event


def tamper_finding(session_id: str, seq: int, kind: str, detail: str, time_ms: int,
                   version: str | None = None) -> dict[str, Any]:
    """A broken hash chain (``tether.journal.tamper.Break``'s fields) as a Detection Finding:
    ``time_ms`` is when the chain was last known good (the break's neighbour's timestamp), so
    the same journal always yields the same finding."""
    version = product_version() if version is None else version
    ctx = _Context()
    stub = Event(seq, "audit.tamper", session_id, time_ms / 1000, {}, "", "")
    record = _Record(version, ctx, stub)._common(DETECTION_FINDING, "Detection Finding", 2,
                                                 "Findings", 1, "Create", 5,
                                                 ("security_control",))
    record["metadata"]["uid"] = f"{session_id}/tamper/{seq}"
    record["metadata"]["event_code"] = "audit.tamper"
    record["time"] = time_ms
    del record["unmapped"]["journal"]["hash"], record["unmapped"]["journal"]["prev_hash"]
    record["unmapped"]["journal"]["type"] = kind
    record["finding_info"] = {
        "uid": f"{session_id}/tamper/{seq}", "title": f"journal hash chain broken: {kind}",
        "desc": detail, "types": ["tamper"],
        "analytic": {"name": "tether journal hash chain verification", "type_id": 1,
                     "type": "Rule"}}
    record["message"] = f"session {session_id}: seq {seq}: {kind}: {detail}"
    record["status_id"], record["status"] = 1, "New"
    return _control(record, 3, 15, alert=True)


def pin_events(pinned: Mapping[str, Any] | None, pending: Mapping[str, Any] | None,
               version: str | None = None) -> list[dict[str, Any]]:
    """An MCP tool's pin record (``Pin.to_dict()``: the definition pinned, and the changed one
    waiting for approval) as API Activity: a pin is an allowed definition; a pending change is
    a blocked one, an alert."""
    version = product_version() if version is None else version
    out = []
    for pin, waiting in ((pinned, False), (pending, True)):
        if pin is None:
            continue
        server, tool = str(pin.get("server")), str(pin.get("tool"))
        ms = _iso_ms(str(pin.get("pinned_at") or ""))
        stub = Event(0, "mcp.pin", f"mcp:{server}", ms / 1000, {}, "", "")
        activity = 3 if waiting and pinned is not None else 1
        r = _Record(version, _Context(), stub)
        approver = pin.get("approved_by")
        user = {"name": str(approver), "type_id": 1, "type": "User"} if approver else None
        record = r.api_activity(activity, "mcp.pin", 3 if waiting else 1, user=user)
        record["time"] = ms
        del record["metadata"]["sequence"], record["unmapped"]["journal"]
        record["metadata"]["uid"] = f"mcp:{server}/{tool}/{pin.get('fingerprint')}"
        record["metadata"]["correlation_uid"] = f"mcp:{server}/{tool}"
        record["metadata"]["event_code"] = "mcp.pin.pending" if waiting else "mcp.pin"
        record["actor"] = {"app_name": f"mcp:{server}", **({"user": user} if user else {})}
        record["src_endpoint"] = {"name": server, "svc_name": "mcp"}
        record["resources"] = [{"name": tool, "type": "mcp tool definition",
                                "uid": str(pin.get("fingerprint"))}]
        record["policy"] = _policy("mcp.pins", type="pin")
        record["message"] = (f"{server}/{tool}: definition changed, blocked until approved"
                             if waiting else f"{server}/{tool}: definition pinned"
                             + (f", approved by {approver}" if approver else " on first use"))
        record["unmapped"] = {"pin": {"server": server, "tool": tool,
                                      "fingerprint": pin.get("fingerprint")}}
        out.append(_control(record, 2 if waiting else 1, 2 if waiting else
                            (8 if approver else 1), alert=waiting))
    return out


def _iso_ms(text: str) -> int:
    try:
        return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0
