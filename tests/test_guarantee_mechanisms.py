"""Tests that notice when a guarantee's mechanism breaks: each case here passes only while the
mechanism it names is in place (resume runs only calls without a result, an approval that
lapsed after it was given is refused when used, the session id is part of every event's hash)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tether import Decision, Effect, StopReason, tool
from tether.journal.chain import Journal, verify_chain
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.sqlite import SQLiteStore

from conftest import call

APP = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

    db, effects, crash = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    marker = effects.with_suffix(".crashed")

    def effect(name):
        with effects.open("a") as fh:
            fh.write(name + "\\n")
        if crash == "in-" + name and not marker.exists():
            marker.write_text("x")
            os._exit(9)  # the effect happened; its result was never journaled

    @tool(side_effect=True)
    def pay(account: str) -> str:
        \"\"\"Pay an account.\"\"\"
        effect("pay-" + account)
        return "paid " + account

    def respond(request):
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if turn == 0:
            return ModelResponse(tool_calls=(ToolCall("c1", "pay", {"account": "A"}),
                                             ToolCall("c2", "pay", {"account": "B"})))
        if crash == "before-model" and not marker.exists():
            marker.write_text("x")
            os._exit(9)  # both effects done and journaled; the next model call never returns
        return "paid both"

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[pay],
                  store="sqlite:///" + db)
    if len(sys.argv) > 4:
        session = agent.load(sys.argv[4])
        if sys.argv[5:]:
            session.settle(sys.argv[5], "skip", operator="ops", note="it was paid")
        print(session.resume().stop_reason.value, flush=True)
    else:
        session = agent.session("pay A and B")
        print(session.id, flush=True)
        session.run()
""")


def _app(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", APP, str(tmp_path / "j.db"),
                           str(tmp_path / "effects.txt"), *argv],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("crash", ["in-pay-B", "before-model"])
def test_resume_runs_only_the_calls_without_a_result(tmp_path: Path, crash: str) -> None:
    first = _app(tmp_path, crash)
    assert first.returncode == 9, first.stderr
    sid = first.stdout.split()[0]
    resumed = _app(tmp_path, crash, sid)
    if crash == "in-pay-B":  # B's effect happened, its result did not: an operator decides
        assert resumed.stdout.strip() == "uncertain_effect", resumed.stderr
        resumed = _app(tmp_path, crash, sid, "c2")
    assert resumed.stdout.strip() == "finished", resumed.stderr
    effects = (tmp_path / "effects.txt").read_text().split()
    assert sorted(effects) == ["pay-A", "pay-B"]  # nothing that finished ran again
    events = SQLiteStore(tmp_path / "j.db").read(sid)
    assert verify_chain(events) is None
    results = [e.data["call_id"] for e in events if e.type == "tool.result"]
    assert sorted(results) == ["c1", "c2"]  # exactly one result per call


# -- an approval that lapses after it was given --------------------------------------------------

class NeedsApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "a person decides", "p")
        return Decision(Effect.ALLOW, "ok", "p")


def test_an_approval_given_in_time_but_used_after_it_expired_is_refused_on_resume() -> None:
    from tether import Agent, ReAct, ScriptedModel

    paid: list[str] = []

    @tool(side_effect=True)
    def pay(account: str) -> str:
        """Pay."""
        paid.append(account)
        return "paid"

    agent = Agent(model=ScriptedModel([call("pay", {"account": "A"}), "gave up"]),
                  reasoning=ReAct(), tools=[pay], policy=NeedsApproval(), approval_ttl=0.3)
    session = agent.session("pay A")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    agent.approval_store.approve(request.id, approver="maria")  # in time
    time.sleep(0.4)  # ...and it lapses before the session uses it
    result = session.resume()
    assert paid == []
    assert "expired before it was used" in result.trajectory.steps[0].results[0].content
    refused = [e.data for e in session.replay() if e.type == "approval.refused"]
    assert refused and "expired" in refused[0]["why"]


async def test_the_gateway_does_not_run_an_approval_that_lapsed_after_it_was_given() -> None:
    ran: list[str] = []

    @tool(side_effect=True)
    def write(path: str) -> str:
        """Write."""
        ran.append(path)
        return "written"

    gateway = Gateway([write], policy=NeedsApproval(), client="ide", approval_ttl=0.3)
    first = await gateway.call("write", {"path": "a"})
    assert first.status == "denied" and "Approval required" in first.content
    (request,) = gateway.approvals.pending(gateway.id)
    gateway.approvals.approve(request.id, approver="maria")
    time.sleep(0.4)
    again = await gateway.call("write", {"path": "a"})
    assert again.status == "denied" and ran == []


# -- the session id is part of every event's hash ----------------------------------------------

def _chain(session_id: str, n: int = 4) -> list[Any]:
    journal = Journal(session_id)
    for i in range(n):
        journal.append("step", {"i": i})
    return journal.events()


def test_relabelling_an_event_or_moving_a_chain_to_another_session_fails_verification() -> None:
    events = _chain("acme-session")
    assert verify_chain(events) is None
    relabelled = list(events)
    relabelled[2] = dataclasses.replace(events[2], session_id="globex-session")
    assert verify_chain(relabelled) == 3
    moved = [dataclasses.replace(e, session_id="globex-session") for e in events]
    assert verify_chain(moved) == 1
