"""Tests for guarantee mechanisms that a mutation check found untested: each case fails when the
mechanism it names is broken by one small edit (named in each test's docstring).

An overrun of one token past the reservation stops the run and one exactly at it does not; a
Basic-auth header is scrubbed whatever the length of its user name and wherever it sits; a policy
thread that dies of ``SystemExit`` or ``KeyboardInterrupt`` denies; a tool editing its arguments
in place changes no record of them. (Leases: tests/test_lease_gaps.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import (
    Agent,
    Budget,
    Decision,
    ModelRequest,
    ModelResponse,
    Price,
    ReAct,
    ScriptedModel,
    StopReason,
    Usage,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.store.base import Store

from conftest import call

# -- overruns: one token past the reservation stops the run, exactly at it does not ------------

class Answers(ScriptedModel):
    """Answers once, reporting ``extra_input`` tokens more than the request's estimate and
    ``extra_output`` more than the cap it was sent."""

    def __init__(self, extra_input: int, extra_output: int, **kwargs: Any) -> None:
        super().__init__(["x"], when_exhausted="x", **kwargs)
        self.extra_input, self.extra_output = extra_input, extra_output

    async def complete(self, request: ModelRequest) -> ModelResponse:
        assert request.max_output_tokens is not None and request.input_tokens_estimate
        usage = Usage(request.input_tokens_estimate + self.extra_input,
                      request.max_output_tokens + self.extra_output)
        return ModelResponse("an answer", (), usage, "m", "stop")


TOKENS, DOLLARS = Budget(max_tokens=500), Budget(max_cost_usd=Decimal("0.0005"))
OVERRUNS: dict[str, tuple[Budget, dict[str, int], StopReason]] = {
    "output one past the cap": (TOKENS, {"output": 1}, StopReason.TOKEN_BUDGET),
    "input one past the estimate": (TOKENS, {"input": 1}, StopReason.TOKEN_BUDGET),
    "a few tokens past": (TOKENS, {"input": 2, "output": 1}, StopReason.TOKEN_BUDGET),
    "output past the cap, within the total": (TOKENS, {"input": -2, "output": 1},
                                              StopReason.TOKEN_BUDGET),
    "cost one input token past": (DOLLARS, {"input": 1}, StopReason.COST_BUDGET),
    "output past the cap, within the cost": (DOLLARS, {"input": -2, "output": 1},
                                             StopReason.COST_BUDGET),
}
PRICE = Price(Decimal("1"), Decimal("2"))


def _events(session: Any, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in session.replay() if e.type == kind]


@pytest.mark.parametrize("name", list(OVERRUNS))
def test_an_overrun_just_past_the_reservation_stops_the_run(name: str) -> None:
    """Breaks it: ``>=`` for ``>``, or any slack, in ``Accountant.overrun``."""
    budget, extra, limit = OVERRUNS[name]
    model = Answers(extra.get("input", 0), extra.get("output", 0), price=PRICE)
    session = Agent(model=model, reasoning=ReAct()).session("answer", budget=budget)
    result = session.run()
    assert result.stop_reason is limit, result.stop_detail
    (overrun,) = _events(session, "model.overrun")
    assert overrun["limit"] == limit.value
    (request,) = _events(session, "model.request")
    assert request["max_output_tokens"] > 10 and request["reserved_input"] > 10  # none is clamped


@pytest.mark.parametrize("budget", [TOKENS, DOLLARS, TOKENS.tighter(DOLLARS)])
def test_a_call_exactly_at_its_reservation_is_no_overrun(budget: Budget) -> None:
    """Breaks it: ``>=`` for ``>`` in ``Accountant.overrun``."""
    session = Agent(model=Answers(0, 0, price=PRICE), reasoning=ReAct()).session(
        "answer", budget=budget)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.stop_detail
    assert _events(session, "model.overrun") == []
    (request,) = _events(session, "model.request")
    spent = request["reserved_input"] + request["max_output_tokens"]
    assert result.spend.tokens == spent  # it did use the whole reservation
    assert result.spend.cost_usd == Decimal(request["reserved_cost_usd"])



@settings(max_examples=60, deadline=None)
@given(extra_input=st.integers(-3, 3), extra_output=st.integers(-3, 3),
       budget=st.sampled_from([TOKENS, DOLLARS, TOKENS.tighter(DOLLARS)]))
def test_a_run_stops_exactly_when_a_reported_use_passes_its_reservation(
        extra_input: int, extra_output: int, budget: Budget) -> None:
    """Around the reservation, a few tokens either way: the run stops with an overrun exactly
    when the output passes the cap, or the limit's measure (tokens, cost) passes what was
    reserved; otherwise it finishes."""
    session = Agent(model=Answers(extra_input, extra_output, price=PRICE),
                    reasoning=ReAct()).session("answer", budget=budget)
    result = session.run()
    (request,) = _events(session, "model.request")
    cap, reserved_input = request["max_output_tokens"], request["reserved_input"]
    output, used_input = cap + extra_output, reserved_input + extra_input
    over = output > cap or (
        budget.max_tokens is not None and used_input + output > reserved_input + cap) or (
        budget.max_cost_usd is not None and PRICE.input * used_input + PRICE.output * output
        > Decimal(request["reserved_cost_usd"]) * 1_000_000)
    overruns = _events(session, "model.overrun")
    assert (len(overruns) == 1) is over, (request, overruns)
    assert (result.stop_reason is StopReason.FINISHED) is not over, result.stop_detail


# -- a Basic-auth header is scrubbed whatever the length of its user name -------------------------

def test_a_basic_auth_header_is_scrubbed_for_every_user_name_length() -> None:
    """Breaks it: the base64 scrubber decoding runs as they stand, without re-padding them.
    With ``len(user + ":") % 3 == 0`` the secret's own base64 is a substring of the header;
    otherwise only decoding the whole header finds it."""
    import base64

    from tether.credentials import ScopedToken

    for secret in ("s3cr3t-Value-9", "s3cr3t-Value-90", "s3cr3t-Value-901"):
        token = ScopedToken(secret, session_id="s", tool="t")
        for user in ("a", "ab", "abc", "svc-billing", "svc-billin", "svc-billi", "élodie"):
            header = base64.b64encode(f"{user}:{secret}".encode()).decode()
            for shown in (header, header.rstrip("="), base64.urlsafe_b64encode(
                    f"{user}:{secret}".encode()).decode().rstrip("=")):
                text = f"GET /invoices\nAuthorization: Basic {shown}\n"
                scrubbed = token.redact(text)
                assert shown not in scrubbed and secret not in scrubbed, (user, secret, shown)
                assert scrubbed.startswith("GET /invoices\nAuthorization: Basic ")
                assert scrubbed.endswith("[secret redacted]\n")  # at most the user name is left


def _leaks(secret: str, user: str, scrubbed: str) -> list[str]:
    """The forms of ``user:secret`` (and of the secret) still readable in ``scrubbed``."""
    import base64
    import urllib.parse

    header = f"{user}:{secret}".encode()
    forms = [secret, *(encode(header).decode().rstrip("=")
                       for encode in (base64.b64encode, base64.urlsafe_b64encode))]
    return [form for form in forms
            if form in scrubbed or urllib.parse.quote(form, safe="") in scrubbed]


@settings(max_examples=300, deadline=None)
@given(secret=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=8,
                      max_size=40),
       user=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
       glued=st.text("ABCxyz019+/-_", max_size=5),
       url_encoded=st.booleans(), url_safe=st.booleans())
def test_a_basic_auth_header_is_scrubbed_wherever_it_sits(
        secret: str, user: str, glued: str, url_encoded: bool, url_safe: bool) -> None:
    """Any user name, any secret, the header's base64 glued to base64-looking text before it
    (``token/``, ``%20``, a word) or percent-encoded as in a URL: no form of the secret is left.
    Breaks it: decoding a run only from its first character (its alignment is then wrong); not
    joining the pieces percent-encoding cuts the base64 into."""
    import base64
    import urllib.parse

    from tether.credentials import ScopedToken

    encode = base64.urlsafe_b64encode if url_safe else base64.b64encode
    header = encode(f"{user}:{secret}".encode()).decode()
    shown = glued + (urllib.parse.quote(header, safe="") if url_encoded else header)
    scrubbed = ScopedToken(secret, session_id="s", tool="t").redact(f"auth=Basic%20{shown}&x=1")
    assert _leaks(secret, user, scrubbed) == [], scrubbed
    assert "[secret redacted]" in scrubbed and scrubbed.endswith("&x=1")


# -- a policy thread that dies of SystemExit or KeyboardInterrupt denies ------------------------

@pytest.mark.parametrize("death", [SystemExit, KeyboardInterrupt])
def test_a_policy_thread_that_dies_denies_and_the_tool_does_not_run(
        death: type[BaseException]) -> None:
    """Breaks it: the policy thread signals its end only when ``decide`` returns or raises an
    Exception (the caller then waits out the whole deadline, and calls the silence a timeout)."""
    ran: list[str] = []

    @tool(side_effect=True)
    def transfer(amount: int) -> str:
        """Transfer money."""
        ran.append(str(amount))
        return "transferred"

    class Dies:  # not inline: it runs on a policy thread, within its deadline
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            raise death("the policy process is going down")

    model = ScriptedModel([call("transfer", {"amount": 5}), "could not transfer"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[transfer], policy=Dies(),
                  policy_timeout=3600.0)
    session = agent.session("transfer 5")
    result = session.run()
    assert ran == []
    (outcome,) = result.trajectory.steps[0].results
    assert outcome.status == "denied"
    (decision,) = _events(session, "tool.decision")
    assert decision["decision"]["effect"] == "deny"
    reason = decision["decision"]["reason"]
    assert "did not decide within" not in reason and death.__name__ in reason, reason
    assert result.stop_reason is StopReason.FINISHED


@pytest.mark.parametrize("death", [SystemExit, KeyboardInterrupt])
async def test_a_gateway_policy_thread_that_dies_denies_and_the_tool_does_not_run(
        death: type[BaseException]) -> None:
    """The same through the MCP gateway's chokepoint. Breaks it: the same."""
    from tether.runtime.chokepoint.gateway import Gateway

    ran: list[int] = []

    @tool(side_effect=True)
    def transfer(amount: int) -> str:
        """Transfer money."""
        ran.append(amount)
        return "transferred"

    class Dies:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            raise death("the policy process is going down")

    gateway = Gateway([transfer], policy=Dies(), client="ide", policy_timeout=3600.0)
    result = await gateway.call("transfer", {"amount": 5})
    assert result.status == "denied" and f"the policy raised {death.__name__}" in result.content
    assert ran == []


