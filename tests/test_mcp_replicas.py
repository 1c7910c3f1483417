"""Two replicas of ``tether mcp serve`` on one store, behind a round-robin proxy (issue 51).

What ``tether.serve.clients`` states, checked end to end: a 2026-07-28 (stateless) client is
served by whichever replica gets the request — never "session not found" — and each replica's
sessionless calls are one tether session of that replica; a 2025-11-25 client's MCP session
lives in one replica, so it needs sticky routing (sent elsewhere, its session id is answered
404, as the spec says). Every call is journaled exactly once and every chain verifies. A quota
(in the store) bounds the replicas together; a ``--budget-tool-calls`` budget is each
replica's own. The number of calls is ``CALLS`` (``bench/replicas.py`` runs 10,000).
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp_peers import http_server
from mcp_replicas import (
    MODERN,
    TOOLS,
    RoundRobin,
    Tally,
    drive,
    policy_yaml,
    read_journals,
    replicas,
    serving,
    stateless_body,
    stateless_client,
)
from tether.journal.chain import verify_chain

from conftest import PG_URL, unavailable

CALLS = 200
LIMITED = 7  # the quota on the tool ``limited``, across both replicas


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The one store both replicas use: a SQLite file, or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'replicas.db'}"
        return
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(PG_URL, connect_timeout=5) as db:
            db.execute(f"CREATE SCHEMA {schema}")
    except psycopg.Error as exc:
        unavailable(f"PostgreSQL is not reachable at {PG_URL} ({exc})")
    yield f"{PG_URL}?schema={schema}"
    with psycopg.connect(PG_URL) as db:
        db.execute(f"DROP SCHEMA {schema} CASCADE")


def policy(tmp_path: Path, limited: int = LIMITED) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(policy_yaml(limited))
    return path


async def test_stateless_and_handshake_clients_through_round_robin_replicas(
        tmp_path: Path, store: str) -> None:
    with replicas(store, policy(tmp_path)) as urls:
        proxy = RoundRobin(urls, sticky=True)
        async with serving(proxy) as url:
            # first, alone: one stateless client calls ``limited`` LIMITED + 1 times, the proxy
            # alternating the replicas, so neither replica alone reaches the quota
            first = Tally()
            await stateless_client(url, [(CALLS + n, "limited") for n in range(LIMITED + 1)],
                                   first)
            tally = await drive(url, CALLS)
    assert first.errors == [] and first.not_found == 0
    assert [s for _, s, _ in first.stateless] == ["ok"] * LIMITED + ["skipped"]
    assert len({sid for _, _, sid in first.stateless}) == 2  # both replicas served them
    assert tally.not_found == 0 and tally.errors == []
    assert tally.calls == CALLS and all(proxy.served)
    seen = first.stateless + tally.stateless + tally.handshake
    # each call journaled exactly once, in the session its client was told, every chain intact
    sessions = read_journals(store)
    called: collections.Counter[str] = collections.Counter()
    where: dict[str, str] = {}
    for session_id, events in sessions.items():
        assert verify_chain(events) is None
        for event in events:
            if event.type == "client.call":
                text = event.data["call"]["arguments"]["text"]
                called[text] += 1
                where[text] = session_id
    assert called == collections.Counter(text for text, _, _ in seen)
    assert set(called.values()) == {1}
    assert all(where[text] == session for text, _, session in seen)
    # the stateless clients: one tether session per replica; each handshake client: its own
    stateless = {session for _, _, session in first.stateless + tally.stateless}
    assert len(stateless) == 2 and len({s for _, _, s in tally.handshake}) == 2
    # the quota is spent for both replicas: every later call of ``limited`` was refused;
    # every call of ``echo`` ran
    later = tally.stateless + tally.handshake
    assert {s for t, s, _ in later if int(t.split("-")[1]) % 10 == 0} == {"skipped"}
    assert {s for t, s, _ in later if int(t.split("-")[1]) % 10} == {"ok"}


async def test_a_budget_is_each_replicas_own(tmp_path: Path) -> None:
    """--budget-tool-calls bounds a governed session, and each replica's stateless callers are
    a session of that replica: two replicas serve twice the budget. A quota is what bounds them
    together (above)."""
    db = f"sqlite:///{tmp_path / 'budget.db'}"
    with replicas(db, policy(tmp_path), extra=["--budget-tool-calls", "3"]) as urls:
        proxy = RoundRobin(urls)
        async with serving(proxy) as url:
            tally = await drive(url, 10, stateless=1, handshake=0, limited_every=10**9)
    statuses = collections.Counter(s for _, s, _ in tally.stateless)
    assert statuses == {"ok": 6, "skipped": 4}
    per_session = collections.Counter(sid for _, s, sid in tally.stateless if s == "ok")
    assert sorted(per_session.values()) == [3, 3]


def test_a_handshake_session_lives_in_the_replica_that_issued_it(tmp_path: Path) -> None:
    """Without sticky routing a 2025 client's next request reaches a replica that never saw its
    session: 404, as the spec says (the client must initialize again). tether does not adopt an
    unknown session id: a guessed or ended one would buy a governed session of its own."""
    db = f"sqlite:///{tmp_path / 'j.db'}"
    args = ["serve", TOOLS, "--policy", str(policy(tmp_path)), "--store", db]
    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}
    with http_server(args) as (first, _), http_server(args) as (second, _):
        opened = httpx.post(first, json=initialize, headers=headers, timeout=30)
        session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}}}
        sticky = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        elsewhere = httpx.post(second, json=call, headers=sticky, timeout=30)
        # a stateless request needs no session: either replica serves it
        modern = {**headers, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                  "Mcp-Name": "echo"}
        served = [httpx.post(u, json=stateless_body(3, "echo", "y"), headers=modern, timeout=30)
                  for u in (first, second)]
    assert opened.status_code == 200
    assert elsewhere.status_code == 404 and "not found" in elsewhere.text.lower()
    assert [r.status_code for r in served] == [200, 200]
    assert all(r.json()["result"]["_meta"]["tether/status"] == "ok" for r in served)
