"""The accountant: reserves before every model call and settles after, over a session's tally.

Decision: a budget is never checked only after the fact. Before every model call the accountant
clamps ``max_output_tokens`` to what is left and reserves the call's worst-case tokens and cost
(input estimate + clamped output, no cache discount); if that does not fit, the call is not made.
After the call it settles against the actual usage. A share of each limit (and one step) is held
back so that, when a limit stops the run, the model's wrap-up turn still fits inside it. Result:
spend never exceeds any limit, as long as the provider reports no more input than estimated —
and when it does, the difference is journaled and later estimates are scaled up to cover it.

Why its own module: this is the budget invariant itself; the limits it enforces
(``accounting.budget``) and the worst-case prices it reserves at (``accounting.worst_case``)
are data and arithmetic it reads.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from tether.models.pricing import MILLION, Price
from tether.records import fast_init
from tether.runtime.accounting.budget import Budget, Spend
from tether.runtime.accounting.stop import Stop, StopReason
from tether.runtime.accounting.worst_case import (
    check_price,
    dearest_prices,
    tokens_for,
    worst_case_cost,
)
from tether.types import Usage

# read on every call: bound once (an enum member read through its class is slow, benchmarks.md)
_TOKEN_BUDGET = StopReason.TOKEN_BUDGET

MIN_OUTPUT_TOKENS = 16  # a call that may not even say this much is not worth making
WRAP_UP_NOTE_TOKENS = 120  # the "run is stopping" note added to the wrap-up request, at most
WRAP_UP_OUTPUT_TOKENS = 64  # the least a wrap-up answer is guaranteed room for
_WRAP = WRAP_UP_NOTE_TOKENS + WRAP_UP_OUTPUT_TOKENS


@fast_init
@dataclass(frozen=True, slots=True)
class Reservation:
    """A model call's worst case, held until settled."""

    input_tokens: int
    max_output_tokens: int | None
    cost_usd: Decimal
    deadline: float | None  # monotonic time by which the call must have returned
    final: bool
    bound_by: StopReason | None = None  # the limit that set max_output_tokens, if any
    quota: tuple[Any, ...] = ()  # each quota's share of it (tether.runtime.accounting.quota)


class Tally:
    """Running spend of one session. Changed only by applying journal events (``state.py``), so
    the spend a resumed session starts from is exactly what its journal says."""

    __slots__ = ("active_seconds", "cost", "input_scale", "steps", "tool_calls", "usage")

    def __init__(self) -> None:
        self.usage = Usage()
        self.cost = Decimal(0)
        self.steps = 0
        self.tool_calls = 0
        self.input_scale = 1.0  # grows when a provider reports more input than was estimated
        self.active_seconds = 0.0  # run time before the current activation (pauses excluded)


class Quotas(Protocol):
    """What the accountant and the tool side ask of a session's quotas (the one implementation
    is ``tether.runtime.accounting.quota.QuotaMeter``, which builds on this module)."""

    def reserve(self, reservation: Reservation, final: bool,
                price: Price | None) -> Reservation: ...

    def settle(self, reservation: Reservation, usage: Usage | None,
               price: Price | None) -> None: ...

    def take_tool(self, name: str) -> None: ...

    def cut_short(self, reservation: Reservation) -> Stop: ...


