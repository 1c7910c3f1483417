"""Journals and what tether reads of them, for the vocabulary's promise (test_vocabulary.py).

``sessions`` runs a few representative sessions (a tool call and an answer; a call that waits
for an approval, granted on resume; one refused) and ``readings`` is what tether makes of a
session's events: the chain's check, the session's fold, the timeline, the run's facts, the
OpenTelemetry spans and the OCSF records. ``tests/data/journal_before_vocabulary.jsonl`` holds
the sessions as written by tether before event types were an enumeration (commit 6c7c1d2), and
``journal_before_vocabulary.readings.json`` their readings by that tether:
``python tests/vocabulary_journals.py tests/data`` (run with that commit's ``src`` on the path)
wrote both. Nothing here imports the vocabulary, so it runs on the tether before it too.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether import Agent, ReAct, ScriptedModel, tool
from tether.journal.chain import verify_chain
from tether.journal.views.export import write_jsonl
from tether.journal.views.metrics import session_facts
from tether.journal.views.ocsf import ocsf_events
from tether.journal.views.spans import derive_spans
from tether.journal.views.timeline import timeline
from tether.runtime.record.state import fold
from tether.tools import Calculator
from tether.types import Event, ModelResponse, ToolCall

from test_approvals import NeedsApproval  # side-effecting calls need a human

FIXTURE = "journal_before_vocabulary"


def _paying(answer: str) -> Agent:
    @tool(side_effect=True)
    def pay(account: str, amount: int, card: str = "") -> str:
        """Pay an amount."""
        return f"paid {amount} to {account}"

    turn = ModelResponse(tool_calls=(
        ToolCall("c1", "pay", {"account": "A", "amount": 40, "card": "4111-secret"}),))
    return Agent(model=ScriptedModel([turn, answer]), reasoning=ReAct(), tools=[pay],
                 policy=NeedsApproval())


def sessions() -> list[list[Event]]:
    """The events of three representative sessions, run now."""
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    quick = Agent(model=model, reasoning=ReAct(), tools=[Calculator()]).session("17 * 23?")
    quick.run()
    journals = [quick.replay()]
    for grant in (True, False):
        agent = _paying("paid it" if grant else "could not pay")
        session = agent.session("pay A", user_id="u1")
        session.run()
        (request,) = session.pending_approvals()
        if grant:
            agent.approvals.approve(request.id, approver="alice", note="ok for A")
        else:
            agent.approvals.deny(request.id, approver="bob", note="over limit")
        session.resume()
        journals.append(session.replay())
    return journals


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def readings(events: Sequence[Event]) -> dict[str, Any]:
    """What tether reads of one session's journal, as plain JSON."""
    state = fold(events)
    folded = {name: repr(getattr(state, name)) for name in sorted(type(state).__slots__)
              if " at 0x" not in repr(getattr(state, name))}
    spans = [[s.name, s.kind, s.start_ns, s.end_ns, s.error, _plain(dict(s.attributes))]
             for s in derive_spans(events, content=True)]
    ocsf = [{k: v for k, v in r.items() if k != "metadata"} for r in ocsf_events(events)]
    return {"broken_at": verify_chain(events), "fold": folded, "timeline": timeline(events),
            "facts": _plain(dataclasses.asdict(session_facts(events))), "spans": spans,
            "ocsf": _plain(ocsf)}


def write(folder: Path) -> None:
    journals = sessions()
    with (folder / f"{FIXTURE}.jsonl").open("w") as out:
        write_jsonl([e for events in journals for e in events], out)
    read = {events[0].session_id: readings(events) for events in journals}
    (folder / f"{FIXTURE}.readings.json").write_text(json.dumps(read, indent=1, sort_keys=True))


if __name__ == "__main__":
    write(Path(sys.argv[1]))
