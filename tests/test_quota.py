"""Quotas (issue 49, part 2), in one process: the store's ledger on memory, SQLite and
PostgreSQL; a quota's stop (which quota, when it frees up); the effective limit — the smaller of
the budget and the quota's room — with the wrap-up turn still fitting; tenant isolation; the
policy YAML's ``quotas:`` and its load errors. Worker processes racing, and a worker killed
mid-call, are ``test_quota_workers.py``."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import (
    Agent,
    Budget,
    InvalidArgument,
    ModelResponse,
    Price,
    Quota,
    ReAct,
    ScriptedModel,
    StopReason,
    ToolCall,
    Usage,
    tool,
)
from tether.policy import PolicyLoadError, YamlPolicy
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.quotas import QuotaAsk, QuotaGrant, QuotaRefusal
from tether.types import ModelRequest
from tether.vocabulary import EventType


def ask(need: int, amount: int, hold: int = 0, *, session: str = "s1", settled: bool = True,
        expires_at: float = 0.0, limit: int = 10, key: str = "k") -> QuotaAsk:
    return QuotaAsk(key, limit, 100.0, need, lambda room: (amount, hold), session, "h",
                    expires_at, settled)


def test_the_ledger_counts_a_rolling_window_and_says_when_it_frees(store: Store) -> None:
    ledger: Any = store
    assert isinstance(ledger.quota_reserve(ask(4, 4), 1000.0), QuotaGrant)
    assert isinstance(ledger.quota_reserve(ask(5, 5), 1010.0), QuotaGrant)
    refused = ledger.quota_reserve(ask(2, 2), 1020.0)
    assert refused == QuotaRefusal(9, 1100.0)  # the first 4 leave the window at 1000 + 100
    assert ledger.quota_reserve(ask(6, 6), 1020.0) == QuotaRefusal(9, 1110.0)  # needs both
    assert isinstance(ledger.quota_reserve(ask(2, 2), 1100.01), QuotaGrant)
    assert ledger.quota_used("k", 100.0, 1100.01) == 7
    assert ledger.quota_used("other", 100.0, 1100.01) == 0  # keys apart


def test_an_unsettled_reservation_counts_until_it_expires_then_settles_to_actual(
        store: Store) -> None:
    ledger: Any = store
    got = ledger.quota_reserve(ask(3, 3, 4, settled=False, expires_at=1050.0), 1000.0)
    assert isinstance(got, QuotaGrant)
    assert ledger.quota_used("k", 100.0, 1049.0) == 7  # its amount and its hold
    assert ledger.quota_used("k", 100.0, 1051.0) == 0  # lapsed: no longer (no lease holds it)
    # its own session does not count its own hold against its next call
    mine = ledger.quota_reserve(ask(7, 1, session="s1", settled=False, expires_at=1060.0),
                                1010.0)
    assert isinstance(mine, QuotaGrant)
    assert ledger.quota_reserve(ask(7, 1, session="s2"), 1010.0) == QuotaRefusal(4, None)
    ledger.quota_settle(got.row, 2, 4, 1020.0)  # settled: the amount counts, by its time
    assert ledger.quota_used("k", 100.0, 1030.0) == 2 + 1  # the hold lives only with a lease
    assert ledger.quota_used("k", 100.0, 1121.0) == 0  # out of the window


@given(asks=st.lists(st.integers(1, 4), min_size=1, max_size=30))
@settings(max_examples=30, deadline=None)
def test_threads_racing_one_memory_store_never_exceed_a_quota(asks: list[int]) -> None:
    ledger = MemoryStore()
    granted: list[int] = []
    go = threading.Barrier(len(asks))

    def worker(need: int, session: str) -> None:
        go.wait()
        got = ledger.quota_reserve(ask(need, need, session=session, limit=12), time.time())
        if isinstance(got, QuotaGrant):
            granted.append(got.amount)

    threads = [threading.Thread(target=worker, args=(n, f"s{i}")) for i, n in enumerate(asks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(granted) <= 12
    assert sum(granted) == min(sum(asks), sum(granted))  # a refusal only when it did not fit


@tool(side_effect=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def refunds(n: int) -> list[Any]:
    return [*(ModelResponse(tool_calls=(ToolCall("", "refund", {"order": f"o{i}"}),))
              for i in range(n)), "all refunded"]


def refund_agent(store: Store, n: int, **kwargs: Any) -> Agent:
    return Agent(model=ScriptedModel(refunds(n)), reasoning=ReAct(), tools=[refund],
                 store=store, **kwargs)


REFUNDS = Quota("refunds", 2, "1h", per="tenant", tool="refund")


def test_a_stop_for_quota_names_the_quota_and_when_it_frees_up(store: Store) -> None:
    before = time.time()
    first = refund_agent(store, 2, quotas=[REFUNDS]).run("refund", tenant_id="acme")
    assert first.stop_reason is StopReason.FINISHED
    result = refund_agent(store, 1, quotas=[REFUNDS]).run("refund", tenant_id="acme")
    assert result.stop_reason is StopReason.QUOTA
    assert "quota 'refunds'" in result.stop_detail and "tenant acme" in result.stop_detail
    assert "2 tool calls used of 2 tool calls" in result.stop_detail
    assert "frees up at 20" in result.stop_detail and "Z (in 36" in result.stop_detail
    assert result.answer == "all refunded"  # the wrap-up turn still ran
    events = store.read(result.session_id)
    refused = [e.data for e in events if e.type == EventType.QUOTA_REFUSED]
    assert len(refused) == 1 and refused[0]["quota"] == "refunds"
    assert before + 3600 <= refused[0]["frees_at"] <= time.time() + 3600
    ended = [e for e in events if e.type == EventType.SESSION_END][-1]
    assert ended.data["reason"] == "quota"
    results = [e.data for e in events if e.type == EventType.TOOL_RESULT]
    assert not any("refunded" in str(r) for r in results)  # the refused call never ran


def test_one_tenants_use_never_counts_against_anothers(store: Store) -> None:
    agent = refund_agent(store, 2, quotas=[REFUNDS])
    assert agent.run("refund", tenant_id="acme").stop_reason is StopReason.FINISHED
    assert agent.run("refund", tenant_id="acme").stop_reason is StopReason.QUOTA
    assert agent.run("refund", tenant_id="globex").stop_reason is StopReason.FINISHED
    per_user = Quota("mine", 2, "1h", per="user", tool="refund")
    agent = refund_agent(store, 2, quotas=[per_user])
    assert agent.run("refund", user_id="ann").stop_reason is StopReason.FINISHED
    assert agent.run("refund", user_id="bob").stop_reason is StopReason.FINISHED
    assert agent.run("refund", user_id="ann").stop_reason is StopReason.QUOTA


class Chatty:
    """Answers every non-final turn with a lookup call and as long a text as allowed; records
    the cap each request was sent."""

    def __init__(self) -> None:
        self.caps: list[tuple[int | None, bool]] = []

    def __call__(self, request: ModelRequest) -> ModelResponse:
        final = not request.tools
        self.caps.append((request.max_output_tokens, final))
        if final:
            return ModelResponse("wrapped up", (), Usage(output_tokens=20))
        return ModelResponse("x", (ToolCall("", "lookup", {"q": str(len(self.caps))}),),
                             Usage(output_tokens=150))


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def test_the_effective_limit_is_the_quotas_room_and_the_wrap_up_still_fits(store: Store) -> None:
    tokens = Quota("tokens", 1500, "1d", per="agent", counts="tokens")
    chatty = Chatty()
    agent = Agent(model=ScriptedModel(chatty), reasoning=ReAct(), tools=[lookup], store=store,
                  quotas=[tokens], budget=Budget(max_tokens=100_000))
    result = agent.run("look it all up")
    assert result.stop_reason is StopReason.QUOTA  # not the budget: the quota is smaller
    assert result.answer == "wrapped up"  # the wrap-up fit inside the quota's hold
    assert result.usage.total_tokens <= 1500
    events = store.read(result.session_id)
    assert not [e for e in events if e.type == EventType.SESSION_WRAP_UP_SKIPPED]
    assert chatty.caps[-1][1] and not any(final for _, final in chatty.caps[:-1])
    assert all(cap is not None and cap < 1500 // 2 for cap, _ in chatty.caps)  # clamped
    # the budget, when it is the smaller, binds as before
    small = Agent(model=ScriptedModel(Chatty()), reasoning=ReAct(), tools=[lookup],
                  store=store, quotas=[Quota("big", 10**9, "1d", counts="tokens")],
                  budget=Budget(max_tokens=900))
    assert small.run("look").stop_reason is StopReason.TOKEN_BUDGET


def test_a_cost_quota_counts_dollars_and_needs_a_price(store: Store) -> None:
    price = Price(input=Decimal("1"), output=Decimal("2"))
    spend = Quota("spend", Decimal("0.003"), "1d", per="agent", counts="cost_usd")
    agent = Agent(model=ScriptedModel(Chatty(), price=price), reasoning=ReAct(),
                  tools=[lookup], store=store, quotas=[spend])
    result = agent.run("look it all up")
    assert result.stop_reason is StopReason.QUOTA and "'spend'" in result.stop_detail
    assert Decimal(0) < result.spend.cost_usd <= Decimal("0.003")
    unpriced = Agent(model=ScriptedModel(["hi"], price=None), reasoning=ReAct(), store=store,
                     quotas=[spend])
    with pytest.raises(InvalidArgument, match="needs the model's price"):
        unpriced.run("hi")


def test_quotas_are_checked_when_made() -> None:
    with pytest.raises(InvalidArgument, match="kept in the store"):
        Agent(model=ScriptedModel(["hi"]), reasoning=ReAct(), quotas=[REFUNDS])
    with pytest.raises(InvalidArgument, match="given twice"):
        Agent(model=ScriptedModel(["hi"]), reasoning=ReAct(), store=MemoryStore(),
              quotas=[REFUNDS, REFUNDS])
    for bad, match in (({"counts": "seconds"}, "Quota.counts"), ({"per": "planet"}, "Quota.per"),
                       ({"window": 0}, "positive"), ({"window": "1 fortnight"}, "not a span"),
                       ({"window": float("nan")}, "finite"), ({"limit": -1}, "whole number"),
                       ({"limit": 1.5}, "whole number"),
                       ({"counts": "tokens", "tool": "x"}, "tool"),
                       ({"counts": "cost_usd", "limit": float("nan")}, "finite")):
        args: dict[str, Any] = {"name": "q", "limit": 1, "window": 60, **bad}
        with pytest.raises(InvalidArgument, match=match):
            Quota(**args)
    assert Quota("q", 1, "90s").seconds == 90.0 and Quota("q", 1, "2d").seconds == 172800.0


POLICY = """
version: 1
policy_id: fleet
default: allow
rules: []
quotas:
  - id: refunds
    tool: refund
    limit: 2
    window: 1h
    per: tenant
  - {id: spend, counts: cost_usd, limit: 0.5, window: 1d, per: agent}
