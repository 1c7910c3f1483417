"""The gateway: calls no model asked for (MCP clients) take the same governed path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether import Budget, Decision, Effect, tool
from tether.journal.chain import verify_chain
from tether.journal.views.timeline import header
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore

written: list[str] = []


@tool(side_effect=True)
def write_file(path: str, text: str) -> str:
    """Write a file."""
    written.append(path)
    return f"wrote {len(text)} bytes to {path}"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


class Rules:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        path = str(action.arguments.get("path", ""))
        if path.startswith("/etc"):
            return Decision(Effect.DENY, "system files are off limits", "fs")
        if resource.side_effect and path.endswith(".important"):
            return Decision(Effect.REQUIRE_APPROVAL, "important files need a person", "fs")
        return Decision(Effect.ALLOW, "ok", "fs")


async def test_calls_are_decided_run_and_journaled(tmp_path: Path) -> None:
    written.clear()
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([write_file, read_file], policy=Rules(), client="claude-desktop",
                      store=store)
    ok = await gateway.call("read_file", {"path": "/tmp/a"})
    denied = await gateway.call("write_file", {"path": "/etc/passwd", "text": "x"})
    unknown = await gateway.call("nope", {})
    assert ok.status == "ok" and ok.content == "contents of /tmp/a"
    assert denied.status == "denied" and "off limits" in denied.content and written == []
    assert unknown.status == "rejected" and "read_file" in unknown.content
    events = store.read(gateway.id)
    assert verify_chain(events) is None
    assert [e.type for e in events].count("client.call") == 3
    start = events[0].data
    assert start["subject"]["user_id"] == "claude-desktop"
    # an auditor reading it sees a client's tool gateway, not an agent with an empty model
    shown = "\n".join(header(events))
    assert "tool gateway for client claude-desktop; tenant -, roles -" in shown
    assert "model ;" not in shown and "None" not in shown


async def test_an_approved_call_runs_once_when_the_client_asks_again() -> None:
    written.clear()
    gateway = Gateway([write_file], policy=Rules(), client="ide")
    args: dict[str, Any] = {"path": "notes.important", "text": "hello"}
    first = await gateway.call("write_file", args)
    assert first.status == "denied" and "Approval required" in first.content and written == []
    (request,) = gateway.approvals.pending(gateway.id)
    gateway.approvals.approve(request.id, approver="maria")
    other = await gateway.call("write_file", {**args, "text": "something else"})
    assert other.status == "denied" and written == []  # an approval binds to the exact call
    second = await gateway.call("write_file", args)
    assert second.status == "ok" and written == ["notes.important"]
    third = await gateway.call("write_file", args)
    assert third.status == "denied" and written == ["notes.important"]  # single use


async def test_the_client_budget_is_hard() -> None:
    gateway = Gateway([read_file], policy=Rules(), client="c", budget=Budget(max_tool_calls=2))
    results = [await gateway.call("read_file", {"path": f"/f{i}"}) for i in range(3)]
    assert [r.status for r in results] == ["ok", "ok", "skipped"]
    assert "2 tool calls used" in results[2].content


async def test_close_ends_the_session_and_refuses_later_calls(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([read_file], policy=Rules(), client="c", store=store)
    await gateway.call("read_file", {"path": "/a"})
    gateway.close("bye")
    events = store.read(gateway.id)
    assert events[-1].type == "session.end" and events[-1].data["detail"] == "bye"
    assert events[-1].data["spend"]["tool_calls"] == 1
    assert verify_chain(events) is None
    import pytest

    with pytest.raises(RuntimeError, match="closed"):
        await gateway.call("read_file", {"path": "/b"})


async def test_concurrent_calls_cannot_overspend_the_client_budget() -> None:
    import asyncio

    gateway = Gateway([read_file], policy=Rules(), client="c", budget=Budget(max_tool_calls=3))
    results = await asyncio.gather(*(gateway.call("read_file", {"path": f"/{i}"})
                                     for i in range(8)))
    assert [r.status for r in results].count("ok") == 3


async def test_an_expired_approval_does_not_block_asking_again() -> None:
    import time

    written.clear()
    gateway = Gateway([write_file], policy=Rules(), client="ide", approval_ttl=0.05)
    args: dict[str, Any] = {"path": "x.important", "text": "hi"}
    await gateway.call("write_file", args)
    (request,) = gateway.approvals.pending(gateway.id)
    gateway.approvals.approve(request.id, approver="maria")
    time.sleep(0.1)
    again = await gateway.call("write_file", args)
    assert again.status == "denied" and "Approval required" in again.content
    assert len(gateway.approvals.pending(gateway.id)) == 1  # a fresh request was made
    assert written == []


async def test_an_approval_follows_the_client_into_a_new_session(tmp_path: Path) -> None:
    """A client that opens a new session per call (the MCP Inspector's CLI does): the approval
    a person gave for its call is found by the same call in the next session, used once, and
    never by another client or tenant."""
    written.clear()
    store = SQLiteStore(tmp_path / "g.db")
    args: dict[str, Any] = {"path": "notes.important", "text": "hello"}

    def session(client: str = "inspector", tenant: str | None = "acme") -> Gateway:
        return Gateway([write_file], policy=Rules(), client=client, tenant_id=tenant,
                       store=store)

    asked = session()
    first = await asked.call("write_file", args)
    assert first.status == "denied" and "Approval required" in first.content
    asked.close()
    (request,) = asked.approvals.pending(asked.id)
    asked.approvals.approve(request.id, approver="maria")
    assert (await session("someone-else").call("write_file", args)).status == "denied"
    assert (await session(tenant="globex").call("write_file", args)).status == "denied"
    assert written == []
    retried = session()
    assert (await retried.call("write_file", args)).status == "ok"
    assert written == ["notes.important"]
    assert (await session().call("write_file", args)).status == "denied"  # once only
    used = asked.approvals.get(request.id)
    assert used is not None and used.used_by is not None
    assert used.used_by.startswith(retried.id)
    assert verify_chain(store.read(retried.id)) is None


async def test_approving_a_gateways_call_from_the_cli_says_what_the_client_does_next(
        tmp_path: Path, capsys: Any) -> None:
    from tether.cli import main

    store = SQLiteStore(tmp_path / "g.db")
    gateway = Gateway([write_file], policy=Rules(), client="inspector", store=store)
    await gateway.call("write_file", {"path": "notes.important", "text": "x"})
    (request,) = gateway.approvals.pending(gateway.id)
    code = main(["approvals", "approve", request.id, "--approver", "maria", "--unauthenticated",
                 "--store", f"sqlite:///{tmp_path / 'g.db'}"])
    out = capsys.readouterr().out
    assert code == 0
    assert "the client (inspector) can now make the same call again" in out
    assert "tether resume" not in out  # there is no agent recipe to resume
