"""Tokens compaction saves on a long scripted conversation: python bench/compaction.py
[--turns N] [--window TOKENS] [--instructions]

A scripted agent makes N tool calls, one per turn, each result about 400 tokens, then answers;
every request resends the conversation, so without compaction the input grows with each turn
and the run's tokens grow with the square of its length. The same run is made without
compaction, with ``summarise`` (a scripted summariser answering a 60-token summary, its calls
charged) and with ``drop``, and each line is read off the session's journal: the model's input
and output tokens, the summary calls' tokens, the largest request, how many compactions.
``--instructions`` also counts what compaction adds to a step when armed and never triggered
(``bench/instructions.py --compaction``: valgrind).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tether import Agent, Compaction, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

SUMMARY = "Records 0 to n were looked up; each holds a row of x. Nothing is pending. " * 3


@tool
def lookup(n: int) -> str:
    """Look up record n."""
    return f"record {n}: " + "x" * 1600


def run(turns: int, compaction: Compaction | None) -> dict[str, int]:
    script: list[ModelResponse | str] = [
        ModelResponse(tool_calls=(ToolCall(f"c{i}", "lookup", {"n": i}),)) for i in range(turns)]
    script.append("all records read")
    agent = Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[lookup],
                  compaction=compaction)
    session = agent.session("look up every record")
    result = session.run()
    assert result.answer == "all records read", result
    events = session.replay()
    responses = [e.data["response"]["usage"] for e in events if e.type == "model.response"]
    summaries = [e.data for e in events if e.type == "compaction.response"]
    return {
        "input": sum(u["input_tokens"] for u in responses),
        "output": sum(u["output_tokens"] for u in responses),
        "summaries": sum(d["input_tokens"] + d["output_tokens"] for d in summaries),
        "largest": max(u["input_tokens"] for u in responses),
        "compactions": sum(e.type == "context.compacted" for e in events),
        "total": result.usage.total_tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per step, compaction off and armed")
    args = parser.parse_args()
    summariser = ScriptedModel(lambda request: SUMMARY, name="summariser")
    modes = {
        "off": None,
        "summarise": Compaction(context_window=args.window, keep_last=4, model=summariser),
        "drop": Compaction(strategy="drop", context_window=args.window, keep_last=4),
    }
    print(f"{args.turns} turns, results ~400 tokens each, window {args.window} tokens "
          "(compaction at 80%), keep_last=4")
    print(f"  {'mode':<10} {'input':>9} {'output':>7} {'summaries':>10} {'total':>9} "
          f"{'saved':>7} {'largest request':>16} {'compactions':>12}")
    off = 0
    for name, compaction in modes.items():
        r = run(args.turns, compaction)
        off = off or r["total"]
        saved = f"{100 * (off - r['total']) / off:.0f}%"
        print(f"  {name:<10} {r['input']:>9,} {r['output']:>7,} {r['summaries']:>10,} "
              f"{r['total']:>9,} {saved:>7} {r['largest']:>16,} {r['compactions']:>12}")
    if args.instructions:
        subprocess.run([sys.executable, str(Path(__file__).with_name("instructions.py")),
                        "--compaction"], check=True)


if __name__ == "__main__":
    main()
