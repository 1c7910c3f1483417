"""What a finished run hands back: the answer, why it stopped, what it spent, what it did.

Decision: a Result holds only small frozen records (no session, journal, model or tool), so
keeping thousands of them costs little and none of them keeps a run alive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tether.records import fast_init
from tether.runtime.accounting.budget import Spend
from tether.runtime.accounting.stop import StopReason
from tether.types import ToolCall, Usage

if TYPE_CHECKING:
    from tether.tools.content import Part

# "simulated": a side-effecting call on an explored branch, proposed and not run
# (tether.runtime.strategy.branching); never a result of the session's own turns
ToolStatus = Literal["ok", "error", "timeout", "rejected", "denied", "skipped", "simulated"]


@fast_init
@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call, as the model sees it (``content``) and as a status.
    ``parts``: what a tool returned as ``tether.tools.content.Content`` (images, audio,
    resources, in order) for a caller that can use them — ``content`` is their model-facing
    text; empty for a plain result."""

    call_id: str
    name: str
    content: str
    status: ToolStatus = "ok"
    parts: tuple[Part, ...] = ()

    @property
    def is_error(self) -> bool:
        """Whether the call did not succeed (any status but ``ok``)."""
        return self.status != "ok"


@fast_init
@dataclass(frozen=True, slots=True)
class Step:
    """One model turn and the tool calls it led to."""

    index: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]


@dataclass(frozen=True, slots=True)
class Trajectory:
    """What a run did, turn by turn: its ``steps``, in order."""

    steps: tuple[Step, ...]

    def __repr__(self) -> str:
        return f"Trajectory({len(self.steps)} steps)"

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """Every tool result of the run, in order."""
        return tuple(r for s in self.steps for r in s.results)


@dataclass(frozen=True, slots=True)
class Result:
    """What a run hands back, ended or paused: the answer, why it stopped, what it spent and
    did. Small frozen records only: keeping one keeps no session, model or tool alive.

    Args:
        answer: The model's final words ("" when it gave none).
        stop_reason: Why the run stopped or paused (``StopReason``): ``finished`` when the
            model answered.
        usage: The tokens the run's model calls used.
        trajectory: Each model turn, with its tool calls and their results.
        session_id: The session's id: ``agent.load(session_id)``, ``agent.resume(session_id)``,
            ``tether audit show``.
        spend: What the run spent against its budget (tokens, cost, steps, tool calls,
            seconds).
        stop_detail: A detail of the stop (the limit reached, the rule that denied).
        notice: tether's own words when the run stopped or paused: why, and what to do next.
        output: The answer validated as the agent's ``output_type``; None without one, or when
            no answer validated.
    """

    answer: str
    stop_reason: StopReason
    usage: Usage
    trajectory: Trajectory
    session_id: str
    spend: Spend
    stop_detail: str = ""
    # tether's own words when the run stopped or paused (why, what to do next); the answer
    # holds only the model's words, "" when it gave none
    notice: str = ""
    # the answer validated as the agent's output_type (runtime.chokepoint.output); None without
    # one, or when no answer validated
    output: Any = None

    def __repr__(self) -> str:
        answer = self.answer if len(self.answer) <= 60 else self.answer[:57] + "..."
        return (f"Result(answer={answer!r}, stop_reason={self.stop_reason.value}, "
                f"tokens={self.usage.total_tokens}, steps={len(self.trajectory.steps)}, "
                f"session_id={self.session_id!r})")

    @property
    def finished(self) -> bool:
        """Whether the model gave its answer (no limit, denial, pause or error stopped it)."""
        return self.stop_reason is StopReason.FINISHED

    @property
    def ok(self) -> bool:
        """The common check: the run finished (no limit, denial, pause or error stopped it)."""
        return self.stop_reason is StopReason.FINISHED
