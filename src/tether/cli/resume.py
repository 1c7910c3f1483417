"""``tether resume`` and ``tether settle``: continue a stored session from any process.

Why: a session paused for an approval, stopped on an uncertain side effect, or orphaned by a
crash is continued wherever an operator is — not only inside the process that started it.
``resume`` rebuilds the session from its journal (refusing one whose chain is broken) with the
recipe named by ``--agent`` and runs it on: approved calls run once, journaled results are never
re-executed. ``settle`` records an operator's decision on a side-effecting call that started but
left no result — ``retry`` it, or ``skip`` it with a note — after which ``resume`` continues.

Decision: both commands go through the public ``Agent.load`` / ``Session.settle`` /
``Session.resume`` path, so the CLI cannot do anything the Python API would refuse; the output
says what the session is waiting for when it stops again, and the exact command that helps.

Exit codes: 0 the session was resumed (whatever it then stopped for — printed) or the call
settled; 1 the session cannot be resumed or settled (unknown, ended, tampered, not an
interrupted call, or the run raised); 2 the command could not run (bad ``--agent``, no store);
128 + N signal N interrupted the resumed run, which paused again (``tether.cli.interrupts``).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    full_session_id,
    open_existing,
    store_url,
)
from tether.cli.interrupts import Interrupts, report
from tether.cli.next_steps import continue_commands, session_store, uncertain
from tether.urls import redact_url

if TYPE_CHECKING:
    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.lifecycle.session import Session
    from tether.runtime.record.result import Result

AGENT_HELP = ("the Agent recipe: MODULE:ATTRIBUTE (e.g. myapp.agents:refund_agent) or "
              "path/to/file.py:ATTRIBUTE; an attribute may also be a function returning one")


def register(commands: Any) -> None:
    resume: argparse.ArgumentParser = commands.add_parser(
        "resume", help="continue a stored session",
        description="Continue a paused or crashed session from its journal with its recipe.")
    resume.add_argument("session", metavar="ID")
    resume.add_argument("--agent", required=True, metavar="MODULE:ATTR", help=AGENT_HELP)
    resume.add_argument("--accept-recipe-change", action="store_true",
                        help="resume even though the recipe (agent name, tools or policy) "
                        "differs from the one that started the session")
    add_store_option(resume)
    resume.set_defaults(run=run_resume)

    settle: argparse.ArgumentParser = commands.add_parser(
        "settle", help="decide an interrupted side effect",
        description="Decide a side-effecting call that started but left no result: retry runs "
        "it again on resume, skip tells the model it was not repeated. Then `tether resume`.")
    settle.add_argument("session", metavar="ID")
    settle.add_argument("call_id", metavar="CALL_ID")
    settle.add_argument("action", choices=["retry", "skip"])
    settle.add_argument("--operator", required=True, metavar="NAME",
                        help="who decides (journaled)")
    settle.add_argument("--note", default="", metavar="TEXT", help="why (journaled)")
    settle.add_argument("--agent", required=True, metavar="MODULE:ATTR", help=AGENT_HELP)
    add_store_option(settle)
    settle.set_defaults(run=run_settle)


def bound_recipe(args: argparse.Namespace, *, create: bool = False) -> Agent | None:
    """The recipe ``--agent`` (or ``agent``) names, bound to the command's store unless it has
    its own; None after saying why not. ``create``: a SQLite store that does not exist yet is
    made (a run writes a journal; the other commands only read or continue one)."""
    from tether.cli.recipe import RecipeError, load_recipe
    from tether.cli.telemetry import with_environment_telemetry
    from tether.store.base import StoreError
    from tether.store.opening import open_store

    try:
        agent = with_environment_telemetry(load_recipe(args.agent))
    except RecipeError as exc:
        error(str(exc))
        return None
    own = agent.journal_store
    if own is not None:
        if args.store is not None and redact_url(args.store) != own.url:
            error(f"the recipe has its own store ({own.url}) and --store names another "
                  f"({redact_url(args.store)}); refusing rather than choosing one: drop --store "
                  "to use the recipe's, or build the recipe without a store so --store decides")
            return None
        return agent
    if create:
        try:
            return agent.with_store(open_store(store_url(args.store)))
        except StoreError as exc:
            error(str(exc))
            return None
    store = open_existing(args.store)
    return None if store is None else agent.with_store(store)


def _load(agent: Agent, session_id: str, accept_recipe_change: bool = False) -> Session | None:
    from tether.journal.views.erased import not_resumable
    from tether.runtime.lifecycle.session import JournalTampered, RecipeChanged
    from tether.runtime.provenance.recalled import HiddenNotRecalled

    try:
        store = agent.journal_store
        if store is not None:
            session_id = full_session_id(store, session_id, agent.tenant_id)
            events = store.read(session_id)[:1]
            tenant = (events[0].data.get("subject") or {}).get("tenant_id") if events else None
            never = not_resumable(events)  # erased, or an erasure record
            if never is not None and agent.tenant_id in (None, tenant):  # another's: not found
                error(never)
                return None
        return agent.load(session_id, accept_recipe_change=accept_recipe_change)
    except (JournalTampered, RecipeChanged, HiddenNotRecalled) as exc:
        error(str(exc))
    except LookupError as exc:
        error(f"{exc.args[0] if exc.args else exc}; `tether audit list` shows the stored "
              "sessions")
    return None


def run_resume(args: argparse.Namespace) -> int:
    agent = bound_recipe(args)
    if agent is None:
        return EXIT_USAGE
    session = _load(agent, args.session, args.accept_recipe_change)
    if session is None:
        return EXIT_FINDING
    from tether.store.base import SessionBusy

    # a signal pauses the resumed run again
    with Interrupts(process_exits=getattr(args, "process_exits", False)) as interrupts:
        interrupts.resume_options = f" --agent {args.agent}{session_store(session, args.store)}"
        try:
            result = asyncio.run(interrupts.run(session, session.aresume))
        except (RuntimeError, SessionBusy) as exc:  # not resumable now, or running elsewhere
            error(str(exc))
            return EXIT_FINDING
        except Exception as exc:
            error(f"the resumed run raised {type(exc).__name__}: {exc}; it is journaled "
                  f"(`tether audit show {session.id}`)")
            return EXIT_FINDING
        if interrupts.signal is not None and (result is None or session.paused):
            return report(interrupts.signal, session, args)
    assert result is not None
    _print_result(result, session, args)
    return EXIT_OK


def _print_result(result: Result, session: Session, args: argparse.Namespace) -> None:
    print(f"stop reason: {result.stop_reason.value}")
    print(f"answer: {result.answer}")
    if result.notice:
        print(f"notice: {result.notice}")
    if result.stop_reason.value == "needs_approval":
        for request in session.pending_approvals():
            print(f"waiting: {request.id} {request.tool} (call {request.call_id}): "
                  f"{request.reason}")
    elif result.stop_reason.value == "uncertain_effect":
        for call_id in uncertain(session.replay()):
            print(f"interrupted: {call_id}: may or may not have taken effect")
    for command in continue_commands(session, args.agent, session_store(session, args.store)):
        print(f"next: {command}")  # ids, recipe and store filled in


def run_settle(args: argparse.Namespace) -> int:
    if not args.operator.strip():
        error("--operator must name who decides")
        return EXIT_USAGE
    agent = bound_recipe(args)
    if agent is None:
        return EXIT_USAGE
    session = _load(agent, args.session)
    if session is None:
        return EXIT_FINDING
    from tether.store.base import SessionBusy

    try:
        session.settle(args.call_id, args.action, operator=args.operator, note=args.note)
    except (RuntimeError, SessionBusy) as exc:  # it ended, or it runs elsewhere now
        error(str(exc))
        return EXIT_FINDING
    except ValueError as exc:
        waiting = uncertain(session.replay())
        hint = (f"interrupted calls of this session: {', '.join(waiting)}" if waiting
                else "this session has no interrupted calls to settle")
        error(f"{exc}; {hint}")
        return EXIT_FINDING
    print(f"settled {args.call_id}: {args.action} by {args.operator}")
    print(f"next: tether resume {session.id} --agent {args.agent}"
          f"{session_store(session, args.store)}")
    return EXIT_OK
