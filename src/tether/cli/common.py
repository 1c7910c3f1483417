"""What the store-facing commands share: the ``--store`` option, opening a store, reading times.

Why: audit, approvals, resume, settle, prune and what-if all act on an existing store, name it the
same way (``--store``, else ``TETHER_STORE``, else ``sqlite:///tether.db``) and take the same
kinds of time (``30d`` or an ISO date). Doing that once keeps their errors and defaults the same.

Decision: a command never creates a store as a side effect. Opening a SQLite URL whose file does
not exist is a usage error naming the file and how to point elsewhere, instead of a new empty
``tether.db`` that then reports "no sessions". Times without a zone are UTC, like the timestamps
the commands print.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import UsageError

if TYPE_CHECKING:
    from tether.store.base import Store

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2

#: Help for ``--store``; names ``tether.store.base.DEFAULT_URL`` without importing the store layer
#: when the parser is built (a test keeps the two in step).
STORE_HELP = ("the store: sqlite:///path.db, postgresql://... or memory:// "
              "(default: $TETHER_STORE, else sqlite:///tether.db)")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)


def add_tenant_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", metavar="ID",
                        help="only this tenant's sessions and approvals; another tenant's are "
                        "not found")


def tenant_scope(args: argparse.Namespace) -> Any:
    """What ``--tenant`` scopes approvals to (every tenant without it)."""
    from tether.runtime.approvals.requests import ALL_TENANTS

    tenant: str | None = getattr(args, "tenant", None)
    return ALL_TENANTS if tenant is None else tenant


def store_hint(given: str | None) -> str:
    """`` --store URL`` for a command line printed as advice (its secrets masked), or ""."""
    from tether.journal.views.resume_line import store_option

    return store_option(given)


def store_url(given: str | None) -> str:
    from tether.store.base import DEFAULT_URL

    return given or os.environ.get("TETHER_STORE") or DEFAULT_URL


def open_existing(given: str | None) -> Store | None:
    """The store named by ``--store``/``TETHER_STORE``/the default, or None after printing why
    it cannot be opened (the caller exits 2)."""
    from tether.store.base import StoreError
    from tether.store.opening import open_store
    from tether.store.sqlite import path_of

    url = store_url(given)
    path = path_of(url) if url.startswith("sqlite:") else None
    if path and not Path(path).exists():
        source = "--store" if given else ("TETHER_STORE" if os.environ.get("TETHER_STORE")
                                          else "the default store")
        error(f"no store at {path} (from {source}); pass --store sqlite:///path/to/tether.db "
              "or set TETHER_STORE to the store your agents write to")
        return None
    try:
        return open_store(url)
    except StoreError as exc:
        error(str(exc))
        return None


def parse_time(text: str, *, now: float | None = None) -> float:
    """A point in time as epoch seconds: an age (``30d``, ``12h``, ``90m``, ``2w``, ``45s``: that
    long before now), an ISO date (``2025-01-31``) or datetime (``2025-01-31T12:00:00Z``);
    without a zone, UTC."""
    value = text.strip()
    match = _RELATIVE.match(value.lower())
    if match:
        return (time.time() if now is None else now) - float(match[1]) * _UNITS[match[2]]
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"cannot read {text!r} as a time; give an age like 30d, 12h or 90m, an ISO date "
            "like 2025-01-31, or a datetime like 2025-01-31T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class AmbiguousId(UsageError):
    """An id prefix that starts more than one id: the command cannot tell which is meant."""


def expand_id(given: str, known: Iterable[str], kind: str) -> str:
    """The whole id ``given`` stands for: itself when it is one, else the one id it is the start
    of (a trailing ``…`` or ``...``, as shortened ids are printed, is allowed); unchanged when it
    starts none, so the caller reports it as not found. AmbiguousId when it starts several."""
    ids = set(known)
    if given in ids:
        return given
    stem = given.removesuffix("…").removesuffix("...")
    matches = sorted(i for i in ids if i.startswith(stem)) if stem else []
    if len(matches) > 1:
        shown = ", ".join(m[: len(stem) + 4] + "…" for m in matches[:5])
        raise AmbiguousId(f"{given!r} is the start of {len(matches)} {kind} ids ({shown}"
                          f"{', ...' if len(matches) > 5 else ''}); give more of it")
    return matches[0] if matches else given


def full_session_id(store: Store, given: str, tenant: str | None = None) -> str:
    """``expand_id`` over the store's sessions — over ``tenant``'s only, when one is given: a
    prefix is never expanded to, nor said to be ambiguous with, another tenant's id, so another
    tenant's session reads exactly like one that does not exist."""
    infos = store.sessions()
    return expand_id(given, (i.session_id for i in infos
                             if tenant is None or i.tenant_id == tenant), "session")


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE
