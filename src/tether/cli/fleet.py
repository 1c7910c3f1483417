"""``tether fleet``: run and steer a fleet of workers on a DBOS queue (extra ``dbos``).

Why: an operator starts workers, queues sessions, sees which wait for a person and decides for
them from a shell, as with one machine's ``tether approvals`` and ``tether settle``. Each
subcommand is a thin call of ``tether.durable.Fleet`` (or ``tether.durable.worker`` for ``worker``),
so the command line can do nothing the Python API would refuse. DBOS's own tools (its CLI,
Conductor) read the same system database for everything else: listings, queues, schedules.

Exit codes: 0 done; 1 the thing asked about is not there or is refused (an unknown approval
request, a session with nothing to wake or cancel, a session the fleet refuses to run, a
deduplication key still in use); 2 the command could not run (no ``dbos`` extra, an agent
factory that does not load, an unreachable database, an option out of range).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from tether.cli.common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, error, usage
from tether.cli.deciders import add_decider_options, decider
from tether.durable.worker import add_options
from tether.errors import install_command

if TYPE_CHECKING:
    from tether.durable import Fleet

AGENT_HELP = ("the agent factory every worker runs, found as `tether run` finds a recipe: "
              "package.module:function (from the current directory) or path/to/file.py:function")
DB_HELP = "DBOS's system database URL: postgresql://... or sqlite:///path"


def register(commands: Any) -> None:
    fleet: argparse.ArgumentParser = commands.add_parser(
        "fleet", help="a fleet of workers on a DBOS queue",
        description="Sessions as DBOS workflows on a queue that worker processes drain "
        f"({install_command('dbos')}).")
    fleet.set_defaults(run=lambda _args: usage(fleet))
    sub = fleet.add_subparsers(title="subcommands", metavar="SUBCOMMAND")

    worker = sub.add_parser("worker", help="serve the queue until SIGTERM",
                            description="Serve the fleet's queue until SIGTERM (the same as "
                            "python -m tether.durable.worker); prints 'ready ID' once serving.")
    add_options(worker)
    worker.set_defaults(run=run_worker)

    def add(name: str, help: str, run: Any,
            *positional: tuple[str, str]) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
        for dest, text in positional:
            parser.add_argument(dest, help=text)
        parser.add_argument("--agent", required=True, metavar="MODULE:FUNCTION", help=AGENT_HELP)
        parser.add_argument("--db", required=True, metavar="URL", help=DB_HELP)
        parser.add_argument("--queue", default="tether", help="the queue (default: tether)")
        parser.set_defaults(run=run)
        return parser

    enqueue = add("enqueue", "queue a new session; prints its id", run_enqueue,
                  ("task", "what the session is to do"))
    enqueue.add_argument("--session-id", default=None, help="its id (default: a new one)")
    enqueue.add_argument("--priority", type=int, default=None,
                         help=f"1 (first) to {2**31 - 1}; lower runs first")
    enqueue.add_argument("--dedup", default=None, metavar="KEY",
                         help="refused while a session queued with this key waits or runs")
    status = add("status", "print each session's status (or one's), and why where it helps",
                 run_status)
    status.add_argument("session", nargs="?", default=None, help="one session's id")
    add("waiting", "print the sessions waiting for a person", run_waiting)
    for verb in ("approve", "deny"):
        decide = add(verb, f"{verb} a session's approval request, then wake it", run_decide,
                     ("session", "the session id"), ("approval", "the approval request id"))
        add_decider_options(decide)
        decide.add_argument("--note", default="", metavar="TEXT", help="why (recorded)")
        decide.set_defaults(verb=verb)
    add("wake", "queue a paused session's next activation (after a decision made elsewhere)",
        run_wake, ("session", "the session id"))
    add("cancel", "cancel a session's queued or running workflows", run_cancel,
        ("session", "the session id"))
    add("recover", "hand a worker gone for good's unfinished sessions back to the queue",
        run_recover, ("executor", "the dead worker's executor id"))


def run_worker(args: argparse.Namespace) -> int:
    from tether.durable.worker import run

    try:
        code = run(args)
    except ImportError as exc:
        return missing(exc)
    if getattr(args, "process_exits", False):  # the process's own command line: leave now,
        sys.stdout.flush()  # running sessions are DBOS's to recover (tether.durable.worker)
        sys.stderr.flush()
        os._exit(code)
    return code


def missing(exc: ImportError) -> int:
    error(f"{exc}; the fleet needs DBOS: {install_command('dbos')}")
    return EXIT_USAGE


def open_fleet(args: argparse.Namespace) -> Fleet | None:
    try:
        from tether.durable import Fleet

        fleet = Fleet(args.agent, args.db, args.queue)
        fleet.client  # noqa: B018  (reach the database now, to report it here)
    except ImportError as exc:
        missing(exc)
        return None
    except (ValueError, TypeError) as exc:
        error(str(exc))
        return None
    except Exception as exc:  # the database: DBOS raises its own and SQLAlchemy's
        from tether.urls import redact_text

        error(f"cannot reach the fleet's database: {redact_text(str(exc), args.db)}")
        return None
    return fleet


def fleet_command(body: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        fleet = open_fleet(args)
        if fleet is None:
            return EXIT_USAGE
        with fleet:
            code: int = body(fleet, args)
        return code

    return run


@fleet_command
def run_enqueue(fleet: Fleet, args: argparse.Namespace) -> int:
    from tether.durable import AlreadyQueued

    try:
        session_id = fleet.enqueue(args.task, session_id=args.session_id,
                                   priority=args.priority, dedup=args.dedup)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    except AlreadyQueued as exc:
        error(str(exc))
        return EXIT_FINDING
    print(session_id)
    return EXIT_OK


@fleet_command
def run_status(fleet: Fleet, args: argparse.Namespace) -> int:
    activations = fleet.activations(args.session)
    ids = [args.session] if args.session else [a.session_id for a in activations]
    for session_id in dict.fromkeys(ids):
        report = fleet.describe(session_id, [a for a in activations
                                             if a.session_id == session_id])
        print(f"{session_id}  {report.status}" + (f"  {report.detail}" if report.detail else ""))
        if args.session and report.status == "unknown":
            return EXIT_FINDING
    return EXIT_OK


@fleet_command
def run_waiting(fleet: Fleet, args: argparse.Namespace) -> int:
    for session_id, status in fleet.waiting().items():
        detail = fleet.describe(session_id).detail
        print(f"{session_id}  {status}" + (f"  {detail}" if detail else ""))
    return EXIT_OK


@fleet_command
def run_decide(fleet: Fleet, args: argparse.Namespace) -> int:
    from tether.durable import SessionRefused
    from tether.errors import InvalidArgument, UsageError
    from tether.runtime.approvals.requests import ApprovalError

    decide = fleet.approve if args.verb == "approve" else fleet.deny
    try:
        identity, rules = decider(args)
    except (UsageError, InvalidArgument) as exc:
        error(str(exc))
        return EXIT_USAGE
    try:
        woken = decide(args.session, args.approval, approver=identity, note=args.note,
                       rules=rules, break_glass=args.break_glass)
    except (LookupError, ApprovalError, SessionRefused) as exc:
        error(str(exc))
        return EXIT_FINDING
    print(f"{args.verb}d; " + (f"woken as {woken}" if woken else
                               f"the session is {fleet.status(args.session)}"))
    return EXIT_OK


@fleet_command
def run_wake(fleet: Fleet, args: argparse.Namespace) -> int:
    from tether.durable import SessionRefused

    try:
        woken = fleet.wake(args.session)
    except SessionRefused as exc:
        error(f"{exc}; nothing was woken")
        return EXIT_FINDING
    if woken is None:
        report = fleet.describe(args.session)
        error(f"session {args.session} has nothing to wake: {report.status}"
              + (f" ({report.detail})" if report.detail else ""))
        return EXIT_FINDING
    print(woken)
    return EXIT_OK


@fleet_command
def run_cancel(fleet: Fleet, args: argparse.Namespace) -> int:
    cancelled = fleet.cancel(args.session)
    print(f"{cancelled} workflow(s) cancelled")
    return EXIT_OK if cancelled else EXIT_FINDING


@fleet_command
def run_recover(fleet: Fleet, args: argparse.Namespace) -> int:
    for workflow_id in fleet.recover(args.executor):
        print(workflow_id)
    return EXIT_OK
