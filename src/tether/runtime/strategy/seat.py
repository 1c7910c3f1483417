"""The strategy's seat at the chokepoint: the public protocol its doors reach the Environment by.

Why: the doors beyond the model turn and the tool calls (``tether.runtime.strategy.doors``:
planned calls, notes; ``tether.runtime.strategy.branching``: explored branches) used to read
seventeen private fields of the Environment — its journal, model, tool pipeline, estimates, the
ids it had seen. Any change inside the chokepoint could break a door without a type checker or a
test saying so, and nothing said which of the Environment's parts a strategy's door may touch.

Decision: ``Seat`` names everything a door needs, as methods with a meaning — a model call on a
branch's own context, calls run through the gate, an event journaled, the conversation grown by
the strategy's own turn — and the Environment implements it. The doors are typed against
``Seat``, never against the Environment, and a structural test keeps any module outside the
Environment from reading one of its private fields. The state (the fold of the journal) is read,
never written: every change is an event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tether.runtime.accounting.stop import Stop
from tether.types import Message, ModelResponse, ToolCall, ToolSpec
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.chokepoint.branch_call import BranchCall
    from tether.runtime.record.result import ToolResult
    from tether.runtime.record.state import SessionState


class Seat(Protocol):
    """What a strategy's doors may ask of the chokepoint (the Environment implements it)."""

    stopped: Stop | None  # the stop the chokepoint raised, if any (``StopLatch``)

    @property
    def state(self) -> SessionState:
        """The session's state: the fold of its journal, read only."""
        ...

    async def ask_model(self, *, note: str | None = None, tool_choice: str | None = None,
                        cap: int | None = None) -> ModelResponse:
        """One governed model turn."""
        ...

    async def call_tools(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run calls of the model's last turn through the gate."""
        ...

    def remaining_budget(self) -> dict[str, Any]:
        """What is left of each limit."""
        ...

    def check_turn(self, tool_choice: str | None, cap: int | None) -> None:
        """ValueError unless the tool choice and the output cap are ones a call may have."""
        ...

    def skip_unresolved(self, why: str) -> None:
        """Give each unresolved call of the open turn its ``skipped`` result."""
        ...

    def branch_tools(self, key: str, messages: Sequence[Message],
                     forced: str | None) -> tuple[tuple[ToolSpec, ...], int]:
        """The tools a branch call is offered, and their token estimate."""
        ...

    async def ask_on_branch(self, branch: BranchCall) -> ModelResponse:
        """A governed model call on a branch's own context."""
        ...

    async def run_calls(self, calls: Sequence[ToolCall]) -> tuple[ToolResult, ...]:
        """Run calls a door journaled (planned, a branch's) through the gate."""
        ...

    def side_effecting(self, name: str) -> bool:
        """Whether the tool ``name`` has side effects."""
        ...

    def invalid(self, call: ToolCall) -> ToolResult | None:
        """The result the gate would refuse ``call`` with before deciding it (None: none)."""
        ...

    def record(self, kind: EventType, data: Mapping[str, Any]) -> None:
        """Journal a door's own event (JournalValueError if it cannot be journaled)."""
        ...

    def conversation_grew(self, flushed: Sequence[Message], turn: Sequence[ToolCall]) -> None:
        """The strategy's own turn joined the conversation: count it, its ids are taken."""
        ...
