"""The seam between the chokepoint and what shapes a turn: ``TurnShaper`` and ``TurnSeat``.

Why here, in the chokepoint: the chokepoint consults the shapers, and the shapers
(``tether.runtime.context``, a part above it) implement them; a part imports only the parts below
it, so the protocol lives with the part that consults it.

Why a seam: compaction (``tether.runtime.context.compactor``) and tool selection
(``tether.runtime.context.selecting``) each change what a model turn is shown — compaction rewrites
the conversation before it is sent, selection picks the tools it is offered. They used to compose
by subclassing the Environment (a class per combination, one of them built at run time with
``type(...)``), reaching into its private fields. A reader had to know the method resolution
order to know which ran first.

Decision: each is a small ``TurnShaper`` the session hands the one ``Environment`` class, in
order (compaction before selection: its estimate counts the tools the last turn was offered, as
the request it predicts would); the Environment calls each ``before_turn`` before it builds a
turn's request and asks each for a branch's tools. With no shaper the Environment takes the
plain path: one test of an empty tuple per turn, no loop. A shaper changes the turn only through
``TurnSeat``, the few public methods of the Environment written for it.

Output validation (``tether.runtime.chokepoint.output``) is deliberately not a shaper: it does not
change what a turn is shown but the request's type (every turn and uncapped branch call carries
the schema, counted in every estimate), and it judges the strategy's answer, which is not a
model turn. It stays the one optional field of the Environment it always was (``output``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tether.types import Message, ToolSpec

Offered = tuple[tuple[ToolSpec, ...], int]  # the tools a call is offered, their token estimate


class TurnSeat(Protocol):
    """What a shaper may read and change of the turn (the Environment implements it)."""

    def next_input(self, final: bool, note: str | None) -> int:
        """The next request's input tokens, as its reservation will count them."""
        ...

    def conversation_rewritten(self) -> None:
        """The conversation was rewritten (compacted): estimate all of it again."""
        ...

    def show_tools(self, specs: tuple[ToolSpec, ...], added: int) -> None:
        """Offer the turn ``specs``; ``added``: the estimate of those the last turn was not
        offered (a provider's count of the last input did not cover them)."""
        ...

    def skip_unresolved(self, why: str) -> None:
        """Give each unresolved call of the open turn its ``skipped`` result now."""
        ...


class TurnShaper(Protocol):
    """One recipe feature that shapes what a turn is shown."""

    async def before_turn(self, seat: TurnSeat, final: bool, note: str | None,
                          tool_choice: str | None) -> None:
        """Shape the turn about to be built, before its request is journaled: the wrap-up
        (``final``: sent no tools) or not, with the strategy's note and the tool it forces."""
        ...

    def branch_tools(self, seat: TurnSeat, key: str, messages: Sequence[Message],
                     forced: str | None) -> Offered | None:
        """The tools a branch call is offered, or None to leave it the turn's."""
        ...
