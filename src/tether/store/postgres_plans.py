"""The shapes the PostgreSQL store's writes are planned in: what one append is, and a plan.

Why apart: ``store.postgres_steps`` runs plans (generators that yield statements and are sent
their rows, so several appends share one round trip) and ``store.postgres_halts`` writes one (the
halt check inside an append's transaction); both name these shapes, and neither imports the
other's module for them.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tether.types import Event

if TYPE_CHECKING:
    from tether.store.base import Lease

Append = tuple[str, Sequence[Event], Sequence[str], "Lease | None"]  # session, events, data, lease
T = TypeVar("T")
Query = tuple[str, Any]  # a statement and its parameters
Plan = Generator[list[Query], list[list[Any]], T]  # yields statements, is sent their rows
