"""Structured output: Agent(output_type=...) validates the answer, repairs it within bounds and
the budget, journals every verdict, and result.output is the instance — live, folded, resumed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelRequest,
    ReAct,
    ScriptedModel,
    StopReason,
    tool,
)
from tether.journal.chain import verify_chain
from tether.policy import Action, Context, Resource, Subject
from tether.reasoning.graders import Outcome, grade, output_fields
from tether.runtime.chokepoint.output import MAX_TEXT_CHARS, json_text
from tether.runtime.record.state import fold
from tether.runtime.rerun import rerun
from tether.store.memory import MemoryStore

from conftest import call


class Invoice(BaseModel):
    number: str
    total: float
    paid: bool


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


VALID = '{"number": "INV-7", "total": 12.5, "paid": false}'


def agent(script: Any, **kwargs: Any) -> Agent:
    kwargs.setdefault("output_type", Invoice)
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), **kwargs)


def data(session: Any, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in session.replay() if e.type == kind]


def test_a_valid_answer_is_the_output_and_the_answer_stays_the_text() -> None:
    session = agent([VALID]).session("bill it")
    result = session.run()
    assert result.ok and result.answer == VALID
    assert result.output == Invoice(number="INV-7", total=12.5, paid=False)
    assert data(session, "output.valid") == [{"type": "Invoice", "output": {
        "number": "INV-7", "total": 12.5, "paid": False}}]
    assert data(session, "output.invalid") == []
    start = data(session, "session.start")[0]
    assert start["output"] == {"type": "Invoice", "retries": 2, "native": False}
    # the scripted model follows no schema by itself: the schema goes out as instructions
    assert '"required":["number","total","paid"]' in start["system_prompt"]


@pytest.mark.parametrize(("output_type", "text", "expected"), [
    (Point, '{"x": 1, "y": 2}', Point(1, 2)),
    (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
])
def test_dataclasses_and_typeddicts_are_output_types(output_type: Any, text: str,
                                                     expected: Any) -> None:
    result = agent([text], output_type=output_type).run("go")
    assert result.output == expected and type(result.output) is type(expected)


def test_an_invalid_answer_gets_a_repair_turn_with_the_errors_then_validates() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return ['Sure! {"number": 7, "total": "lots", "paid": false}', VALID][len(seen) - 1]

    session = agent(respond).session("bill it")
    result = session.run()
    assert result.ok and result.output.number == "INV-7"
    (invalid,) = data(session, "output.invalid")
    assert invalid["attempt"] == 1 and invalid["repairs_left"] == 2
    assert {tuple(e["loc"]) for e in invalid["errors"]} == {("number",), ("total",)}
    assert "input" not in invalid["errors"][0]  # the text is journaled once, not per error
    assert invalid["text"].startswith("Sure!")
    # the repair is an ordinary governed turn: its note is in the request the model got
    note = seen[1].messages[-1]
    assert note.role == "user" and "number: Input should be a valid string" in note.content
    assert result.spend.steps == 2 and len(data(session, "model.request")) == 2
    assert verify_chain(session.replay()) is None


def test_a_model_that_never_gives_valid_output_stops_with_the_reason_and_its_last_output(
) -> None:
    answers = [f"attempt {i}: no JSON here" for i in range(1, 10)]
    session = agent(answers, output_retries=2).session("bill it")
    result = session.run()
    assert result.stop_reason is StopReason.OUTPUT_INVALID and not result.ok
    assert result.output is None
    assert result.answer == "attempt 3: no JSON here"  # the model's last words, kept
    assert "did not validate as Invoice in 3 attempts (2 repairs allowed)" in result.stop_detail
    assert "result.output is None" in result.notice
    invalid = data(session, "output.invalid")
    assert [e["attempt"] for e in invalid] == [1, 2, 3]
    assert [e["repairs_left"] for e in invalid] == [2, 1, 0]
    assert invalid[-1]["text"] == "attempt 3: no JSON here"
    # bounded: one first try and two repairs, no wrap-up turn after
    assert len(data(session, "model.request")) == 3
    assert len(data(session, "session.note")) == 2
    assert data(session, "session.end")[0]["reason"] == "output_invalid"


def test_no_repair_starts_when_the_budget_cannot_afford_it() -> None:
    session = agent(["nope"] * 10, output_retries=5,
                    budget=Budget(max_steps=2)).session("bill it")
    result = session.run()
    assert result.stop_reason is StopReason.STEP_BUDGET
    assert result.spend.steps == 2 and result.output is None
    # the first answer failed; the repair did not fit beside the wrap-up turn the step budget
    # keeps, so the second (and last) call is that wrap-up, whose text is no output
    first, last = data(session, "model.request")
    assert not first["final"] and last["final"]
    assert len(data(session, "output.invalid")) == 1


def test_zero_retries_stops_at_the_first_invalid_answer() -> None:
    session = agent(["nope"], output_retries=0).session("x")
    assert session.run().stop_reason is StopReason.OUTPUT_INVALID
    assert data(session, "session.note") == [] and len(data(session, "model.request")) == 1


def test_extra_fields_are_dropped_unless_the_type_forbids_them() -> None:
    extra = '{"number": "INV-7", "total": 1, "paid": true, "admin": true}'
    result = agent([extra]).run("x")
    assert result.ok and not hasattr(result.output, "admin")

    class Closed(Invoice):
        model_config = ConfigDict(extra="forbid")

    session = agent([extra, '{"number": "INV-7", "total": 1, "paid": true}'],
                    output_type=Closed).session("x")
    assert session.run().output == Closed(number="INV-7", total=1, paid=True)
    (invalid,) = data(session, "output.invalid")
    assert invalid["errors"][0]["loc"] == ["admin"]


@pytest.mark.parametrize("text", [
    '{"number": "INV-7", "total": "12.5", "paid": false}',  # a number as text: strict refuses
    '{"number": "INV-7", "total": 12.5, "paid": "yes"}',
    '{"number": "INV-7", "total": 12.5}',
    '["INV-7", 12.5, false]',
    '{"number": "INV-7", "total": NaN, "paid": false}',
    "__import__('os').system('echo pwned')",  # parsed as JSON or refused: never evaluated
])
def test_wrong_types_and_shapes_are_invalid(text: str) -> None:
    session = agent([text], output_retries=0).session("x")
    assert session.run().stop_reason is StopReason.OUTPUT_INVALID
    assert data(session, "output.invalid")[0]["errors"]


def test_huge_nesting_and_huge_text_are_refused_and_journaled_compactly() -> None:
    deep = '{"number": ' + "[" * 5000 + "]" * 5000 + ', "total": 1, "paid": true}'
    many = json.dumps({"number": "x", "total": 1, "paid": True,
                       "items": [[i] for i in range(2000)]}) + " " + "z" * 50_000

    class Strict(Invoice):
        model_config = ConfigDict(extra="forbid")

    session = agent([deep, many], output_type=Strict, output_retries=1).session("x")
    result = session.run()
    assert result.stop_reason is StopReason.OUTPUT_INVALID
    first, second = data(session, "output.invalid")
    assert first["errors"] and len(json.dumps(first["errors"])) < 2000
    assert len(second["text"]) < MAX_TEXT_CHARS + 100 and "more characters" in second["text"]


class NeedsApproval:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, "a person decides", "approvals")
        return Decision(Effect.ALLOW, "ok", "approvals")


def test_output_survives_a_pause_a_resume_and_a_load_from_the_store() -> None:
    @tool(side_effect=True)
    def send(number: str) -> str:
        """Send an invoice."""
        return f"sent {number}"

    store = MemoryStore()
    recipe = agent([call("send", {"number": "INV-7"}), "not yet json", VALID], tools=[send],
                   policy=NeedsApproval(), store=store)
    session = recipe.session("send and report")
    paused = session.run()
    assert paused.stop_reason is StopReason.NEEDS_APPROVAL and paused.output is None
    (request,) = session.pending_approvals()
    recipe.approval_store.approve(request.id, approver="alice")
    resumed = recipe.resume(session.id)  # another Session object, rebuilt from the journal
    assert resumed.ok and resumed.output == Invoice(number="INV-7", total=12.5, paid=False)
    events = store.read(session.id)
    assert [e.data["attempt"] for e in events if e.type == "output.invalid"] == [1]
    # the journal alone gives the output back: folded, and loaded into a new session
    assert fold(events).output == {"number": "INV-7", "total": 12.5, "paid": False}
    assert recipe.load(session.id).result.output == resumed.output  # type: ignore[union-attr]


def test_repair_counts_carry_over_a_resume() -> None:
    @tool(side_effect=True)
    def send(number: str) -> str:
        """Send an invoice."""
        return "sent"

    store = MemoryStore()
    recipe = agent(["bad", call("send", {"number": "1"}), "bad again", "still bad"],
                   tools=[send], policy=NeedsApproval(), store=store, output_retries=2)
    session = recipe.session("x")
    assert session.run().stop_reason is StopReason.NEEDS_APPROVAL
    (request,) = session.pending_approvals()
    recipe.approval_store.approve(request.id, approver="alice")
    result = recipe.resume(session.id)
    assert result.stop_reason is StopReason.OUTPUT_INVALID
    assert [e.data["attempt"] for e in store.read(session.id)
            if e.type == "output.invalid"] == [1, 2, 3]


def test_a_rerun_of_a_repaired_session_matches() -> None:
    recipe = agent(["{}", VALID])
    session = recipe.session("x")
    session.run()
    report = rerun(recipe, session.replay())
    assert report.matches, report.divergences
    assert report.result is not None and report.result.output == session.result.output  # type: ignore[union-attr]


def test_without_an_output_type_nothing_is_added() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "plain"

    recipe = Agent(model=ScriptedModel(respond), reasoning=ReAct())
    session = recipe.session("x")
    result = session.run()
    assert result.output is None and result.answer == "plain"
    start = data(session, "session.start")[0]
    assert "output" not in start and start["system_prompt"] == recipe.system_prompt
    assert seen[0].output_schema is None
    assert not [e for e in session.replay() if e.type.startswith("output.")]


@pytest.mark.parametrize("bad", [str, int, dict, "Invoice", Invoice(number="1", total=1,
                                                                   paid=True)])
def test_an_output_type_that_is_not_a_model_dataclass_or_typeddict_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="pydantic model, a dataclass or a TypedDict"):
        agent(["x"], output_type=bad)


@pytest.mark.parametrize("retries", [-1, 1.5, True])
def test_output_retries_must_be_a_whole_number(retries: Any) -> None:
    with pytest.raises(ValueError, match="output_retries"):
        agent(["x"], output_retries=retries)


def test_json_is_cut_out_of_fences_and_words_but_never_repaired() -> None:
    assert json_text('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert json_text('Here: {"a": 1}. Done') == '{"a": 1}'
    assert json_text("{'a': 1}") == "{'a': 1}"  # not JSON: stays invalid


async def test_a_grader_compares_the_outputs_fields() -> None:
    output = Invoice(number="INV-7", total=12.5, paid=False)

    def outcome(value: Any, expected: Any = None) -> Outcome:
        return Outcome("p", expected, "text", "finished", output=value)

    assert (await grade(output_fields(number="INV-7", total=12.5), outcome(output))).passed
    wrong = await grade(output_fields({"paid": True, "missing": 1}), outcome(output))
    assert not wrong.passed and "paid: expected True, got False" in wrong.why
    assert "missing: missing" in wrong.why
    assert (await grade(output_fields(), outcome({"name": "Ada", "age": 36},
                                                 {"name": "Ada"}))).passed
    nested = {"name": "Ada", "address": {"city": "Paris"}}
    assert (await grade(output_fields({"address.city": "Paris"}), outcome(nested))).passed
    none = await grade(output_fields(number="INV-7"), outcome(None))
    assert not none.passed and "no validated output" in none.why


def test_an_evaluation_grades_on_result_output() -> None:
    from tether.evals import Task, evaluate

    recipe = agent(['Here you are: {"number": "INV-7", "total": 12.5, "paid": false}'])
    report = evaluate(recipe, [Task("bill it", expected={"number": "INV-7"},
                                    grader=output_fields())], k=2)
    assert report.pass_hat_k(2).value == 1.0 and not report.failing()


def test_the_audit_timeline_shows_each_verdict() -> None:
    from tether.journal.views.timeline import timeline

    session = agent(['{"number": 7}', VALID]).session("x")
    session.run()
    text = "\n".join(timeline(session.replay()))
    assert "output invalid (Invoice, attempt 1, 2 repairs left): number: Input should be a " \
           "valid string" in text
    assert "note to the model:" in text and 'output valid (Invoice): {"number": "INV-7"' in text


def test_tether_run_shows_each_verdict(tmp_path: Any, capsys: Any) -> None:
    from tether.cli import main

    (tmp_path / "recipe.py").write_text(
        "from pydantic import BaseModel\n"
        "from tether import Agent, ReAct, ScriptedModel\n"
        "class Point(BaseModel):\n    x: int\n"
        "agent = Agent(model=ScriptedModel(['{\"x\": \"a\"}', '{\"x\": 1}']), reasoning=ReAct(),"
        " output_type=Point)\n")
    code = main(["run", f"{tmp_path / 'recipe.py'}:agent", "go", "--store",
                 f"sqlite:///{tmp_path / 'runs.db'}"])
    out = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert "output invalid Point (attempt 1, 2 repairs left): x: Input should be a valid " \
           "integer" in out
    assert "output valid Point" in out


def test_a_suite_names_the_output_grader(tmp_path: Any) -> None:
    from tether.evals import evaluate, load_suite

    path = tmp_path / "suite.yaml"
    path.write_text("suite: bills\ntasks:\n"
                    "  - prompt: bill it\n    grader: {output_fields: {fields: {number: INV-7}}}\n"
                    "  - prompt: bill it again\n"
                    "    grader: {output_fields: {fields: {paid: true}}}\n")
    suite = load_suite(path)
    report = evaluate(agent([VALID]), suite.tasks, k=1)
    grades = sorted((r.grade.passed, r.grade.why) for r in report.records)
    assert grades == [(False, "paid: expected True, got False"), (True, "")]
