"""``tether store prune`` and ``purge``: retention for journals, one whole session at a time.

Why: journals grow without end, and retention rules ("keep 400 days") are a legal requirement as
often as a disk one. Pruning must never damage what it keeps: a hash chain with its first half
cut away no longer verifies, and a verifying journal is the point of keeping it.

Decision: prune removes whole sessions — every event, the index row and the approval records —
chosen by when the session was *last* written, never events inside a session, so every kept
session still verifies from its first event. ``--dry-run`` lists what would go first. A paused
session counts by its last write like any other; its pending approvals go with it. ``purge``
lets the store's files keep no earlier version of what was pruned or erased
(``Store.purge_erased``), which ``tether memory forget`` does itself.

Exit codes: 0 done (even if nothing was old enough); 2 the command could not run (bad usage, a
time that cannot be read, no store).
"""

from __future__ import annotations

import argparse
from typing import Any

from tether.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    open_existing,
    parse_time,
    usage,
)


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "store", help="maintain a store", description="Maintain a tether store.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="store commands", metavar="COMMAND")
    prune = sub.add_parser(
        "prune", help="delete old sessions",
        description="Delete whole sessions last written before a time; every kept session "
        "still verifies.")
    prune.add_argument("--before", required=True, metavar="WHEN", type=parse_time,
                       help="an age (30d, 12h), an ISO date (2025-01-31) or datetime "
                       "(2025-01-31T12:00:00Z); without a zone, UTC")
    prune.add_argument("--dry-run", action="store_true",
                       help="list the sessions that would be deleted; delete nothing")
    add_store_option(prune)
    prune.set_defaults(run=run_prune)
    purge = sub.add_parser(
        "purge", help="let the store's files keep no earlier version of erased or pruned rows",
        description="Make the store's own files keep no earlier version of what an erasure "
        "rewrote or a prune deleted (SQLite: the write-ahead log checkpointed and truncated; "
        "PostgreSQL: VACUUM FULL of the tables that held it, which locks them while it runs); "
        "says what it could not reach. `tether memory forget` runs it itself.")
    add_store_option(purge)
    purge.set_defaults(run=run_purge)


def run_prune(args: argparse.Namespace) -> int:
    from tether.journal.views.timeline import when

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    cutoff = when(args.before)
    try:
        if args.dry_run:
            doomed = store.sessions(until=args.before)
            for info in doomed:
                print(f"would prune {info.session_id}  {info.agent or '-'}  {info.status}  "
                      f"{info.events} events  last written {when(info.updated_at)}")
            print(f"would prune {len(doomed)} session{'' if len(doomed) == 1 else 's'} last "
                  f"written before {cutoff}")
            return EXIT_OK
        count = store.prune(args.before)
        kept = len(store.sessions())
    finally:
        store.close()
    print(f"pruned {count} session{'' if count == 1 else 's'} last written before {cutoff}; "
          f"{kept} kept")
    return EXIT_OK


def run_purge(args: argparse.Namespace) -> int:
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        left = store.purge_erased()
    finally:
        store.close()
    print(f"purged {store.url}")
    for one in left:
        print(f"not reached: {one}")
    return EXIT_OK
