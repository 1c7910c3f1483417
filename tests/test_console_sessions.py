"""The session list: filters from the query string, keyset paging through "next" links that
keep the filters, and the viewer's tenant as a scope no URL can widen."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from console_app import run_session
from tether.runtime.approvals.identity import Identity
from tether.runtime.approvals.rules import ApprovalRules, Person
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.paging import ANY_TENANT
from tether.web import Console, create_app
from tether.web.sessions import PAGE, listing

PROXIED = "header:X-Forwarded-Email"
PEOPLE = ApprovalRules(people={"ops@example.com": Person(),
                               "alice@acme.example": Person(tenant_id="acme"),
                               "nobody@example.com": Person(tenant_id=None)})


def viewer_client(store: Store, who: str = "ops@example.com") -> TestClient:
    client = TestClient(create_app(Console(store, PEOPLE, PROXIED,
                                           proxies=frozenset({"testclient"}))))
    client.headers["X-Forwarded-Email"] = who
    return client


def listed(page: str) -> list[str]:
    return re.findall(r'data-session="([^"]+)"', page)


def next_link(page: str) -> str | None:
    found = re.search(r'id="next" rel="next" href="([^"]+)"', page)
    return found[1].replace("&amp;", "&") if found else None


def test_the_list_filters_by_status_agent_and_tenant() -> None:
    store = MemoryStore()
    billing = run_session(store, agent="billing", tenant="acme")
    support = run_session(store, agent="support", tenant="globex")
    client = viewer_client(store)
    assert set(listed(client.get("/sessions").text)) == {billing, support}
    assert listed(client.get("/sessions?agent=billing").text) == [billing]
    assert listed(client.get("/sessions?tenant=globex").text) == [support]
    assert listed(client.get("/sessions?status=open").text) == []
    assert set(listed(client.get("/sessions?status=ended").text)) == {billing, support}
    page = client.get("/sessions?agent=billing&status=ended").text
    assert 'value="billing"' in page and '<option value="ended" selected>' in page  # kept


def test_each_filter_reaches_the_listing() -> None:
    operator = Identity("ops", "login-link")
    chosen = listing({"status": "paused", "stop_reason": "cost_budget", "agent": "a",
                      "tenant": "acme", "user": "u1", "thread": "t1", "since": "2026-01-31",
                      "until": "2026-02-01T12:00:00+01:00", "min_cost": "0.25",
                      "max_cost": "$3", "after": "CURSOR", "junk": "x"}, operator)
    where = chosen.where
    assert (where.status, where.stop_reason, where.agent, where.tenant_id, where.user_id,
            where.thread_id) == ("paused", "cost_budget", "a", "acme", "u1", "t1")
    assert where.since == datetime(2026, 1, 31, tzinfo=UTC).timestamp()  # UTC unless zoned
    assert where.until == datetime(2026, 2, 1, 11, tzinfo=UTC).timestamp()
    assert (where.min_cost, where.max_cost, chosen.after) == (0.25, 3.0, "CURSOR")
    assert "junk" not in chosen.query and "after" not in chosen.query
    assert listing({}, operator).where.tenant_id is ANY_TENANT


@pytest.mark.parametrize(("query", "says"), [
    ("status=running", "status 'running' is not one of"),
    ("since=yesterday", "since 'yesterday' is not a date"),
    ("min_cost=lots", "min_cost 'lots' is not an amount"),
    ("max_cost=-1", "max_cost must be a non-negative"),
    ("after=not-a-cursor", "start from the first page"),
])
def test_a_filter_that_does_not_parse_is_a_400_that_says_why(query: str, says: str) -> None:
    store = MemoryStore()
    run_session(store)
    response = viewer_client(store).get(f"/sessions?{query}")
    assert response.status_code == 400
    assert says in response.text.replace("&#39;", "'")
    assert listed(response.text) == []  # never a wider list instead


def test_paging_walks_every_session_once_by_cursor_keeping_the_filters() -> None:
    store = MemoryStore()
    mine = {run_session(store, agent="walker") for _ in range(PAGE + 7)}
    run_session(store, agent="other")
    client = viewer_client(store)
    first = client.get("/sessions?agent=walker").text
    seen = listed(first)
    assert len(seen) == PAGE
    link = next_link(first)
    assert link is not None
    assert parse_qs(urlsplit(link).query)["agent"] == ["walker"]  # the filter is kept
    second = client.get(link).text
    assert len(listed(second)) == 7 and next_link(second) is None
    seen += listed(second)
    assert len(seen) == len(set(seen)) and set(seen) == mine
    assert 'href="/sessions?agent=walker">first page' in second


def test_a_tenants_viewer_never_sees_another_tenants_session(store: Store) -> None:
    ours = run_session(store, agent="a", tenant="acme")
    theirs = run_session(store, agent="b", tenant="globex")
    untenanted = run_session(store, agent="c")
    alice = viewer_client(store, "alice@acme.example")
    assert listed(alice.get("/sessions").text) == [ours]
    for query in ("tenant=globex", "agent=b", "tenant=globex&agent=b&after="):
        assert theirs not in alice.get(f"/sessions?{query}").text
    assert 'name="tenant"' not in alice.get("/sessions").text  # the filter is not offered
    assert alice.get(f"/events/session/{theirs}").status_code == 404  # even by URL
    assert alice.get("/events/session/no-such-session").status_code == 404
    nobody = viewer_client(store, "nobody@example.com")
    assert listed(nobody.get("/sessions").text) == [untenanted]
    ops = viewer_client(store)
    assert set(listed(ops.get("/sessions").text)) == {ours, theirs, untenanted}
    assert 'name="tenant"' in ops.get("/sessions").text


def test_the_fragment_is_the_rows_alone_and_the_root_opens_the_inbox() -> None:
    store = MemoryStore()
    one = run_session(store)
    client = viewer_client(store)
    fragment = client.get("/sessions?fragment=1").text
    assert listed(fragment) == [one] and "<html" not in fragment
    page = client.get("/sessions?status=ended").text
    assert 'data-live-source="/events/sessions?status=ended"' in page
    assert 'data-live-fetch="/sessions?status=ended&amp;fragment=1"' in page
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 303 and root.headers["location"] == "/inbox"



def test_the_live_streams_refuse_what_does_not_parse() -> None:
    store = MemoryStore()
    one = run_session(store)
    client = viewer_client(store)
    assert client.get(f"/events/session/{one}?after=last").status_code == 400
    assert client.get("/events/sessions?after=not-a-cursor").status_code == 400
    assert client.get("/events/sessions?min_cost=lots").status_code == 400
