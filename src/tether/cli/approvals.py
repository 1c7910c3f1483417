"""``tether approvals list|approve|deny``: decide paused calls from a shell.

Why: a session that needs an approval pauses durably; the person who decides is rarely at the
process that paused it. These commands act on the approval records in the store the agents
write to, so a call paused by one worker is decided here and run by whichever worker resumes the
session (``tether resume`` or ``agent.resume``).

Decision: the commands are a thin face over ``StoredApprovals`` and, for a decision,
``tether.runtime.approvals.deciding.decide`` — the path the web console takes: the same checks
(the request as its journal asked for it, single decision, no approving after expiry, the
approval rules of ``--rules``) and the same messages. The decider is the OS account running the
command, or a name given with ``--unauthenticated`` (``tether.cli.deciders``). Approving never
runs anything; the output says how to resume. A pending request that has expired can still be
*denied*, which records who closed it and why — the session would refuse it either way.

Exit codes: 0 done; 1 the request is unknown, already decided, or expired (for approve);
2 the command could not run (bad usage, no store).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    add_tenant_option,
    error,
    expand_id,
    full_session_id,
    note,
    open_existing,
    tenant_scope,
    usage,
)
from tether.cli.deciders import add_decider_options, decider
from tether.journal.views.resume_line import PLACEHOLDER, resume_command
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.approvals.requests import ApprovalRequest
    from tether.types import Event


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "approvals", help="list, approve and deny paused calls",
        description="List, approve and deny calls that wait for a person.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="approvals commands", metavar="COMMAND")

    listing = sub.add_parser("list", help="list approval requests",
                             description="List pending approval requests (with --all, "
                             "decided ones too).")
    add_store_option(listing)
    add_tenant_option(listing)
    listing.add_argument("--session", metavar="ID",
                         help="only this session's requests (its id, or any unique start of it)")
    listing.add_argument("--all", action="store_true",
                         help="include approved, denied and used requests")
    listing.set_defaults(run=run_list)

    for name, verb in (("approve", "approve"), ("deny", "deny")):
        decide = sub.add_parser(name, help=f"{verb} a pending request",
                                description=f"{verb.capitalize()} a pending approval request. "
                                "The session runs (or refuses) the call when it is resumed.")
        decide.add_argument("id", metavar="ID", help="the approval id (apr_...)")
        add_decider_options(decide)
        decide.add_argument("--note", default="", metavar="TEXT",
                            help="why (journaled with the call)")
        add_store_option(decide)
        add_tenant_option(decide)
        decide.set_defaults(run=run_decide, decision=name)


def run_list(args: argparse.Namespace) -> int:
    from tether.journal.views.erased import erased_sessions
    from tether.runtime.approvals.requests import StoredApprovals

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        approvals = StoredApprovals(store, tenant_scope(args))
        if args.session is not None:
            args.session = full_session_id(store, args.session, args.tenant)
        requests = approvals.every(args.session) if args.all else approvals.pending(args.session)
        erased = erased_sessions(store) if requests else {}
    finally:
        store.close()
    if not requests:
        print("no approval requests" if args.all else "no pending approval requests")
        return EXIT_OK
    for request in requests:
        print(describe(request, erased=request.session_id in erased))
    return EXIT_OK


def describe(request: ApprovalRequest, *, erased: bool = False) -> str:
    """One request in two lines; ``erased``: its session was erased (nothing will resume it)."""
    from tether.journal.views.timeline import call_text, when

    state: str = request.status
    if state == "pending" and request.expired():
        state = "expired"
    by = f" by {request.approver}" if request.approver else ""
    why = f" ({request.note})" if request.note else ""
    how = f" [{request.approver_auth}{', break-glass' if request.break_glass else ''}]" if (
        request.approver_auth) else ""
    session = f"{request.session_id} (erased)" if erased else request.session_id
    tried = ""
    if request.attempts:
        last = request.attempts[-1]
        tried = (f"\n    {len(request.attempts)} refused attempt(s); the last by "
                 f"{last.get('who')} ({last.get('method')}): {last.get('why')}")
    return (f"{request.id}  {state}{by}{why}{how}  session {session}  call "
            f"{request.call_id}  {call_text(request.tool, request.arguments)}\n"
            f"    {request.reason or 'no reason given'} ({request.policy_id}); requested "
            f"{when(request.requested_at)}, expires {when(request.expires_at)}{tried}")


def run_decide(args: argparse.Namespace) -> int:
    from tether.errors import InvalidArgument, UsageError
    from tether.journal.views.erased import not_resumable
    from tether.runtime.approvals.deciding import decide
    from tether.runtime.approvals.requests import ApprovalError, StoredApprovals

    try:
        identity, rules = decider(args)
    except (UsageError, InvalidArgument) as exc:
        error(str(exc))
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    approvals = StoredApprovals(store, identity.tenant_id)
    try:
        args.id = expand_id(args.id, (r.id for r in approvals.every(None)), "approval")
        before = approvals.get(args.id)
        decided = decide(store, args.id, "approve" if args.decision == "approve" else "deny",
                         identity=identity, note=args.note,
                         rules=rules, break_glass=args.break_glass)
        start = store.read(decided.session_id)[:1]
        client = gateway_client(start)
    except ApprovalError as exc:
        error(str(exc))
        return EXIT_FINDING
    finally:
        store.close()
    if before is not None and before.expired():
        note(f"{args.id} had already expired; the session would have refused the call anyway")
    verb = "approved" if decided.status == "approved" else "denied"
    glass = ", breaking glass" if decided.break_glass else ""
    print(f"{verb} {decided.id}: {decided.tool} in session {decided.session_id} (call "
          f"{decided.call_id}), by {decided.approver} ({decided.approver_auth}{glass})")
    never = not_resumable(start)
    if never is not None:  # erased: no resume will run or refuse the call
        print(f"the decision is recorded, but {never}")
    elif client is not None:  # a gateway's call: its client runs it by calling again
        print(f"the client ({client}) can now make the same call again, in this MCP session or "
              f"a new one; {'it runs once' if verb == 'approved' else 'it is refused'}")
    else:
        command = resume_command(decided.session_id, start, store.url)
        print(f"resume the session to {'run' if verb == 'approved' else 'refuse'} the call: "
              f"{command}" + (" (MODULE:ATTR: the recipe that started it; it was not started "
                              "by `tether run`, which records it)"
                              if f"--agent {PLACEHOLDER}" in command else ""))
    return EXIT_OK


def gateway_client(start: Sequence[Event]) -> str | None:
    """The client whose tool gateway (an MCP server's, say) made the session whose first
    event(s) are ``start``, if one did."""
    first = next(iter(start), None)
    if (first is None or first.type != EventType.SESSION_START
            or first.data.get("agent") != "gateway"):
        return None
    return str((first.data.get("context") or {}).get("client") or "client")
