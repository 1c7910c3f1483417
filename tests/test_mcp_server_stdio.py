"""``tether mcp serve`` over stdio, driven by the official MCP SDK client.

The client spawns ``tether mcp serve examples/mcp_notes.py:tools --policy
examples/policies/mcp_notes.yaml`` (the README's command) and calls the notes tools; the tests
check what happened on disk, what the client was told, and the journal in the SQLite store.
"""

from __future__ import annotations

from pathlib import Path

from mcp_peers import (
    NOTES_POLICY,
    NOTES_TOOLS,
    approve,
    journal_text,
    journals,
    status,
    stdio_peer,
    store_url,
    text,
)
from tether.journal.chain import verify_chain


def serve_args(db: Path, *extra: str) -> list[str]:
    return ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store", store_url(db), *extra]


async def test_tools_are_listed_with_their_schemas_and_hints(tmp_path: Path) -> None:
    async with stdio_peer(serve_args(tmp_path / "j.db"), errlog=tmp_path / "err.txt",
                          env={"NOTES_DIR": str(tmp_path / "notes")}) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert list(listed) == ["list_notes", "read_note", "write_note", "delete_note", "send_note"]
    write = listed["write_note"]
    assert write.description == "Write the note called `name`, replacing it if it exists."
    assert write.input_schema["required"] == ["name", "text"]
    assert write.input_schema["additionalProperties"] is False
    assert write.annotations is not None and write.annotations.read_only_hint is False
    assert write.annotations.idempotent_hint is True
    send = listed["send_note"].annotations
    assert send is not None and send.open_world_hint is True and send.destructive_hint is True
    read = listed["read_note"].annotations
    assert read is not None and read.read_only_hint is True
    assert (tmp_path / "j.db").exists() and journals(tmp_path / "j.db") == {}  # listing: no session


async def test_allowed_denied_and_masked_calls_are_decided_and_journaled(tmp_path: Path) -> None:
    notes, db = tmp_path / "notes", tmp_path / "j.db"
    async with stdio_peer(serve_args(db), errlog=tmp_path / "err.txt",
                          env={"NOTES_DIR": str(notes)}) as client:
        wrote = await client.call_tool("write_note", {"name": "todo", "text": "buy milk"})
        read = await client.call_tool("read_note", {"name": "todo"})
        sent = await client.call_tool("send_note", {"name": "todo", "to": "eve@example.com"})
        unknown = await client.call_tool("publish_note", {"name": "todo"})
        bad = await client.call_tool("read_note", {"title": "todo"})
    assert not wrote.is_error and text(wrote) == "saved note 'todo' (8 characters)"
    assert (notes / "todo.txt").read_text() == "buy milk"
    assert not read.is_error and text(read) == "buy milk" and status(read) == "ok"
    assert sent.is_error and status(sent) == "denied"
    assert "notes never leave this machine" in text(sent)
    assert not (notes / "outbox").exists()  # the denied call's side effect never happened
    assert unknown.is_error and status(unknown) == "rejected" and "read_note" in text(unknown)
    assert bad.is_error and status(bad) == "rejected" and "name" in text(bad)
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    assert [e.type for e in events].count("client.call") == 5
    assert events[0].data["subject"]["user_id"] == "mcp-client"
    decisions = {e.data["tool"]: e.data for e in events if e.type == "tool.decision"}
    assert decisions["send_note"]["decision"]["effect"] == "deny"
    assert decisions["write_note"]["decision"]["effect"] == "mask"
    assert decisions["write_note"]["arguments"]["text"] == "[masked]"
    assert "buy milk" not in journal_text(events)  # the policy keeps note text out of the journal
    assert read.meta is not None and read.meta["tether/session"] == events[0].session_id
    assert f"client stdio: tether session {events[0].session_id}" in (
        tmp_path / "err.txt").read_text()


async def test_the_per_client_budget_is_hard(tmp_path: Path) -> None:
    notes, db = tmp_path / "notes", tmp_path / "j.db"
    async with stdio_peer(serve_args(db, "--budget-tool-calls", "2"),
                          errlog=tmp_path / "err.txt", env={"NOTES_DIR": str(notes)}) as client:
        results = [await client.call_tool("write_note", {"name": f"n{i}", "text": "x"})
                   for i in range(3)]
        after = await client.call_tool("list_notes", {})
    assert [status(r) for r in results] == ["ok", "ok", "skipped"]
    assert results[2].is_error and "2 tool calls used" in text(results[2])
    assert sorted(p.name for p in notes.iterdir()) == ["n0.txt", "n1.txt"]  # n2 never written
    assert after.is_error and status(after) == "skipped"
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    assert [e.data["tool"] for e in events if e.type == "tool.started"] == ["write_note"] * 2


async def test_an_approved_call_runs_once_when_the_client_sends_it_again(tmp_path: Path) -> None:
    notes, db = tmp_path / "notes", tmp_path / "j.db"
    notes.mkdir()
    (notes / "old.txt").write_text("obsolete")
    args = {"name": "old"}
    async with stdio_peer(serve_args(db), errlog=tmp_path / "err.txt",
                          env={"NOTES_DIR": str(notes)}) as client:
        first = await client.call_tool("delete_note", args)
        assert first.is_error and status(first) == "approval_required"
        assert first.meta is not None
        approval = first.meta["tether/approval"]
        assert f"Approval required ({approval})" in text(first)
        assert (notes / "old.txt").exists()  # nothing runs before a person decides
        printed = approve(db, approval)  # `tether approvals approve`, from another process
        assert f"approved {approval}: delete_note" in printed
        other = await client.call_tool("delete_note", {"name": "other"})
        second = await client.call_tool("delete_note", args)
        third = await client.call_tool("delete_note", args)
    assert status(other) == "approval_required"  # an approval binds to the exact call
    assert not second.is_error and text(second) == "deleted note 'old'"
    assert not (notes / "old.txt").exists()
    assert status(third) == "approval_required"  # single use: the same call needs a new one
    assert third.meta is not None and third.meta["tether/approval"] != approval
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    granted = [e.data for e in events if e.type == "approval.granted"]
    assert len(granted) == 1 and granted[0]["approver"] == "maria"
    assert [e.data["tool"] for e in events if e.type == "tool.started"] == ["delete_note"]
