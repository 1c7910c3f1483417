"""evaluate(): trials are sessions with their identity in metadata, graded once, reproducible,
resumable, and the report rebuilt from the store equals the one returned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.evals import Task, evaluate, numeric, pass_at_k_with_perturbations, state
from tether.evals.grades import stored_grades
from tether.evals.report import Report, regressions
from tether.evals.tasks import load_suite
from tether.evals.trials import TrialRecord, stored_trials
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.approver import approve_all, deny_all
from tether.store.base import Store
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

import eval_app

HERE = Path(__file__).parent
PERTURB = ["canonical", "order_shuffled", "paraphrase", "distractor_tools", "tool_faults",
           "irrelevant_context"]


def tasks() -> tuple[Task, ...]:
    return load_suite(HERE / "evals" / "arith.yaml").tasks


def counting_agent(calls: list[str]) -> Agent:
    def respond(request: Any) -> Any:
        calls.append("model")
        return eval_app.respond(request)

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[eval_app.multiply])


def metadata(store: Store, record: TrialRecord) -> dict[str, Any]:
    return dict(store.read(record.session_id)[0].data["metadata"])


def test_every_trial_is_a_session_with_its_identity_and_the_counts_follow_the_grades() -> None:
    store = MemoryStore()
    report = evaluate(eval_app.make_agent(), tasks(), k=4, perturbations=PERTURB, seed=7,
                      name="arith", suite="arith", store=store)
    assert len(report.records) == 3 * 6 * 4
    for r in report.records:
        assert metadata(store, r) == {**r.key.labels(), "attempt": 1, "kind": "trial",
                                      "perturbed": metadata(store, r)["perturbed"]}
    for name, s in report.slices.items():
        rows = [r for r in report.records if name == "all" or r.key.perturbation == name]
        assert s.trials == len(rows) and s.passed == sum(r.passed for r in rows)
    canonical = report.slices["canonical"]
    assert canonical.pass_hat[4].value == 1.0  # the model is right on every canonical trial
    # the model is wrong exactly when a paraphrase reads "Question: ..." (tool faults aside)
    for r in report.records:
        if r.key.perturbation == "tool_faults":
            continue
        notes = metadata(store, r)["perturbed"]
        assert r.passed == (notes.get("paraphrase", {}).get("template") != 3), r


def test_every_grade_is_an_evaluation_result_event_naming_its_trial() -> None:
    from tether.journal.views.spans import derive_spans

    store = MemoryStore()
    report = evaluate(eval_app.make_agent(), tasks(), k=1, perturbations=["canonical"],
                      seed=7, name="arith", suite="arith", store=store)
    books = [s.session_id for s in store.sessions() if "grades" in s.session_id]
    results = [dict(a) for book in books for span in derive_spans(store.read(book))
               for name, _, a in span.events if name == "gen_ai.evaluation.result"]
    assert len(results) == len(report.records) == 3
    by_session = {r["tether.evaluation.session.id"]: r for r in results}
    for record in report.records:
        result = by_session[record.session_id]
        assert result["gen_ai.evaluation.score.label"] == ("pass" if record.passed else "fail")
        assert result["gen_ai.evaluation.name"] and "gen_ai.evaluation.explanation" not in result


def test_perturbations_are_seeded_recorded_and_reproducible(tmp_path: Path) -> None:
    def notes(seed: int) -> dict[str, Any]:
        store = MemoryStore()
        report = evaluate(eval_app.make_agent(), tasks(), k=3, perturbations=PERTURB,
                          seed=seed, name=f"s{seed}", store=store)
        return {(r.key.task, r.key.perturbation, r.key.repetition):
                (metadata(store, r)["perturbed"], r.passed) for r in report.records}

    first, again, other = notes(1), notes(1), notes(2)
    assert first == again
    assert first != other
    shuffled = [n for (_, p, _), (n, _) in first.items() if p == "distractor_tools"]
    assert all(len(n["distractors"]) == 3 for n in shuffled)


def test_the_report_from_the_store_equals_the_one_returned(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "evals.db"))
    report = evaluate(eval_app.make_agent(), tasks(), k=3, perturbations=["canonical",
                      "paraphrase"], seed=5, name="arith", store=store)
    rebuilt = Report.of("arith", stored_trials(store, "arith"), seed=5)
    assert rebuilt.to_dict() == report.to_dict()
    # trials and the grade book are journaled sessions, which verify like any other
    from tether.journal.chain import verify_chain

    books = [i.session_id for i in store.sessions() if "-grades-" in i.session_id]
    assert len(books) == 1 and all(verify_chain(store.read(b)) is None for b in books)
    graded = [e for e in store.read(books[0]) if e.type == "eval.graded"]
    assert len(graded) == len(report.records)
    for r in report.records:
        assert verify_chain(store.read(r.session_id)) is None
    store.close()


def test_an_interrupted_evaluation_resumes_without_rerunning_graded_trials(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'evals.db'}"
    calls: list[str] = []
    first = evaluate(counting_agent(calls), tasks()[:2], k=2, name="r", store=url)
    ran = len(calls)
    assert ran == 2 * 2 * 2  # two model calls per trial
    again = evaluate(counting_agent(calls), tasks(), k=2, name="r", store=url)
    assert len(calls) - ran == 1 * 2 * 2  # only the new task's trials ran
    assert {r.session_id for r in first.records} <= {r.session_id for r in again.records}


class Killed(BaseException):
    """The process dies: nothing after it runs."""


def test_an_attempt_that_died_before_its_grade_runs_again_and_counts_once(
        tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "evals.db"))
    graded: list[str] = []

    def dies_once(outcome: Any) -> bool:
        if not graded:
            graded.append(outcome.session_id)
            raise Killed  # after the trial's session ended, before its grade is journaled
        return "42" in outcome.answer

    task = Task("What is 2 * 21?", grader=dies_once, id="t")
    with pytest.raises(Killed):
        evaluate(eval_app.make_agent(), [task], k=2, name="d", store=store, concurrency=1)
    (dead,) = graded
    assert store.read(dead) and dead.rsplit(".", 1)[0] not in stored_grades(store, "d")
    again = evaluate(eval_app.make_agent(), [task], k=2, name="d", store=store)
    assert len(again.records) == 2 and all(r.passed for r in again.records)
    redone = next(r for r in again.records if r.session_id.startswith(dead.rsplit(".", 1)[0]))
    assert redone.attempt == 2 and redone.session_id.endswith(".2")
    assert len(stored_trials(store, "d")) == 2  # counted once
    assert store.read(dead)  # the dead attempt is kept as evidence
    store.close()


def test_a_grader_that_raises_fails_its_trial_with_the_error_recorded() -> None:
    task = Task("What is 2 * 3?", grader=lambda o: 1 / 0)
    report = evaluate(eval_app.make_agent(), [task], k=2)
    assert report.slices["canonical"].passed == 0
    assert all("ZeroDivisionError" in r.grade.why for r in report.records)


def test_state_grader_sees_the_trials_own_fresh_environment() -> None:
    def make(env: dict[str, list[str]]) -> Agent:
        @tool(side_effect=True)
        def refund(order: str) -> str:
            """Refund an order in full."""
            env["refunded"].append(order)
            return f"refunded {order}"

        script: list[ModelResponse | str] = [
            ModelResponse(tool_calls=(ToolCall("c1", "refund", {"order": "A1"}),)), "Done."]
        return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[refund])

    task = Task("Refund order A1 in full", environment=lambda: {"refunded": []},
                grader=state(lambda env: env["refunded"] == ["A1"]))
    report = evaluate(make, [task], k=3, perturbations=["canonical", "tool_faults"])
    assert report.slices["canonical"].passed == 3  # each trial: a fresh env, refunded once


class RefundsNeedApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "a person decides", "refunds")


def test_approvals_in_an_evaluation_are_decided_by_the_agents_approver() -> None:
    def make(approver: Any) -> Agent:
        return Agent(model=ScriptedModel(eval_app.respond), reasoning=ReAct(),
                     tools=[eval_app.multiply], policy=RefundsNeedApproval(), approver=approver)

    task = Task("What is 17 * 23?", expected="391", grader=numeric())
    yes = evaluate(make(approve_all()), [task], k=2)
    no = evaluate(make(deny_all()), [task], k=2)
    assert yes.slices["canonical"].passed == 2 and no.slices["canonical"].passed == 0
    assert yes.slices["canonical"].metrics.approval_rate == 1.0
    assert no.slices["canonical"].metrics.denial_rate == 1.0  # refused, by the approver


def test_the_seeds_shape() -> None:
    agent = eval_app.make_agent()
    report = pass_at_k_with_perturbations(session_factory=lambda task: agent.session(task),
                                          task=Task(prompt="What is 17 * 23?"), k=8)
    assert report.k == 8 and "pass^8" in report.summary()
    assert set(report.slices) == {"canonical", "paraphrase", "irrelevant_context", "all"}


def test_bad_input_is_refused_before_any_trial() -> None:
    agent = eval_app.make_agent()
    with pytest.raises(ValueError, match="unknown perturbation"):
        evaluate(agent, tasks(), k=2, perturbations=["canonical", "shuffle"])
    with pytest.raises(ValueError, match="k must be"):
        evaluate(agent, tasks(), k=0)
    with pytest.raises(ValueError, match="two tasks have the id"):
        evaluate(agent, [Task("a", "1", id="x"), Task("b", "2", id="x")], k=1)
    with pytest.raises(ValueError, match="a store they can all open"):
        evaluate("eval_app:make_agent", tasks(), k=1, workers=2)
    with pytest.raises(TypeError, match="not a tether Agent"):
        evaluate(lambda: "agent", tasks(), k=1)


def test_json_is_stable_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    task = Task("What is 2 * 21?", grader=lambda o: __import__("tether.reasoning.graders")
                .reasoning.graders.Grade(False, "<script>alert(1)</script>"))
    report = evaluate(eval_app.make_agent(), [task, *tasks()], k=2,
                      perturbations=["canonical", "paraphrase"])
    data = json.loads(report.write_json(tmp_path / "r.json").read_text())
    assert data["schema"] == "tether.eval.report/1"
    assert set(data["perturbations"]) == {"canonical", "paraphrase", "all"}
    assert set(data["perturbations"]["canonical"]["pass_hat_k"]) == {"1", "2"}
    page = report.write_html(tmp_path / "r.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "http://" not in page.replace("http-equiv", "") and "<svg" in page


def test_regressions_against_a_baseline() -> None:
    report = evaluate(eval_app.make_agent(), tasks(), k=2, perturbations=["canonical"])
    baseline = report.to_dict()
    assert regressions(baseline, baseline) == []
    worse = json.loads(json.dumps(baseline))
    worse["perturbations"]["canonical"]["pass_hat_k"]["2"]["value"] = 0.1
    found = regressions(worse, baseline)
    assert len(found) == 1 and "pass^2" in found[0]
    with pytest.raises(ValueError, match="schema"):
        regressions(baseline, {"schema": "other"})


def test_session_metadata_is_journaled_and_seen_by_neither_model_nor_policy() -> None:
    seen: list[str] = []

    class Watching:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            seen.append(repr((subject, action, resource, context)))
            return Decision(Effect.ALLOW, "ok", "watch")

    def respond(request: Any) -> Any:
        seen.append(repr(request))
        return eval_app.respond(request)

    store = MemoryStore()
    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[eval_app.multiply],
                  policy=Watching(), store=store)
    session = agent.session("What is 2 * 3?", metadata={"ticket": "T-SECRET-LABEL"})
    result = session.run()
    assert result.ok and seen
    assert not any("T-SECRET-LABEL" in s for s in seen)
    assert store.read(result.session_id)[0].data["metadata"] == {"ticket": "T-SECRET-LABEL"}
    assert agent.load(result.session_id).metadata == {"ticket": "T-SECRET-LABEL"}
