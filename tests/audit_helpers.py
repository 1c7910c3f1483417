"""Helpers for the audit tests: a store URL per backend, and raw SQL access that goes around tether
the way an attacker (or a careless DBA) would.

PostgreSQL: the CLI opens ``postgresql://...`` URLs with the store's default schema, so each test
gets a database of its own (created and dropped here) rather than a schema. Under ``CI=true`` an
unreachable server fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import PG_URL, unavailable


@contextmanager
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for one test; yields its URL."""
    try:
        import psycopg

        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except Exception as exc:
        unavailable(f"PostgreSQL is not reachable ({exc}); TETHER_TEST_PG names the server")
    name = f"tether_audit_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            yield PG_URL.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'journal.db'}"
    else:
        with pg_database() as url:
            yield url


class Raw:
    """Direct SQL on a store's tables, bypassing tether entirely."""

    def __init__(self, url: str) -> None:
        self.pg = url.startswith("postgresql")
        if self.pg:
            import psycopg

            self.db: Any = psycopg.connect(url, autocommit=True)
            self.events = "tether.events"
            self.mark = "%s"
            self.key = "?"  # PostgreSQL's events name their session, SQLite's carry its key
        else:
            self.db = sqlite3.connect(url[len("sqlite:///"):], isolation_level=None)
            self.events = "events"
            self.mark = "?"
            self.key = "(SELECT key FROM sessions WHERE session_id = ?)"
        self.session = f"{'session_id' if self.pg else 'session_key'} = {self.key}"

    def close(self) -> None:
        self.db.close()

    def _run(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        cursor = self.db.execute(sql.replace("?", self.mark), args)
        return list(cursor.fetchall()) if cursor.description else []

    def row(self, sid: str, seq: int) -> dict[str, Any]:
        data = "data::text" if self.pg else "data"
        ((type_, ts, body, prev, digest),) = self._run(
            f"SELECT type, ts, {data}, prev_hash, hash FROM {self.events} "
            f"WHERE {self.session} AND seq = ?", sid, seq)
        return {"type": type_, "ts": ts, "data": json.loads(body), "prev_hash": prev,
                "hash": digest}

    def count(self, sid: str) -> int:
        return int(self._run(f"SELECT count(*) FROM {self.events} WHERE {self.session}",
                             sid)[0][0])

    def set(self, sid: str, seq: int, column: str, value: Any) -> None:
        if column == "data":
            value = json.dumps(value)
        self._run(f"UPDATE {self.events} SET {column} = ? WHERE {self.session} AND seq = ?",
                  value, sid, seq)

    def delete(self, sid: str, seq: int) -> None:
        self._run(f"DELETE FROM {self.events} WHERE {self.session} AND seq = ?", sid, seq)

    def renumber(self, sid: str, old: int, new: int) -> None:
        self.set(sid, old, "seq", new)

    def swap(self, sid: str, a: int, b: int) -> None:
        self.renumber(sid, a, -1)
        self.renumber(sid, b, a)
        self.renumber(sid, -1, b)

    def shift_up(self, sid: str, from_seq: int) -> None:
        """Make room at ``from_seq``: every later event moves one seq up."""
        self._run(f"UPDATE {self.events} SET seq = -(seq + 1) WHERE {self.session} AND seq >= ?",
                  sid, from_seq)
        self._run(f"UPDATE {self.events} SET seq = -seq WHERE {self.session} AND seq < 0",
                  sid)

    def anchors(self) -> list[dict[str, Any]]:
        """The anchor rows in order, each with its lane (SQLite keeps one chain: lane 0)."""
        table = "tether.anchors" if self.pg else "anchors"
        lane = "lane" if self.pg else "0"
        rows = self._run(f"SELECT seq, kind, session_id, body, mac, {lane} FROM {table} "
                         "ORDER BY seq")
        return [{"seq": r[0], "kind": r[1], "session_id": r[2], "body": json.loads(str(r[3])),
                 "mac": r[4], "lane": r[5]} for r in rows]

    def rewrite_anchors(self, rows: list[dict[str, Any]]) -> None:
        """Replace every anchor with ``rows`` (kind, session_id, body, mac, lane), each lane
        chained anew from its genesis and no witness kept (an attacker without the audit key
        can make every hash and count agree): the consistent rewrite the key is for."""
        from tether.store.anchor_chain import lane_genesis, seal_anchor

        table = "tether.anchors" if self.pg else "anchors"
        self._run(f"DELETE FROM {table}")
        heads: dict[int, tuple[str, int]] = {}
        for row in rows:
            lane = row["lane"]
            prev, length = heads.get(lane, (lane_genesis(lane), 0))
            body = {k: v for k, v in row["body"].items() if k != "witness"}
            text, digest, _ = seal_anchor(prev, body, None)
            if self.pg:
                self._run("INSERT INTO tether.anchors (kind, session_id, body, prev, hash, mac, "
                          "lane) VALUES (?, ?, ?, ?, ?, ?, ?)", row["kind"], row["session_id"],
                          text, prev, digest, row.get("mac"), lane)
            else:
                self._run("INSERT INTO anchors (kind, session_id, body, prev, hash, mac) "
                          "VALUES (?, ?, ?, ?, ?, ?)", row["kind"], row["session_id"], text,
                          prev, digest, row.get("mac"))
            heads[lane] = (digest, length + 1)
        if self.pg:  # the lanes' heads too, so tether goes on writing as if nothing happened
            lanes = int(self._run("SELECT count(*) FROM tether.anchor_lanes")[0][0])
            for lane in range(lanes):
                head, length = heads.get(lane, (lane_genesis(lane), 0))
                self._run("UPDATE tether.anchor_lanes SET hash = ?, length = ? WHERE lane = ?",
                          head, length, lane)

    def insert(self, sid: str, seq: int, row: dict[str, Any]) -> None:
        self._run(f"INSERT INTO {self.events} VALUES ({self.key}, ?, ?, ?, ?, ?, ?)", sid, seq,
                  row["type"], row["ts"], json.dumps(row["data"]), row["prev_hash"], row["hash"])


def seed(url: str, session_id: str, timestamp: float, *, events: int = 4,
         tenant: str = "old-co") -> None:
    """A chained session written at ``timestamp`` (the journal would stamp "now")."""
    from tether.journal.chain import GENESIS, seal
    from tether.store.opening import open_store

    start = {"task": "old work", "agent": "archived", "system_prompt": "", "model": "scripted",
             "tools": [], "budget": {}, "context": {},
             "subject": {"user_id": "u-0", "tenant_id": tenant, "roles": []}}
    sealed, prev = [], GENESIS
    for seq in range(1, events + 1):
        kind, data = ("session.start", start) if seq == 1 else ("session.note", {"text": str(seq)})
        event = seal(prev, session_id, (seq, kind, timestamp + seq / 1000, data))
        sealed.append(event)
        prev = event.hash
    store = open_store(url)
    try:
        store.append(session_id, sealed)
    finally:
        store.close()
