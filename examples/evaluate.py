"""Reliability, measured: pass^k of an agent under perturbations, every trial a journaled session.

Run: python examples/evaluate.py (writes eval.html beside you).
"""

from eval_agent import make_agent, my_checker

from tether.evals import Task, evaluate, numeric


def main() -> None:
    agent = make_agent()

    report = evaluate(agent, [Task("What is 17 * 23?", expected="391", grader=numeric()),
                              Task("Refund order A1 in full", grader=my_checker)],
                      k=8, perturbations=["canonical", "order_shuffled", "paraphrase",
                                          "distractor_tools", "tool_faults"], seed=7)
    # pass^1..pass^8 and pass@k per perturbation, with intervals
    print(report.summary())
    report.write_html("eval.html")    # a page a person would rather look at than read


if __name__ == "__main__":
    main()
