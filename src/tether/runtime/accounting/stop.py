"""Why a run stopped: a closed enum, and the exception the chokepoint raises to stop it.

Decision: stopping is control flow owned by the chokepoint, not by strategies. Any handle method
may raise ``Stop``; the session catches it, gives the model its wrap-up turn when that makes
sense, and records the reason. A strategy cannot forget to check a budget because it never has
to check one — nor swallow a stop: ``Stop`` derives from ``BaseException`` (like
``asyncio.CancelledError``), so an ordinary ``except Exception`` retry lets it through, and the
chokepoint remembers it, so even a strategy that catches everything is refused every later call
and the session still ends with the chokepoint's reason. ``StopLatch`` is that memory, the one
place every door of the chokepoint keeps it.
"""

from __future__ import annotations

import enum
from types import TracebackType
from typing import Protocol


class StopReason(enum.StrEnum):
    """Why a run stopped or paused (``Result.stop_reason``): ``finished`` when the model
    answered; a limit (``step_budget``, ``token_budget``, ...), ``denied``, ``model_error``, or a
    pause (``needs_approval``, ``uncertain_effect``, ``interrupted``, ``halted``) that
    ``resume`` goes on from."""
    FINISHED = "finished"
    STEP_BUDGET = "step_budget"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    TIME_BUDGET = "time_budget"
    TOOL_CALL_BUDGET = "tool_call_budget"
    # a quota over many sessions (tether.policy.quotas) has no room for the next call: the
    # detail names the quota and when it frees up (tether.runtime.accounting.quota)
    QUOTA = "quota"
    LOOP_DETECTED = "loop_detected"
    TOOL_ERROR_CEILING = "tool_error_ceiling"
    NEEDS_APPROVAL = "needs_approval"
    UNCERTAIN_EFFECT = "uncertain_effect"  # a side effect may or may not have happened
    DENIED = "denied"
    MODEL_ERROR = "model_error"
    # the answer never validated as the recipe's output_type, repairs included (no wrap-up:
    # another turn would be one more attempt past the bound)
    OUTPUT_INVALID = "output_invalid"
    # the run was interrupted from outside (a signal, Session.cancel(), a cancelled task) and
    # left no side effect uncertain: it pauses, waiting for nobody, and resume() goes on
    INTERRUPTED = "interrupted"
    # a person halted the session (``tether halt``): it pauses, and resume() goes on once the
    # halt is lifted (``tether unhalt``); no wrap-up turn: nothing more runs under a halt
    HALTED = "halted"
    # an ended session: what earlier tethers journaled for an interruption (one now pauses)
    CANCELLED = "cancelled"

    @property
    def gets_final_turn(self) -> bool:
        """Whether the model is asked for a wrap-up answer after this stop."""
        return self not in _NO_FINAL_TURN

    @property
    def pauses(self) -> bool:
        """Whether the session pauses — it can be resumed — instead of ending."""
        return self in _PAUSES


_PAUSES = frozenset({StopReason.NEEDS_APPROVAL, StopReason.UNCERTAIN_EFFECT,
                     StopReason.INTERRUPTED, StopReason.HALTED})
_NO_FINAL_TURN = frozenset({StopReason.FINISHED, StopReason.MODEL_ERROR, StopReason.CANCELLED,
                            StopReason.OUTPUT_INVALID, *_PAUSES})


class Stop(BaseException):
    """Raised inside the chokepoint when the run must stop; carries the reason and a detail.
    A ``BaseException``: code that catches ``Exception`` must not be able to swallow it.
    ``wrap_up=False``: no wrap-up turn, even for a reason that usually gets one (the model just
    went past the output cap it was sent, and could again)."""

    def __init__(self, reason: StopReason, detail: str, *, wrap_up: bool = True) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
        self.wrap_up = wrap_up


class Stoppable(Protocol):
    """What a ``StopLatch`` guards: the stop its chokepoint raised, if any."""

    stopped: Stop | None


class StopLatch:
    """``with StopLatch(env):`` around each door of the chokepoint: on the way in it raises the
    Stop ``env`` raised before, if any; a Stop raised inside is remembered in ``env.stopped`` and
    goes on up. Written once, so no door can forget either half."""

    __slots__ = ("_env",)

    def __init__(self, env: Stoppable) -> None:
        self._env = env

    def __enter__(self) -> None:
        if self._env.stopped is not None:
            raise self._env.stopped

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # (None: the exception goes on up)
        if isinstance(exc, Stop):
            self._env.stopped = exc