# -- a tool that edits a nested argument in place changes no record of the call --------------

def _decided(events: Iterable[Any]) -> Any:
    return next(e.data["arguments"] for e in events if e.type == "tool.decision")


def test_a_tool_editing_a_nested_argument_changes_neither_journal_nor_session_record(
        store: Store) -> None:
    """Breaks it: the tool given a shallow copy of the decided arguments."""
    sent = {"payment": {"amount": 5, "to": ["A"]}}

    @tool(side_effect=True)
    def pay(payment: dict[str, Any]) -> str:
        """Pay (and, badly, rewrite what it was given)."""
        payment["amount"] = 1_000_000
        payment["to"].append("MALLORY")
        return "paid"

    model = ScriptedModel([call("pay", sent, "c1"), "paid"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[pay], store=store)
    session = agent.session("pay A 5")
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED
    records: dict[str, Callable[[], Any]] = {
        "the journal": lambda: _decided(store.read(session.id)),
        "the replay": lambda: _decided(session.replay()),
        "what the session says the call sent": lambda: session._state.ran[-1].sent,
        "the trajectory": lambda: result.trajectory.steps[0].tool_calls[0].arguments,
        "what a reloaded session says it sent": lambda: agent.load(session.id)._state.ran[-1].sent,
    }
    for where, read in records.items():
        assert read() == sent, where
