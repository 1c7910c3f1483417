"""``tether mcp serve --transport http``: streamable HTTP on 127.0.0.1, one governed session per
MCP session, driven by the official SDK client."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mcp_peers import NOTES_POLICY, NOTES_TOOLS, http_peer, http_server, journals, status, text
from tether.cli import main
from tether.journal.chain import verify_chain


async def test_each_http_client_has_its_own_budget_and_journal(tmp_path: Path) -> None:
    notes, db = tmp_path / "notes", tmp_path / "j.db"
    args = ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store", f"sqlite:///{db}",
            "--budget-tool-calls", "2", "--client", "ide", "--role", "writer"]
    with http_server(args, env={"NOTES_DIR": str(notes)}) as (url, log):
        async with http_peer(url) as first:
            tools = (await first.list_tools()).tools
            a1 = await first.call_tool("write_note", {"name": "a", "text": "from a"})
            a2 = await first.call_tool("send_note", {"name": "a", "to": "x@example.com"})
            a3 = await first.call_tool("read_note", {"name": "a"})
            a4 = await first.call_tool("list_notes", {})
        async with http_peer(url) as second:  # a new MCP session: a new client
            b1 = await second.call_tool("read_note", {"name": "a"})
            b2 = await second.call_tool("list_notes", {})
    assert len(tools) == 5
    assert status(a1) == "ok" and (notes / "a.txt").read_text() == "from a"
    assert status(a2) == "denied" and not (notes / "outbox").exists()
    assert status(a3) == "ok"  # a denied call is not charged
    assert status(a4) == "skipped" and "2 tool calls used" in text(a4)
    assert status(b1) == "ok" and text(b1) == "from a"  # the second client's budget is its own
    assert status(b2) == "ok" and text(b2) == "a"
    assert a1.meta is not None and b1.meta is not None
    sessions = journals(db)
    assert set(sessions) == {a1.meta["tether/session"], b1.meta["tether/session"]}
    for events in sessions.values():
        assert verify_chain(events) is None
        subject = events[0].data["subject"]
        assert (subject["user_id"], subject["roles"]) == ("ide", ["writer"])
    assert sum("tether session" in line for line in log) == 2
    assert any(f"at {url}" in line for line in log)


def test_a_port_in_use_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        ) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["mcp", "serve", NOTES_TOOLS, "--store", f"sqlite:///{tmp_path / 'j.db'}",
                     "--transport", "http", "--port", str(port)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"cannot serve on 127.0.0.1:{port}" in err and "choose another --port" in err


async def test_clients_without_a_session_share_one_budget(tmp_path: Path) -> None:
    # the SDK's high-level Client speaks the 2026-07-28 protocol: every request stands alone,
    # with no MCP session, so sessionless requests share one governed session (never a fresh
    # budget per request)
    from mcp import Client

    notes, db = tmp_path / "notes", tmp_path / "j.db"
    args = ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store", f"sqlite:///{db}",
            "--budget-tool-calls", "2"]
    with http_server(args, env={"NOTES_DIR": str(notes)}) as (url, _):
        async with Client(url) as first:
            one = await first.call_tool("list_notes", {})
            two = await first.call_tool("list_notes", {})
        async with Client(url) as second:
            three = await second.call_tool("list_notes", {})
    assert [status(r) for r in (one, two, three)] == ["ok", "ok", "skipped"]
    (events,) = journals(db).values()
    assert verify_chain(events) is None


async def test_a_client_that_ends_its_mcp_session_ends_its_governed_session(
        tmp_path: Path) -> None:
    """The SDK client sends DELETE when it closes: the session ends in the journal then, with
    its spend — not thirty minutes later, nor only when the server stops."""
    import asyncio

    notes, db = tmp_path / "notes", tmp_path / "j.db"
    args = ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store", f"sqlite:///{db}",
            "--client", "ide"]
    with http_server(args, env={"NOTES_DIR": str(notes)}) as (url, _):
        async with http_peer(url) as first:
            done = await first.call_tool("list_notes", {})
        assert done.meta is not None
        session = done.meta["tether/session"]
        for _ in range(100):  # the server closes it as the DELETE is answered
            events = journals(db).get(session, [])
            if events and events[-1].type == "session.end":
                break
            await asyncio.sleep(0.05)
        assert events[-1].type == "session.end"
        assert events[-1].data["detail"] == "the client ended its MCP session"
        assert events[-1].data["spend"]["tool_calls"] == 1
        assert verify_chain(events) is None
