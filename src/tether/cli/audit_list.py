"""``tether audit list``: a store's sessions, newest first, a page at a time, filtered.

Why: a store of 20,000 sessions printed 20,000 lines, read from every index row, on each
listing. Decision: the command lists one page (``--limit``, 50 by default) through the store's
keyset query (``tether.store.paging``), and after a full page prints the exact command that
lists the next, with its ``--cursor``, to stderr when the page went to stdout as JSON (so the
JSON stays one document). Times given as ages (``7d``) are written into that command as the
moments they meant, so every page of one listing has the same filter. A session an erasure
record erased is listed as ``erased`` (``--status erased`` finds it), never as the state the
index kept from before its erasure.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    add_tenant_option,
    error,
    open_existing,
    parse_time,
)
from tether.errors import InvalidArgument
from tether.urls import redact_url

if TYPE_CHECKING:
    from tether.store.base import Store
    from tether.store.paging import SessionFilter, SessionPage

DEFAULT_LIMIT = 50
STATUSES = ["open", "paused", "ended", "erased", "erasure"]
# the filters, as (option, attribute): what the next page's command repeats
FILTERS = (("--tenant", "tenant"), ("--status", "status"), ("--stop-reason", "stop_reason"),
           ("--agent", "agent"), ("--user", "user"), ("--thread", "thread"),
           ("--since", "since"), ("--until", "until"), ("--min-cost", "min_cost"),
           ("--max-cost", "max_cost"))


def add(sub: Any) -> None:
    """Register ``list`` under ``tether audit``."""
    listing = sub.add_parser(
        "list", help="list sessions, a page at a time",
        description="List stored sessions, newest first, a page at a time (--limit); after a "
        "full page, the command that lists the next (with --cursor) is printed last.")
    add_store_option(listing)
    add_tenant_option(listing)
    listing.add_argument("--status", choices=STATUSES, help="only sessions in this state")
    listing.add_argument("--stop-reason", metavar="REASON",
                         help="only sessions whose last pause or end gave this reason "
                         "(finished, needs_approval, cost_budget, ...)")
    listing.add_argument("--agent", metavar="NAME", help="only this agent's sessions")
    listing.add_argument("--user", metavar="ID", help="only sessions run for this user")
    listing.add_argument("--thread", metavar="ID", help="only sessions of this thread")
    listing.add_argument("--since", metavar="WHEN", type=parse_time,
                         help="only sessions created since: 7d, 12h, 2025-01-31, ...")
    listing.add_argument("--until", metavar="WHEN", type=parse_time,
                         help="only sessions created before this time")
    listing.add_argument("--min-cost", metavar="USD", type=float,
                         help="only sessions that spent at least this (as their last pause or "
                         "end recorded)")
    listing.add_argument("--max-cost", metavar="USD", type=float,
                         help="only sessions that spent at most this (as their last pause or "
                         "end recorded)")
    listing.add_argument("--limit", metavar="N", type=_positive, default=DEFAULT_LIMIT,
                         help=f"sessions per page (default {DEFAULT_LIMIT})")
    listing.add_argument("--cursor", metavar="C",
                         help="list the page after the one that printed this cursor")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(run=run_list)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--limit must be a whole number of at least 1, got "
                                         f"{text!r}")
    return value


def run_list(args: argparse.Namespace) -> int:
    from tether.journal.views.erased import listed_status
    from tether.store.paging import page_sessions

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        erased = _erased(store)  # the index keeps an erased session's former state
        page = page_sessions(store, _filter(args, frozenset(erased)), limit=args.limit,
                             after=args.cursor)
    except InvalidArgument as exc:
        error(f"{exc} (`--cursor` takes the value a listing printed)")
        return EXIT_USAGE
    finally:
        store.close()
    infos = page.sessions
    if args.json:
        print(json.dumps([{"session_id": i.session_id, "agent": i.agent, "tenant_id": i.tenant_id,
                           "status": listed_status(i, erased), "events": i.events,
                           "created_at": i.created_at, "updated_at": i.updated_at,
                           "user_id": i.user_id, "thread_id": i.thread_id,
                           "stop_reason": i.stop_reason, "cost_usd": i.cost}
                          for i in infos], ensure_ascii=False))
        _print_next(args, page, sys.stderr)
        return EXIT_OK
    if not infos:
        filtered = any(getattr(args, name) is not None for _, name in FILTERS
                       if name != "tenant")
        print("no sessions" + (" match" if filtered else "") +
              (" after this cursor" if args.cursor else ""))
        return EXIT_OK
    _print_table(infos, erased)
    _print_next(args, page, sys.stdout)
    return EXIT_OK


def _print_table(infos: list[Any], erased: dict[str, str]) -> None:
    from tether.journal.views.erased import listed_status
    from tether.journal.views.timeline import when

    rows = [("SESSION", "AGENT", "TENANT", "STATUS", "EVENTS", "UPDATED")]
    rows += [(i.session_id, i.agent or "-", i.tenant_id or "-", listed_status(i, erased),
              str(i.events), when(i.updated_at)) for i in infos]
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    print(f"{len(infos)} session{'' if len(infos) == 1 else 's'}")


def _erased(store: Store) -> dict[str, str]:
    """Every session an erasure record erased, with the record: the records are read through
    the listing (its status filter), not by reading every session."""
    from tether.journal.views.erased import erased_sessions
    from tether.store.paging import SessionFilter, page_sessions

    records, cursor = [], None
    while True:
        page = page_sessions(store, SessionFilter(status="erasure"), limit=500, after=cursor)
        records += page.sessions
        if page.next is None:
            return erased_sessions(store, records)
        cursor = page.next


def _filter(args: argparse.Namespace, erased: frozenset[str]) -> SessionFilter:
    from tether.store.paging import ANY_TENANT, SessionFilter

    status: str | None = args.status
    return SessionFilter(
        status=None if status == "erased" else status, stop_reason=args.stop_reason,
        agent=args.agent, tenant_id=ANY_TENANT if args.tenant is None else args.tenant,
        user_id=args.user, thread_id=args.thread, since=args.since, until=args.until,
        min_cost=args.min_cost, max_cost=args.max_cost,
        ids=erased if status == "erased" else None,
        excluding=erased if status not in (None, "erased") else frozenset())


def _print_next(args: argparse.Namespace, page: SessionPage, stream: Any) -> None:
    """After a full page: the exact command that lists the next."""
    if page.next is None:
        return
    words, masked = ["tether", "audit", "list"], False
    if args.store is not None:  # a password in it is never printed
        shown = redact_url(args.store)
        words, masked = [*words, "--store", shown], shown != args.store
    for option, name in FILTERS:
        value = getattr(args, name)
        if value is None:
            continue
        if name in ("since", "until"):  # the moment an age meant when the listing began
            value = datetime.fromtimestamp(value, UTC).isoformat()
        words += [option, str(value)]
    if args.limit != DEFAULT_LIMIT:
        words += ["--limit", str(args.limit)]
    if args.json:
        words.append("--json")
    words += ["--cursor", page.next]
    print(f"next page: {shlex.join(words)}" + (
        " (with the store's secrets in place of ***, or the store in TETHER_STORE and no "
        "--store)" if masked else ""), file=stream)