"""


def test_yaml_quotas_load_and_are_enforced(store: Store) -> None:
    policy = YamlPolicy.from_string(POLICY)
    assert policy.quotas == (REFUNDS, Quota("spend", Decimal("0.5"), 86400.0, per="agent",
                                            counts="cost_usd"))
    agent = refund_agent(store, 3, policy=policy)
    result = agent.run("refund", tenant_id="acme")
    assert result.stop_reason is StopReason.QUOTA and "'refunds'" in result.stop_detail


@pytest.mark.parametrize(("entry", "message"), [
    ("{id: q, limt: 2, window: 1h}", "unknown key 'limt'"),
    ("{id: q, window: 1h}", "required key 'limit'"),
    ("{id: q, limit: twenty, window: 1h}", "expected a number"),
    ("{id: q, limit: .nan, window: 1h}", "finite"),
    ("{id: q, limit: true, window: 1h}", "expected a number"),
    ("{id: q, limit: 2.5, window: 1h}", "whole number"),
    ("{id: q, limit: -2, window: 1h}", "whole number >= 0"),
    ("{id: q, limit: 2, window: .inf}", "finite"),
    ("{id: q, limit: 2, window: yes}", "expected a number"),
    ("{id: q, limit: 2, window: 1 week}", "not a span"),
    ("{id: q, limit: 2, window: 1h, per: planet}", "expected one of agent, tenant, user"),
    ("{id: q, limit: 2, window: 1h, counts: seconds}", "expected one of tokens"),
    ("{id: q, limit: 2, window: 1h, counts: tokens, tool: refund}", "Quota.tool"),
    ("{id: q, limit: 2, window: 1h}\n  - {id: q, limit: 3, window: 1h}", "already used"),
])
def test_yaml_quota_errors_are_load_errors(entry: str, message: str) -> None:
    text = f"version: 1\npolicy_id: p\nrules: []\nquotas:\n  - {entry}\n"
    with pytest.raises(PolicyLoadError, match=message) as caught:
        YamlPolicy.from_string(text, "p.yaml")
    assert "p.yaml, line" in str(caught.value)


def test_a_wrap_up_runs_inside_its_hold_while_another_session_takes_the_rest(
        store: Store) -> None:
    """Session A is between calls (running a tool) when session B, on another thread, spends
    all the quota it can: A's next call is refused, and its wrap-up still runs, inside the hold
    A kept."""
    tokens = Quota("tokens", 3000, "1d", per="tenant", counts="tokens")
    other: list[Any] = []

    def greedy(request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return ModelResponse("b wrapped up", (), Usage(output_tokens=10))
        return ModelResponse("y", (ToolCall("", "lookup", {"q": f"b{len(request.messages)}"}),),
                             Usage(output_tokens=request.max_output_tokens or 0))

    def run_b() -> None:
        b = Agent(model=ScriptedModel(greedy), reasoning=ReAct(), tools=[lookup], store=store,
                  quotas=[tokens], name="b")
        other.append(b.run("spend it all", tenant_id="acme"))

    @tool
    def meanwhile(q: str) -> str:
        """Look something up, slowly: another session runs meanwhile."""
        if not other:
            thread = threading.Thread(target=run_b)
            thread.start()
            thread.join()
        return "found"

    def a_model(request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return ModelResponse("a wrapped up", (), Usage(output_tokens=20))
        return ModelResponse("x", (ToolCall("", "meanwhile", {"q": f"a{len(request.messages)}"}),),
                             Usage(output_tokens=40))

    a = Agent(model=ScriptedModel(a_model), reasoning=ReAct(), tools=[meanwhile], store=store,
              quotas=[tokens], name="a")
    result = a.run("look", tenant_id="acme")
    assert other[0].stop_reason is StopReason.QUOTA
    assert result.stop_reason is StopReason.QUOTA
    assert result.answer == "a wrapped up"  # inside its hold, though B took everything else
    assert result.usage.total_tokens + other[0].usage.total_tokens <= 3000


def test_a_failed_call_keeps_its_worst_case(store: Store) -> None:
    tokens = Quota("tokens", 10_000, "1d", per="tenant", counts="tokens")

    def broken(request: ModelRequest) -> ModelResponse:
        raise ConnectionError("the provider went away")

    agent = Agent(model=ScriptedModel(broken), reasoning=ReAct(), store=store, quotas=[tokens])
    result = agent.run("hi", tenant_id="acme")
    assert result.stop_reason is StopReason.MODEL_ERROR
    requests = [e.data for e in store.read(result.session_id)
                if e.type == EventType.MODEL_REQUEST]
    worst = requests[0]["reserved_input"] + requests[0]["max_output_tokens"]
    ledger: Any = store
    assert ledger.quota_used(tokens.key(a_subject("acme")), tokens.seconds, time.time()) == worst


def a_subject(tenant: str) -> Any:
    from tether.policy import Subject

    return Subject(None, tenant, frozenset(), "agent")


def test_a_steps_quota_counts_model_calls_with_the_wrap_up_held(store: Store) -> None:
    steps = Quota("turns", 4, "1h", per="agent", counts="steps")
    agent = Agent(model=ScriptedModel(Chatty()), reasoning=ReAct(), tools=[lookup], store=store,
                  quotas=[steps])
    result = agent.run("look")
    assert result.stop_reason is StopReason.QUOTA and "'turns'" in result.stop_detail
    assert result.answer == "wrapped up"
    assert result.spend.steps == 4  # three turns, and the wrap-up inside the hold of the third
    assert agent.run("again").stop_reason is StopReason.QUOTA  # none left in the window


def test_an_unsettled_reservation_lives_as_long_as_its_sessions_lease(store: Store) -> None:
    """Past its own expiry, a reservation still counts while the worker that made it holds its
    session's lease (a call longer than one ttl, renewed meanwhile); released, it stops."""
    from tether.journal.chain import Journal
    from tether.store.base import Lease

    lease = Lease("worker-1", 1, 30.0)
    journal = Journal("leased", store=store)
    journal.lease = lease
    journal.append(EventType.SESSION_NOTE, {"note": "running"})
    journal.flush()  # the first append takes the lease for 30 s
    ledger: Any = store
    now = time.time()
    got = ledger.quota_reserve(QuotaAsk("k", 10, 100.0, 3, lambda room: (3, 0), "leased",
                                        "worker-1", now + 1.0), now)
    assert isinstance(got, QuotaGrant)
    assert ledger.quota_used("k", 100.0, now + 5.0) == 3  # its own expiry passed; lease holds
    stranger = QuotaAsk("k2", 10, 100.0, 3, lambda room: (3, 0), "leased", "worker-2",
                        now + 1.0)  # the same session, another holder: not its lease
    assert isinstance(ledger.quota_reserve(stranger, now), QuotaGrant)
    assert ledger.quota_used("k2", 100.0, now + 5.0) == 0
    store.release("leased", lease)
    assert ledger.quota_used("k", 100.0, now + 5.0) == 0  # the lease let go: no longer