class Accountant:
    """Budget decisions for one session, over its Tally. Not shared; one event loop."""

    __slots__ = ("_budget", "_clock", "_hold_cost", "_hold_seconds", "_hold_tokens", "_leases",
                 "_per_token", "_price", "_started", "output_rate", "quota", "tally")

    def __init__(self, budget: Budget, price: Price | None, tally: Tally,
                 clock: Any = time.monotonic) -> None:
        check_price(budget, price)
        self._budget = budget
        self._price = price
        self._clock = clock
        self._started = clock()
        share = budget.final_turn_share
        self._hold_tokens = math.ceil((budget.max_tokens or 0) * share)
        self._hold_cost = (budget.max_cost_usd or Decimal(0)) * Decimal(str(share))
        self._hold_seconds = (budget.max_seconds or 0.0) * share
        self.tally = tally
        # the session's quotas over many sessions, kept in its store (None: it has none)
        self.quota: Quotas | None = None
        self._leases: dict[str, Budget] = {}  # what running sub-agents may still spend
        # output tokens per second the model's last answer came at, under a time budget: a
        # call is sent no larger a cap than it can produce in the time left (learn_rate)
        self.output_rate: float | None = None
        # float USD per input and output token, and the held-back cost: for the quick checks
        worst = None if price is None else price.worst()  # for the quick checks: any tier
        self._per_token = (0.0, 0.0, 0.0) if worst is None else (
            float(worst.input) / 1e6, float(worst.output) / 1e6, float(self._hold_cost))

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def price(self) -> Price | None:
        """The price calls are charged at (None: unpriced)."""
        return self._price

    def at_price(self, price: Price | None) -> Accountant:
        """An accountant over the same budget, spend and clock that prices calls at ``price``:
        for calls to another model than the run's (a compaction's summariser). ValueError when
        the budget has a cost limit and ``price`` is None (fail closed)."""
        other = Accountant(self._budget, price, self.tally, self._clock)
        other._started = self._started
        other.quota = self.quota
        return other

    def start_clock(self) -> None:
        """Time budgets count from here (the run's start), not from when the session was made."""
        self._started = self._clock()

    def elapsed(self) -> float:
        """Seconds the session has been running, across resumes (time paused is not counted)."""
        return float(self.tally.active_seconds + self._clock() - self._started)

    def activation_seconds(self) -> float:
        return float(self._clock() - self._started)

    def now(self) -> float:
        return float(self._clock())

    def learn_rate(self, output_tokens: int, started: float) -> None:
        """Note the pace of an answer of ``output_tokens`` to a call sent at ``started``
        (``now()``), all of its time counted: so the next cap under a time budget is what the
        model can produce before the deadline, and a server that keeps generating an answer
        the deadline abandoned stops about when the deadline passes."""
        seconds = self._clock() - started
        if output_tokens >= MIN_OUTPUT_TOKENS and seconds > 0:
            self.output_rate = output_tokens / seconds

    def spend(self) -> Spend:
        t = self.tally
        return Spend(t.usage, t.cost, t.steps, t.tool_calls, self.elapsed())

    def remaining(self, elapsed: float | None = None) -> dict[str, Any]:
        """What is left of each limit (None: unlimited); ``elapsed`` if the caller has it."""
        b, t = self._budget, self.tally
        return {
            "tokens": None if b.max_tokens is None else b.max_tokens - t.usage.total_tokens,
            "cost_usd": None if b.max_cost_usd is None else b.max_cost_usd - t.cost,
            "steps": None if b.max_steps is None else b.max_steps - t.steps,
            "tool_calls": None if b.max_tool_calls is None else b.max_tool_calls - t.tool_calls,
            "seconds": None if b.max_seconds is None else b.max_seconds - (
                self.elapsed() if elapsed is None else elapsed),
        }

    def deadline(self, final: bool = False) -> float | None:
        """Monotonic time by which normal (or, with ``final``, wrap-up) work must end."""
        if self._budget.max_seconds is None:
            return None
        hold = 0.0 if final else self._hold_seconds
        return float(self._started - self.tally.active_seconds + self._budget.max_seconds - hold)

    def reserve_model_call(self, input_estimate: int, final: bool = False, *,
                           known: int = 0, ceiling: int | None = None,
                           min_seconds: float = 0.0) -> Reservation:
        """Clamp and reserve a model call, or raise Stop naming the limit that prevents it.
        ``known``: input tokens the provider itself counted (the conversation up to its last
        answer), taken as they are; ``input_estimate`` is tether's estimate of the rest, scaled
        by what the provider's reports showed. ``ceiling``: the most output the model sends as
        its cap whatever the budget allows (``models.base.output_ceiling``); the reservation's
        cap is the cap actually sent, so an answer past it is an overrun. ``min_seconds``: the
        least time the model takes to answer (``models.base.min_answer_seconds``); with less
        than that left before the deadline the call is not started (time budget)."""
        b, t = self._budget, self.tally
        input_tokens = known + math.ceil(input_estimate * t.input_scale)
        if b.max_steps is not None:
            steps_left = b.max_steps - t.steps - (0 if final else 1)
            if steps_left < 1:
                raise Stop(StopReason.STEP_BUDGET, f"{b.max_steps} steps used")
        deadline = self.deadline(final)
        if deadline is not None:
            left = deadline - self._clock()
            if left <= 0:
                raise Stop(StopReason.TIME_BUDGET, f"{b.max_seconds}s elapsed")
            if left < min_seconds:
                raise Stop(StopReason.TIME_BUDGET, f"{left:.2f}s of the {b.max_seconds}s left, "
                           f"less than the {min_seconds}s the model takes to answer at the "
                           "least (its min_answer_seconds): the call was not started")
        max_out: int | None = None
        bound_by: StopReason | None = None
        if b.max_tokens is not None:
            left = b.max_tokens - t.usage.total_tokens
            max_out = left - input_tokens
            if not final:  # keep the held-back share, and room for a wrap-up after this call
                max_out = min(max_out - self._hold_tokens, (left - 2 * input_tokens - _WRAP) // 2)
            bound_by = _TOKEN_BUDGET
            if max_out < MIN_OUTPUT_TOKENS:
                raise Stop(StopReason.TOKEN_BUDGET, f"the next call, ~{input_tokens} input "
                           f"tokens, does not fit the {b.max_tokens} limit")  # no stale count
        cost = Decimal(0)
        if self._price is not None and b.max_cost_usd is not None:
            money = b.max_cost_usd - t.cost
            if max_out is None or not self._plainly_affords(money, input_tokens, max_out,
                                                            final):
                affordable = self._affordable_output(money, input_tokens, final)
                if max_out is None or affordable < max_out:
                    max_out, bound_by = affordable, StopReason.COST_BUDGET
            if max_out < MIN_OUTPUT_TOKENS:
                raise Stop(StopReason.COST_BUDGET,
                           f"the next call does not fit the ${b.max_cost_usd} limit")
        if deadline is not None and self.output_rate is not None:
            in_time = int(self.output_rate * (deadline - self._clock()))
            if in_time < MIN_OUTPUT_TOKENS:
                raise Stop(StopReason.TIME_BUDGET, f"at the {self.output_rate:.1f} output "
                           "tokens per second the model answered at last, the time left is "
                           "too short for an answer: the call was not started")
            if max_out is None or in_time < max_out:
                max_out, bound_by = in_time, StopReason.TIME_BUDGET
        if ceiling is not None and (max_out is None or ceiling < max_out):
            max_out, bound_by = ceiling, None  # the model's own cap, not a limit, binds
        if self._price is not None:
            cost = worst_case_cost(self._price, input_tokens, max_out or 0)
        reservation = Reservation(input_tokens, max_out, cost, deadline, final, bound_by)
        if self.quota is None:
            return reservation
        return self.quota.reserve(reservation, final, self._price)  # clamped further, or Stop

    def _plainly_affords(self, left: Decimal, input_tokens: int, output_tokens: int,
                         final: bool) -> bool:
        """Whether ``left`` pays for the call, and (unless ``final``) for the held-back share
        and a wrap-up after it, with a wide margin — the common case, decided in floats. When
        unsure it says False, and ``_affordable_output`` counts exactly."""
        p_in, p_out, hold = self._per_token
        need = input_tokens * p_in + output_tokens * p_out
        if not final:
            need = max(need + hold, (2 * input_tokens + WRAP_UP_NOTE_TOKENS + output_tokens) * p_in
                       + (WRAP_UP_OUTPUT_TOKENS + output_tokens) * p_out)
        return float(left) > need * (1 + 1e-9) + 1e-12

    def _affordable_output(self, left: Decimal, input_tokens: int, final: bool) -> int:
        """Output tokens a call can pay for; a normal call also leaves the held-back share and
        the price of a wrap-up right after it (its input plus its output, resent, plus a note
        and a short answer)."""
        assert self._price is not None
        p_in, p_out = dearest_prices(self._price, 2 * input_tokens + WRAP_UP_NOTE_TOKENS)
        if final:
            return tokens_for(left - input_tokens * p_in / MILLION, p_out)
        with_share = tokens_for(left - self._hold_cost - input_tokens * p_in / MILLION, p_out)
        wrap_up = left - ((2 * input_tokens + WRAP_UP_NOTE_TOKENS) * p_in
                          + WRAP_UP_OUTPUT_TOKENS * p_out) / MILLION
        return min(with_share, tokens_for(wrap_up, p_in + p_out))

    @property
    def bounds_tokens(self) -> bool:
        """Whether a token or cost limit bounds how much the conversation may grow."""
        b = self._budget
        return b.max_tokens is not None or (b.max_cost_usd is not None
                                            and self._price is not None)

    def result_room(self, conversation_tokens: int, wanted: int) -> int | None:
        """Tokens tool results may still add to the conversation so that a wrap-up turn (all of
        it resent, a note, a short answer) still fits every limit; None when ``wanted`` fits
        with room to spare (the common case, decided without Decimal arithmetic)."""
        b, t = self._budget, self.tally
        room: int | None = None
        if b.max_tokens is not None:
            tokens = b.max_tokens - t.usage.total_tokens - conversation_tokens - _WRAP
            if tokens < wanted:
                room = tokens
        if self._price is not None and b.max_cost_usd is not None:
            worst = self._price.worst()  # however far the conversation grows
            p_in = worst.input
            if p_in > 0:
                spare = b.max_cost_usd - t.cost
                f_in, f_out, _ = self._per_token
                rough = (float(spare) / f_in - conversation_tokens - _WRAP * (1 + f_out / f_in)
                         if f_in > 0 else 0.0)
                if rough < 2 * wanted + 64:  # not plainly enough: count exactly
                    exact = tokens_for(spare - ((conversation_tokens + WRAP_UP_NOTE_TOKENS)
                                                 * p_in + WRAP_UP_OUTPUT_TOKENS
                                                 * worst.output) / MILLION, p_in)
                    if exact < wanted:
                        room = exact if room is None else min(room, exact)
        return room

    def lease(self, key: str) -> Budget:
        """What a sub-agent may spend now — what is left, less the share held back for this
        session's own wrap-up, one more turn to use the answer, and what other sub-agents already
        hold — and hold it for ``key`` until ``release(key)`` (when its spend is charged), so
        sub-agents running at the same time cannot spend the same money twice."""
        b, t = self._budget, self.tally
        held = list(self._leases.values())
        tokens = cost = steps = seconds = tool_calls = None
        if b.max_tokens is not None:
            tokens = max(0, b.max_tokens - t.usage.total_tokens - self._hold_tokens
                         - sum(h.max_tokens or 0 for h in held))
        if b.max_cost_usd is not None:
            cost = max(Decimal(0), b.max_cost_usd - t.cost - self._hold_cost
                       - sum((h.max_cost_usd or Decimal(0) for h in held), Decimal(0)))
        if b.max_steps is not None:
            steps = max(0, b.max_steps - t.steps - 2 - sum(h.max_steps or 0 for h in held))
        if b.max_tool_calls is not None:
            tool_calls = max(0, b.max_tool_calls - t.tool_calls
                             - sum(h.max_tool_calls or 0 for h in held))
        deadline = self.deadline()
        if deadline is not None:
            seconds = max(0.0, deadline - self._clock())
        leased = Budget(tokens, cost, steps, tool_calls, seconds, b.final_turn_share)
        self._leases[key] = leased
        return leased

    def release(self, key: str) -> None:
        self._leases.pop(key, None)

    def overrun(self, reservation: Reservation, usage: Usage,
                cost: Decimal) -> tuple[StopReason, str] | None:
        """The limit whose reservation a finished call went past, and how, or None. A provider
        that keeps to the request (output within the cap sent, input within the estimate) never
        overruns; one that does not is stopped at once, before it can spend again. Past the cap
        sent, the reason is the limit that set the cap, else the budget's token or cost limit
        (the model's own ceiling set it), else ``model_error`` (the run has no such limit)."""
        cap = reservation.max_output_tokens
        if cap is not None and usage.output_tokens > cap:
            return self._overrun_reason(reservation), (
                f"the model returned {usage.output_tokens} output tokens; the cap it was sent "
                f"was {cap}")
        reserved = reservation.input_tokens + (cap or 0)
        if self._budget.max_tokens is not None and usage.total_tokens > reserved:
            return StopReason.TOKEN_BUDGET, (f"the model reported {usage.total_tokens} tokens; "
                                             f"{reserved} were reserved for the call")
        if self._budget.max_cost_usd is not None and cost > reservation.cost_usd:
            return StopReason.COST_BUDGET, (f"the call cost ${cost}; ${reservation.cost_usd} "
                                            "was reserved for it")
        return None

    def _overrun_reason(self, reservation: Reservation) -> StopReason:
        if reservation.bound_by is not None:
            return reservation.bound_by
        if self._budget.max_tokens is not None:
            return StopReason.TOKEN_BUDGET
        if self._budget.max_cost_usd is not None and self._price is not None:
            return StopReason.COST_BUDGET
        return StopReason.MODEL_ERROR

    def cut_short(self, reservation: Reservation) -> Stop:
        """The stop for an answer cut at the cap a limit set (``bound_by``): the run's answer
        is not a cut one, whose missing part the limit would not have paid for."""
        assert reservation.bound_by is not None
        if reservation.bound_by is StopReason.QUOTA and self.quota is not None:
            return self.quota.cut_short(reservation)
        return Stop(reservation.bound_by, f"the model's answer was cut at the "
                    f"{reservation.max_output_tokens} output tokens the budget had left")

    def settle_quota(self, reservation: Reservation, usage: Usage | None) -> None:
        """Settle the quotas' shares of a finished call (``usage`` None: at their worst case)."""
        if self.quota is not None:
            self.quota.settle(reservation, usage, self._price)

    def cost_of(self, usage: Usage) -> Decimal:
        """The actual cost of a finished call; the charge itself is applied by its event."""
        return self._price.cost(usage) if self._price is not None else Decimal(0)

    def check_tool_call(self) -> None:
        """Raise Stop if one more tool call would exceed the tool-call or time budget."""
        b = self._budget
        if b.max_tool_calls is not None and self.tally.tool_calls >= b.max_tool_calls:
            raise Stop(StopReason.TOOL_CALL_BUDGET, f"{b.max_tool_calls} tool calls used")
        deadline = self.deadline()
        if deadline is not None and self._clock() >= deadline:
            raise Stop(StopReason.TIME_BUDGET, f"{b.max_seconds}s elapsed")

    def tool_timeout(self, own_timeout: float) -> tuple[float, bool]:
        """The timeout for a tool call and whether it is the budget's (not the tool's own)."""
        deadline = self.deadline()
        if deadline is None:
            return own_timeout, False
        left = deadline - self._clock()
        return (left, True) if left < own_timeout else (own_timeout, False)
