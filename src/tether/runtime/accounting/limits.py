"""Run-shape limits that are not spend: loop detection and the ceilings on failed and refused
tool calls. Kept apart from Budget because they bound the agent's behaviour, not its cost."""

from __future__ import annotations

from dataclasses import dataclass

from tether.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits on a run's shape that are not spend (``Agent(limits=Limits(...))``). Invalid
    limits raise here.

    Args:
        loop_warn_at: The Nth identical tool call (same tool, same arguments) gets a warning in
            its result.
        loop_stop_at: The Nth identical call is not run and the run stops ``loop_detected``.
            Must be above ``loop_warn_at``.
        tool_error_ceiling: Failed tool calls in a row before the run stops
            ``tool_error_ceiling``.
        denial_ceiling: Refused tool calls in a row before the run stops ``denied``.
    """

    loop_warn_at: int = 2  # the Nth identical call gets a warning in its result
    loop_stop_at: int = 3  # the Nth identical call is not executed and the run stops
    tool_error_ceiling: int = 5  # failed tool calls in a row before the run stops
    denial_ceiling: int = 3  # refused tool calls in a row before the run stops ("denied")

    def __post_init__(self) -> None:
        if not 1 <= self.loop_warn_at < self.loop_stop_at:
            raise InvalidArgument("Limits need 1 <= loop_warn_at < loop_stop_at")
        if self.tool_error_ceiling < 1:
            raise InvalidArgument("Limits.tool_error_ceiling must be >= 1")
        if self.denial_ceiling < 1:
            raise InvalidArgument("Limits.denial_ceiling must be >= 1")
