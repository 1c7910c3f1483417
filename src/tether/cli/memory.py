"""``tether memory threads|search|forget``: a user's conversations, from a shell.

Why: "forget me" arrives as a ticket to an operator, not as Python — the operator lists what a
user's threads hold, and erases them, with the same scoping the runtime uses (one tenant, one
user) and an erasure record the auditor can find afterwards (``tether audit verify`` passes).

Exit codes: 0 done; 1 nothing found (``threads``, ``search``), or the erasure was refused (a
session is running, or does not verify: nothing erased); 2 the command could not run (bad usage,
no store, bm25s not installed for ``search``).
"""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    open_existing,
    usage,
)


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "memory", help="list, search and forget a user's conversation threads",
        description="A tenant's user's conversation threads (agent.session(thread=...)).")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="memory commands", metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        one = sub.add_parser(name, help=help, description=help)
        add_store_option(one)
        one.add_argument("--tenant", metavar="ID", help="the user's tenant (none: no tenant)")
        one.add_argument("--user", required=True, metavar="ID", help="the user's id")
        return one

    command("threads", "the user's threads and their turns (exit 1 if none)").set_defaults(
        run=run_threads)
    search = command("search", "the user's earlier turns that best match a query (BM25)")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("-k", type=int, default=5, help="how many turns (default 5)")
    search.set_defaults(run=run_search)
    forget = command("forget", "erase everything the user said and was told in the tenant, "
                     "and their turns where the tenant's other sessions quote them; the "
                     "journals still verify, and an erasure record says what was removed")
    forget.add_argument("--reason", default="the user asked to be forgotten",
                        help="kept in the erasure record")
    forget.add_argument("--yes", action="store_true", help="do it (without: say what would go)")
    forget.set_defaults(run=run_forget)


def _memory(args: argparse.Namespace) -> Any:
    from tether.knowledge import ConversationStore

    store = open_existing(args.store)
    return None if store is None else ConversationStore(store)


def run_threads(args: argparse.Namespace) -> int:
    memory = _memory(args)
    if memory is None:
        return EXIT_USAGE
    try:
        threads = memory.threads(tenant_id=args.tenant, user_id=args.user)
        for thread in threads:
            print(f"thread {thread.thread_id}: {thread.sessions} session(s)")
            for turn in memory.turns(thread.thread_id, tenant_id=args.tenant,
                                     user_id=args.user):
                print(f"  {turn.position:>3} {turn.session_id[:8]}  user: {_line(turn.user)}")
                print(f"      {'':8}  assistant: {_line(turn.assistant) or '(no answer)'}")
    finally:
        memory.store.close()
    if not threads:
        print(f"no threads of user {args.user!r}" + _in(args.tenant))
        return EXIT_FINDING
    return EXIT_OK


def run_search(args: argparse.Namespace) -> int:
    memory = _memory(args)
    if memory is None:
        return EXIT_USAGE
    try:
        found = memory.search(args.query, tenant_id=args.tenant, user_id=args.user, k=args.k)
    except (ValueError, ImportError) as exc:
        error(str(exc))
        return EXIT_USAGE
    finally:
        memory.store.close()
    for r in found:
        print(f"{r.score:7.3f}  thread {r.thread_id} turn {r.position}  user: {_line(r.user)}")
    if not found:
        print("no turn matches")
        return EXIT_FINDING
    return EXIT_OK


def run_forget(args: argparse.Namespace) -> int:
    from tether.journal.erasure import ErasureRefused

    memory = _memory(args)
    if memory is None:
        return EXIT_USAGE
    try:
        if not args.yes:
            from tether.knowledge.forgetting import quoting_sessions, users_sessions

            threads = memory.threads(tenant_id=args.tenant, user_id=args.user)
            sessions = users_sessions(memory.store, args.tenant, args.user)
            copies = quoting_sessions(memory.store, args.tenant, sessions)
            print(f"would erase every session of user {args.user!r}{_in(args.tenant)} "
                  f"({len(sessions)} session(s), {len(threads)} thread(s)), and their turns "
                  f"where {len(copies)} other session(s) quote them; run again with --yes to "
                  "erase")
            return EXIT_OK
        erasure = memory.forget(tenant_id=args.tenant, user_id=args.user, reason=args.reason)
    except ErasureRefused as exc:
        error(str(exc))
        return EXIT_FINDING
    finally:
        memory.store.close()
    if erasure.erasure_id is None:
        print(f"nothing to erase for user {args.user!r}{_in(args.tenant)}")
    else:
        print(f"erased {erasure.events} events of {len(erasure.sessions)} session(s), and "
              f"their turns quoted in {erasure.copied_events} events of "
              f"{len(erasure.copies)} other session(s); erasure record {erasure.erasure_id} "
              "(`tether audit verify` checks it)")
        for left in erasure.left:
            print(f"not reached: {left}")
    return EXIT_OK


def _in(tenant: str | None) -> str:
    return f" in tenant {tenant!r}" if tenant else ""


def _line(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"
