"""Recall of earlier conversations: BM25 over the journals' turns, never across tenants, offered
to a model only as a governed read-only tool whose results are untrusted."""

from __future__ import annotations

import json

import pytest

from tether import Agent, ReAct, ScriptedModel
from tether.knowledge import ConversationStore
from tether.store.base import Store

from conftest import TaintWatch, call


def converse(store: Store, tenant: str, user: str, thread: str, said: str,
             answer: str) -> str:
    agent = Agent(model=ScriptedModel(lambda r: answer), reasoning=ReAct(), store=store)
    return agent.run(said, user_id=user, tenant_id=tenant, thread=thread).session_id


@pytest.fixture
def conversations(store: Store) -> Store:
    converse(store, "acme", "ada", "trip", "book a flight to Lisbon in May", "Booked TP123.")
    converse(store, "acme", "ada", "food", "I am allergic to peanuts", "Noted.")
    converse(store, "acme", "bob", "trip", "my flight to Oslo got cancelled", "Rebooked.")
    converse(store, "globex", "ada", "trip", "flight to Lisbon for the globex offsite",
             "Done.")
    return store


def test_search_ranks_by_bm25_within_the_users_threads(conversations: Store) -> None:
    memory = ConversationStore(conversations)
    found = memory.search("Lisbon flight", tenant_id="acme", user_id="ada")
    assert [r.user for r in found] == ["book a flight to Lisbon in May"]  # no shared word: none
    assert found[0].thread_id == "trip" and found[0].score > 0
    assert memory.search("peanuts allergy", tenant_id="acme", user_id="ada")[0].thread_id == \
        "food"
    # the tenant's scope adds its other users, never another tenant
    tenant_wide = memory.search("flight", tenant_id="acme", scope="tenant", k=10)
    assert {r.user_id for r in tenant_wide} == {"ada", "bob"}
    assert all("globex" not in r.user for r in tenant_wide)


def test_another_tenant_finds_nothing_even_with_the_exact_words(conversations: Store) -> None:
    memory = ConversationStore(conversations)
    for user in ("ada", "bob", "eve"):
        found = memory.search("book a flight to Lisbon in May peanuts Oslo", tenant_id="initech",
                              user_id=user, scope="tenant", k=50)
        assert found == []
    only_globex = memory.search("book a flight to Lisbon in May", tenant_id="globex",
                                user_id="ada", k=50)
    assert [r.user for r in only_globex] == ["flight to Lisbon for the globex offsite"]


def test_bad_queries_are_refused(conversations: Store) -> None:
    memory = ConversationStore(conversations)
    for query, k, scope, match in [("", 3, "user", "query"), ("x", 0, "user", "k must"),
                                   ("x", 3, "everyone", "scope")]:
        with pytest.raises(ValueError, match=match):
            memory.search(query, tenant_id="acme", user_id="ada", k=k,
                          scope=scope)  # type: ignore[arg-type]


def test_the_recall_tool_is_governed_scoped_server_side_and_untrusted(
        conversations: Store) -> None:
    memory = ConversationStore(conversations)
    recall = memory.recall_tool()
    assert set(recall.spec.parameters["properties"]) == {"query"}  # no tenant, no user
    watch = TaintWatch()
    tainted = watch.tainted

    model = ScriptedModel([
        call("recall_conversations", {"query": "Lisbon flight", "tenant_id": "globex"}),
        call("recall_conversations", {"query": "Lisbon flight"}),
        call("recall_conversations", {"query": "Lisbon flight"}),
        "You flew to Lisbon."])
    agent = Agent(model=model, reasoning=ReAct(), tools=[recall], policy=watch,
                  store=conversations)
    result = agent.run("where did I fly?", user_id="ada", tenant_id="acme")
    results = [e.data for e in conversations.read(result.session_id) if e.type == "tool.result"]
    assert results[0]["status"] != "ok" and "tenant_id" in results[0]["content"]  # extra key
    assert results[1]["untrusted"] is True
    recalled = json.loads(results[1]["content"])
    assert [r["user"] for r in recalled] == ["book a flight to Lisbon in May"]
    assert "globex" not in results[1]["content"]
    assert tainted[-1] is True  # what recall returned is untrusted: the session is tainted
    assert result.answer == "You flew to Lisbon."
