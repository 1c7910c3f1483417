"""A real model, measured: SmolLM2-135M on small arithmetic and tool-use tasks, k=8, sampling on.

Run: python examples/evaluate_local.py [OUT_DIR]   (the `local` extra; several minutes on 2 cores)

What it shows is the gap a real model has between being right once and being right every time:
with sampling on, the same task passes on some trials and fails on others, so pass^8 falls far
below pass^1. Every trial is a governed session (budgeted, journaled) in OUT_DIR/evals.db; the
report goes to OUT_DIR/report.json and OUT_DIR/report.html (default OUT_DIR: docs/evals/smollm2).
"""

import sys
from pathlib import Path

from tether import Agent, Budget, ReAct
from tether.evals import Task, evaluate, numeric, trajectory
from tether.models.local import local_model_server
from tether.tools import Calculator

TASKS = [
    Task("What is 2 + 3?", expected="5", grader=numeric(), id="add-small"),
    Task("What is 12 * 12?", expected="144", grader=numeric(), id="mul-12"),
    Task("What is 17 * 23? Use the calculator.", expected="391", grader=numeric(), id="mul-17-23"),
    Task("What is 100 - 58?", expected="42", grader=numeric(), id="sub"),
    Task("Use the calculator to compute 9 * 8.", id="tool-use",  # the tool ran and gave 72
         grader=trajectory(lambda calls: any(c.tool == "calculator" and c.status == "ok"
                                             and c.content.strip() == "72" for c in calls))),
    Task("What is 7 + 6?", expected="13", grader=numeric(), id="add-carry"),
]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "evals.db").unlink(missing_ok=True)
    with local_model_server() as server:  # on 127.0.0.1, stopped (with its children) after
        model = server.model(max_output_tokens=96,
                             params={"temperature": 0.8, "tool_choice": "none"})
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()],
                      first_tool_choice="calculator",
                      budget=Budget(max_tokens=3000, max_steps=3, max_seconds=120))
        report = evaluate(agent, TASKS, k=8, perturbations=["canonical", "paraphrase"], seed=7,
                          name="smollm2", suite="arithmetic",
                          store=f"sqlite:///{out / 'evals.db'}", concurrency=2)
    print(report.summary())
    report.write_json(out / "report.json")
    report.write_html(out / "report.html")
    (out / "summary.txt").write_text(report.summary() + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/evals/smollm2"))
