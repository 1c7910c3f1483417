"""An evaluation of a real model (SmolLM2-135M on llama.cpp's server, sampling on): every trial is
a governed session whose budget holds and whose journal verifies, graded against the expected
answer — never against the trials agreeing. Asserts on the harness, not on the model's wisdom."""

from __future__ import annotations

from typing import Any

from tether import Agent, Budget, ReAct
from tether.evals import Task, evaluate, numeric
from tether.evals.report import Report
from tether.evals.trials import stored_trials
from tether.journal.chain import verify_chain
from tether.store.memory import MemoryStore
from tether.tools import Calculator


def test_pass_hat_k_of_a_real_model(local_server: Any) -> None:
    store = MemoryStore()
    model = local_server.model(max_output_tokens=48,
                               params={"temperature": 0.8, "tool_choice": "none"})
    agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], store=store,
                  first_tool_choice="calculator",
                  budget=Budget(max_tokens=2000, max_steps=3, max_seconds=60))
    report = evaluate(agent, [Task("What is 17 * 23?", expected="391", grader=numeric())],
                      k=3, perturbations=["canonical", "paraphrase"], seed=1, name="real",
                      concurrency=2)
    assert len(report.records) == 6
    for r in report.records:
        events = store.read(r.session_id)
        assert verify_chain(events) is None
        assert r.facts.tokens <= 2000 and r.facts.status == "ended"
        assert r.passed or r.grade.why
    hat = report.slices["all"].pass_hat
    assert hat[1].value >= hat[3].value  # all of k right is never likelier than one
    assert Report.of("real", stored_trials(store, "real"), seed=1).to_dict() == report.to_dict()
