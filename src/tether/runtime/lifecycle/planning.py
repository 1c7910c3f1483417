"""The planner: one governed model call that reads the request before the first model turn.

Why: the request plan (``tether.policy.plan``) is read by rules, which miss a paraphrase ("settle
up with Bob for dinner" uses no word of ``send_money``'s intents), so a benign side effect waits
for a person. A model reads it better; its reading is only trusted as far as ``validated``
(``tether.policy.planner``) can check it against the request.

Decision: off by default (``Agent(planner=ModelPlanner(...))``); a recipe without it pays nothing,
not even an import. With it, when the rules read a plan (a tool a request can ask for exists), the
run makes one call right after the session's start, before the first model turn: the planner sees
the request and the tools' descriptions — never a tool result, nothing untrusted — with every
registered secret blanked. The call is governed as a compaction's summary is, by the one governed
call (``tether.runtime.chokepoint.model_call``): reserved through the accountant at the planner's
price with its output capped at ``max_tokens``; ``plan.request`` durable before it is sent;
``plan.response`` (its charge: tokens and cost, not a step) or ``plan.error`` (why, charged its
reservation when the provider may well have billed it: cancelled for time, usage unusable, lost);
then ``plan.amended`` (the merged plan, what the planner added and what was rejected), which the
state folds into the plan every later decision reads. A call that does not fit the budget is not
made; one that fails leaves the rules' plan, and the event says why. A planner that reports more
than it was allowed is an overrun: charged, journaled, and the run stops.

The planner is never called twice: a call interrupted is charged at its reservation at once, and
on resume a ``plan.request`` with no outcome (the process died during the call) is charged so
(``plan.error``, lost); either way the rules' plan stands. An answer with no ``plan.amended`` is
read from the journal. A session that already asked the model for a turn is not planned again.
A rerun replays the recorded answer (``tether.runtime.rerun``), so its decisions read the
recorded plan.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, WrongType
from tether.journal.chain import Journal
from tether.models.base import CallCancelled, Model, native_output
from tether.policy.plan import askable
from tether.policy.planner import answer_schema, prompt, validated
from tether.runtime.accounting.accountant import Accountant, Reservation
from tether.runtime.accounting.stop import Stop, StopLatch, Stoppable
from tether.runtime.chokepoint.gate import resource_of
from tether.runtime.chokepoint.model_call import Door, ModelCall, Unanswered
from tether.runtime.record.state import SessionState
from tether.types import Message, ModelRequest, StructuredRequest
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.lifecycle.session import Session

FALLBACK = "the rules' plan stands"


@dataclass(frozen=True, slots=True)
class ModelPlanner:
    """A governed model reading of the request, widening the rules' plan (see the module
    docstring). ``model``: the planner (None: the agent's own model), charged to the session's
    budget at its own price. ``max_tokens``: the output cap of its one call."""

    model: Model | None = field(default=None, compare=False)
    max_tokens: int = 256

    def __post_init__(self) -> None:
        if type(self.max_tokens) is not int or self.max_tokens < 16:
            raise InvalidArgument(f"ModelPlanner.max_tokens must be a whole number >= 16 (the "
                                  f"output cap of the planner's call); got {self.max_tokens!r}")
        if self.model is not None and not isinstance(self.model, Model):
            raise WrongType(f"ModelPlanner.model {self.model!r} is not a tether Model (or "
                            "None: the agent's own model)")

    def check(self, cost_limited: bool) -> None:
        """Refuse, where the recipe is built, a planner a cost limit could not price."""
        if cost_limited and self.model is not None and self.model.price is None:
            raise InvalidArgument(
                f"the budget has a cost limit and the planner {self.model.name!r} has no "
                "price, so its call could not be charged: give it a price or leave "
                "ModelPlanner(model=None) to plan with the agent's model")


async def read_with_model(session: Session, env: Stoppable, journal: Journal,
                          state: SessionState, accountant: Accountant) -> None:
    """Widen the session's plan by the planner's reading, or finish a reading a crash or an
    interruption cut short; nothing when there is nothing to do."""
    last = state.planning
    if last is not None:
        kind, data = last
        if kind == EventType.PLAN_REQUEST:  # its answer died with the process
            _failed(journal, "lost: the run stopped during the planner's call, so its answer "
                    "is not known; it is not asked again", data)
        elif kind == EventType.PLAN_RESPONSE:  # answered, not yet read: read it now
            _amend(session, journal, state, data["text"])
        return
    planner = session.agent.planner
    if planner is None or state.plan is None or state.conversation or state.tally.steps:
        return  # off, nothing a request can ask for, or too late: the model was asked a turn
    with StopLatch(env):
        await _ask(session, planner, journal, state, accountant)


async def _ask(session: Session, planner: ModelPlanner, journal: Journal, state: SessionState,
               accountant: Accountant) -> None:
    agent = session.agent
    model = planner.model or agent.model
    priced = accountant if planner.model is None else accountant.at_price(planner.model.price)
    resources = [resource_of(t) for t in agent.registry]
    system, user = prompt(session.request, resources,
                          {t.name: t.spec.description for t in agent.registry})
    messages = (Message.system(system), Message.user(journal.hide_secrets(user)))
    estimate = sum(map(model.estimate_message_tokens, messages))
    tools = [r.name for r in askable(resources)]

    def unusable(*_: Any) -> Unanswered:
        _failed(journal, "the planner reported unusable usage: charged at the reservation",
                reservation)
        return Unanswered("unusable usage")

    def failed(exc: BaseException, *_: Any) -> BaseException | None:
        if isinstance(exc, asyncio.CancelledError):  # interrupted: charged now, as a turn is
            _failed(journal, "interrupted during the planner's call, which may well have been "
                    "billed; it is not asked again", reservation)
            return None
        expired = isinstance(exc, TimeoutError | CallCancelled)  # it may well have been billed
        error = ("the time budget ran out during the planner's call" if expired
                 else f"{type(exc).__name__}: {exc}")
        _failed(journal, journal.hide_secrets(error), reservation if expired else None)
        return Unanswered(error)

    call = ModelCall(journal, priced, Door(EventType.PLAN_REQUEST, EventType.PLAN_RESPONSE,
                                           unusable, {"purpose": "plan"},
                                           "overrun of the planner's call"))
    try:
        reservation = call.reserve(estimate, ceiling=planner.max_tokens)
    except Stop as refused:
        _failed(journal, f"the planner's call does not fit the budget ({refused.detail}); it "
                "was not made", None)
        return
    _, durable = call.open({
        "model": model.name, "tools": tools, "max_tokens": planner.max_tokens,
        "max_output_tokens": reservation.max_output_tokens,
        "reserved_input": reservation.input_tokens, "reserved_cost_usd": reservation.cost_usd})
    await durable
    request: ModelRequest = (  # (durable before the call: a crash during it is charged)
        StructuredRequest(messages, (), reservation.max_output_tokens, estimate,
                          output_schema=answer_schema(tools))
        if native_output(model, False) else
        ModelRequest(messages, (), reservation.max_output_tokens, estimate))
    try:
        response = await call.answer(model.complete(request), 0, reservation,
                                     reservation.deadline, failed)
        text = journal.hide_secrets(response.text)
        call.settle(0, response, reservation, {
            "text": text, "model": response.model, "finish_reason": response.finish_reason,
            **response.usage.to_dict(), "cache_write_tokens": response.usage.cache_write_tokens,
            "reserved_input": reservation.input_tokens})
    except Unanswered:
        return
    _amend(session, journal, state, text)


def _amend(session: Session, journal: Journal, state: SessionState, text: str) -> None:
    """Journal the plan widened by the planner's answer ``text`` (``plan.amended``)."""
    rules = state.plan
    assert rules is not None  # (a planner is asked only when the rules read a plan)
    resources = [resource_of(t) for t in session.agent.registry]
    merged, rejected = validated(text, session.request, resources, rules)
    added = [e.to_dict() for e in merged.entries[len(rules.entries):]]
    journal.append(EventType.PLAN_AMENDED, {
        "plan": merged.to_dict(), "added": added,
        "rejected": [journal.hide_secrets(r) for r in rejected]})


def _failed(journal: Journal, error: str, charged: Mapping[str, Any] | Reservation | None,
            ) -> None:
    """Journal a planner's call that gave no usable answer, the rules' plan standing: charged
    at its reservation (a ``Reservation``, or a journaled ``plan.request``) when the provider
    may well have billed it, else not."""
    charge: tuple[int, int, Any]
    if isinstance(charged, Reservation):
        charge = (charged.input_tokens, charged.max_output_tokens or 0, charged.cost_usd)
    elif charged is not None:
        charge = (charged["reserved_input"], charged["max_output_tokens"] or 0,
                  charged["reserved_cost_usd"])
    else:
        charge = (0, 0, 0)
    journal.append(EventType.PLAN_ERROR, {
        "error": error, "fallback": FALLBACK, "input_tokens": charge[0],
        "output_tokens": charge[1], "cached_input_tokens": 0, "cost_usd": charge[2]})
