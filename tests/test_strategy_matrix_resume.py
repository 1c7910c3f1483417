"""Every strategy, with tool selection or with every recipe feature, paused for approval and
resumed by another recipe object on the same database (as another process would), finishes and
runs each approved call exactly once (strategy × feature).

Why: selection, compaction, output types and threads were made to compose with each strategy
in one process; the resumes of strategies were fixed apart. This holds the seam between them,
and it is what found that a recipe derived with ``dataclasses.replace`` kept its parent's
approval store (tests/test_recipe_replace.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from test_strategy_matrix import STRATEGIES, build
from tether import Agent, Decision, Effect
from tether.journal.chain import verify_chain
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.accounting.stop import StopReason
from tether.runtime.rerun import rerun
from tether.store.sqlite import SQLiteStore

ASKED = frozenset({"lookup", "search_docs", "web_search"})  # the tools the strategies use


class AskFirst:
    """Every call of the strategies' tools waits for a person."""

    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool in ASKED:
            return Decision(Effect.REQUIRE_APPROVAL, "a person checks lookups", "ask")
        return Decision(Effect.ALLOW, "ok", "ask")


@pytest.mark.parametrize("feature", ("tool_selection", "all"))
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_each_strategy_resumed_elsewhere_after_approval_runs_each_call_once(
        strategy: str, feature: str, tmp_path: Path) -> None:
    case = STRATEGIES[strategy]

    def recipe() -> Agent:  # a fresh recipe object each time: another process
        return dataclasses.replace(build(case, feature, []), policy=AskFirst(),
                                   store=SQLiteStore(tmp_path / "s.db"))

    session = recipe().session(case.task)
    result = session.run()
    resumes = 0
    while result.stop_reason is StopReason.NEEDS_APPROVAL:
        assert resumes < 6, "it keeps asking"
        other = recipe()
        pending = other.approval_store.pending(session.id)
        assert pending, "a pause with nothing to decide"
        for request in pending:
            other.approval_store.approve(request.id, approver="ops")
        result = other.load(session.id).resume()
        resumes += 1
    assert result.stop_reason is StopReason.FINISHED, result.notice
    events = SQLiteStore(tmp_path / "s.db").read(session.id)
    assert verify_chain(events) is None
    ran = [e.data["call_id"] for e in events
           if e.type == "tool.result" and e.data["status"] == "ok"]
    assert ran and len(ran) == len(set(ran))
    granted = {e.data["call_id"] for e in events if e.type == "approval.granted"}
    asked = [e.data["call_id"] for e in events
             if e.type == "tool.result" and e.data["tool"] in ASKED and e.data["status"] == "ok"]
    assert set(asked) <= granted  # nothing waiting for a person ran without one
    assert rerun(recipe(), events).matches
