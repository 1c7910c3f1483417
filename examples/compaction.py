"""Context compaction end to end: python examples/compaction.py

A scripted agent reads a twelve-page report, one tool call per page. Its context window is
declared at 3,000 tokens, so before the request that would pass 80% of it the oldest turns are
replaced: by a summary from a second (scripted) model, then by a note that they were dropped.
Each run is rerun from its journal (the recorded summary is replayed, nothing is called again)
and the compaction is shown as ``tether audit show`` shows it.
"""

from __future__ import annotations

import dataclasses

from tether import Agent, Compaction, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.journal.views.timeline import timeline
from tether.runtime.rerun import rerun


@tool
def read_page(n: int) -> str:
    """Read page n of the report."""
    return f"page {n}: " + "lorem ipsum " * 100


def build(strategy: str) -> Agent:
    pages = [ModelResponse(tool_calls=(ToolCall(f"p{n}", "read_page", {"n": n}),))
             for n in range(12)]
    model = ScriptedModel([*pages, "The report is lorem ipsum throughout."])
    summariser = ScriptedModel(lambda request: "Pages 0-5 were read: all lorem ipsum.",
                               name="summariser")
    return Agent(model=model, reasoning=ReAct(), tools=[read_page],
                 compaction=Compaction(strategy=strategy, context_window=3000, keep_last=2,
                                       model=summariser))


def main() -> None:
    task = "Read the report's twelve pages and say what it is about."
    plain = dataclasses.replace(build("drop"), compaction=None).run(task)
    print(f"without compaction: {plain.usage.total_tokens} tokens")
    for strategy in ("summarise", "drop"):
        agent = build(strategy)
        session = agent.session(task)
        result = session.run()
        events = session.replay()
        print(f"{strategy}: {result.answer} ({result.usage.total_tokens} tokens)")
        for line in timeline(events):
            if "compacted:" in line or "summary call" in line:
                print("  " + line.strip())
        report = rerun(agent, events)
        print(f"  rerun matches: {report.matches}")


if __name__ == "__main__":
    main()
