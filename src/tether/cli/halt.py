"""``tether halt``, ``unhalt`` and ``halts``: stop a fleet from a shell, and let it go on.

Why: the person who runs many agents on one store needs one command that stops some or all of
them, in every process, and says who did it and why. The halt is a store record
(``tether.store.halts``); the agents' own chokepoints obey it (``tether.runtime.chokepoint.
halts``), so nothing needs to reach the workers.

Decision: a thin face over ``halt`` / ``unhalt`` / ``standing``. The selectors name the sessions
covered: ``--session ID``, ``--agent NAME``, ``--tenant T`` (combinable: ``--agent a --tenant t``
is agent a's sessions of tenant t), or ``--all``. The person is the OS account running the
command (``os-user``), as for approvals (``tether.cli.deciders``). Unhalting lifts by id
(``--id``) or by the exact selectors the halt was issued with; halted sessions are then resumed
as any paused one (``tether resume``).

Exit codes: 0 done; 1 nothing to lift; 2 the command could not run (bad usage, no store).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    open_existing,
)

if TYPE_CHECKING:
    from tether.store.halts import Halt, HaltScope


def _selectors(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", metavar="ID", help="the session with this id")
    parser.add_argument("--agent", metavar="NAME", help="every session of this agent")
    parser.add_argument("--tenant", metavar="T", help="every session of this tenant")
    parser.add_argument("--all", action="store_true", help="every session on the store")
    add_store_option(parser)


def register(commands: Any) -> None:
    halting = commands.add_parser(
        "halt", help="halt sessions: no side effect starts, every covered session pauses",
        description="Halt the sessions the selectors cover, in every process on the store: "
        "from the halt's commit no side-effecting call of theirs starts; model calls and "
        "read-only calls stop within 1 s; each pauses 'halted'.")
    _selectors(halting)
    halting.add_argument("--reason", default="", metavar="TEXT", help="why (journaled)")
    halting.set_defaults(run=run_halt)
    lifting = commands.add_parser(
        "unhalt", help="lift a halt (then resume the halted sessions)",
        description="Lift a standing halt, by its id or by the selectors it was issued with. "
        "Halted sessions go on when resumed (tether resume), exactly once.")
    lifting.add_argument("--id", metavar="HALT", help="the halt's id (halt_...)")
    _selectors(lifting)
    lifting.set_defaults(run=run_unhalt)
    listing = commands.add_parser("halts", help="list standing halts",
                                  description="List the standing halts (with --lifted, the "
                                  "lifted ones too).")
    listing.add_argument("--lifted", action="store_true", help="include lifted halts")
    add_store_option(listing)
    listing.set_defaults(run=run_list)


def _scope(args: argparse.Namespace) -> HaltScope | None:
    """The scope the selectors name; None (after saying why) when they name none or clash."""
    from tether.store.halts import HaltScope

    named = any((args.session, args.agent, args.tenant))
    if named == bool(args.all):
        error("name what to halt: --session ID, --agent NAME and/or --tenant T, or --all "
              "(--all with no other selector)")
        return None
    return HaltScope(args.session, args.agent, args.tenant)


def _line(halt: Halt) -> str:
    lifted = "" if halt.standing else f"  lifted by {halt.lifted_by} ({halt.lifted_method})"
    return (f"{halt.id}  {halt.scope}  by {halt.by} ({halt.by_method})  "
            f"{halt.reason or '(no reason)'}{lifted}")


def run_halt(args: argparse.Namespace) -> int:
    from tether.runtime.approvals.identity import os_identity
    from tether.runtime.chokepoint.halts import halt

    scope = _scope(args)
    store = open_existing(args.store) if scope is not None else None
    if store is None:
        return EXIT_USAGE
    try:
        made = halt(store, scope, reason=args.reason, by=os_identity())
    finally:
        store.close()
    print(f"halted: {_line(made)}")
    print(f"lift it with: tether unhalt --id {made.id}, then resume the halted sessions")
    return EXIT_OK


def run_unhalt(args: argparse.Namespace) -> int:
    from tether.errors import NotFound
    from tether.runtime.approvals.identity import os_identity
    from tether.runtime.chokepoint.halts import unhalt

    scope = None
    if args.id is None:
        scope = _scope(args)
        if scope is None:
            return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        lifted = unhalt(store, args.id, scope=scope, by=os_identity())
    except NotFound as exc:
        error(str(exc))
        return EXIT_FINDING
    finally:
        store.close()
    for one in lifted:
        print(f"lifted: {_line(one)}")
    print("resume each halted session to let it go on: tether resume ID --agent MODULE:ATTR")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        halts = store.list_halts(standing=not args.lifted)  # type: ignore[attr-defined]
    finally:
        store.close()
    for one in halts:
        print(_line(one))
    if not halts:
        print("no standing halts" if not args.lifted else "no halts")
    return EXIT_OK
