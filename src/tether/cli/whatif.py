"""``tether what-if --policy``: what would another policy have decided about the calls we made?

Why: before a policy change ships, the people who own it want its effect on real traffic, not on
hand-written cases: which stored calls would now be refused, held for approval, or let through.
The command replays every recorded decision of the chosen sessions against the new policy and
lists each call whose decision would change, with the old and new effect and policy id.

Decision: the logic is ``tether.journal.views.whatif`` (usable from Python); this is its face. It
is not ``tether.runtime.rerun`` (Python's ``rerun()`` re-executes a whole recorded session with
today's runtime): this asks a policy only, nothing else runs. A
session whose hash chain is broken is not replayed — its record cannot be trusted — and is
reported, as are decisions made on arguments the journal masked (the new policy saw
``[masked]``). The policy is a YAML file, or ``MODULE:ATTR`` naming a Python policy object.

Exit codes: 0 no decision would change; 1 some decision would change, or a session could not be
replayed because its chain is broken; 2 the command could not run (bad usage, a policy that does
not load, no store).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    add_tenant_option,
    error,
    full_session_id,
    open_existing,
    parse_time,
)
from tether.errors import InvalidArgument

if TYPE_CHECKING:
    from tether.policy.base import Policy


def register(commands: Any) -> None:
    what_if: argparse.ArgumentParser = commands.add_parser(
        "what-if", help="ask another policy every stored decision",
        description="Replay every stored tool decision of the chosen sessions against another "
        "policy and list each call whose decision would change. Exit 1 if any would.")
    what_if.add_argument("--policy", required=True, metavar="FILE",
                       help="the policy to ask: a YAML file, or MODULE:ATTR naming a policy "
                       "object")
    what_if.add_argument("--since", metavar="WHEN", type=parse_time,
                       help="only sessions written since: 7d, 12h, 2025-01-31, ...")
    what_if.add_argument("--session", metavar="ID",
                         help="only this session (its id, or any unique start of it)")
    add_store_option(what_if)
    add_tenant_option(what_if)
    what_if.set_defaults(run=run_what_if)


def load_any_policy(spec: str) -> Policy:
    """A YAML policy file, or an importable object with ``evaluate``; ValueError if neither."""
    from tether.policy.yaml_policy import load_policy
    from tether.policy.yaml_source import PolicyLoadError

    if spec.endswith((".yaml", ".yml", ".json")) or ":" not in spec:
        try:
            return load_policy(spec)
        except PolicyLoadError as exc:
            raise InvalidArgument(str(exc)) from None
    from tether.cli.recipe import RecipeError
    from tether.references import import_object

    try:
        value = import_object(spec, "a policy object")
    except RecipeError as exc:
        raise InvalidArgument(str(exc)) from None
    if isinstance(value, type):  # a policy class that needs no arguments, e.g. AllowAll
        try:
            value = value()
        except TypeError as exc:
            raise InvalidArgument(f"{spec} is a class that cannot be built without arguments "
                                  f"({exc}); name a policy object") from None
    if not callable(getattr(value, "evaluate", None)):
        raise InvalidArgument(f"{spec} has no evaluate(subject, action, resource, context) method")
    policy: Policy = value
    return policy


def run_what_if(args: argparse.Namespace) -> int:
    from tether.journal.erasure import vouched
    from tether.journal.tamper import diagnose
    from tether.journal.views.timeline import when
    from tether.journal.views.whatif import describe, replay_decisions

    try:
        policy = load_any_policy(args.policy)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    changed = decisions = sessions = 0
    skipped: list[str] = []
    try:
        infos = [i for i in store.sessions(since=args.since)
                 if args.tenant is None or i.tenant_id == args.tenant]
        if args.session is not None:
            args.session = full_session_id(store, args.session, args.tenant)
            infos = [i for i in infos if i.session_id == args.session]
            if not infos:
                error(f"no session {args.session!r} in {store.url}"
                      + (" written in that time" if args.since is not None else ""))
                return EXIT_FINDING
        for info in infos:
            events = store.read(info.session_id)
            broken = diagnose(info.session_id, events, recorded=info.events,
                              erased=vouched(events, store.read))
            if broken is not None:
                skipped.append(info.session_id)
                print(f"skipped {broken}; run `tether audit verify`", file=sys.stderr)
                continue
            outcome = replay_decisions(events, policy)
            sessions += 1
            decisions += outcome.decisions
            for change in outcome.changes:
                changed += 1
                masked = (f"\n    note: {', '.join(change.masked)} masked in the journal; the "
                          "new policy saw [masked]") if change.masked else ""
                print(f"{change.session_id} seq {change.seq} ({when(change.timestamp)}) "
                      f"{change.tool} [{change.call_id}]\n"
                      f"    {describe(change.old)} -> {describe(change.new)}: "
                      f"{change.new.reason or 'no reason given'}{masked}")
    finally:
        store.close()
    print(f"{changed} of {decisions} decision{'' if decisions == 1 else 's'} in {sessions} "
          f"session{'' if sessions == 1 else 's'} would change under {args.policy}"
          + (f"; {len(skipped)} session(s) skipped: broken chain" if skipped else ""))
    return EXIT_FINDING if changed or skipped else EXIT_OK
