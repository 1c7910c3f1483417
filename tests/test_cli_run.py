"""``tether run``: an agent run from the shell, watched line by line, ending with the answer,
the notice when it stopped, and the session id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.cli import main
from tether.store.sqlite import SQLiteStore

RECIPE = '''
from tether import Agent, Decision, Effect, ReAct, ScriptedModel, ToolCall, ModelResponse
from tether.tools import Calculator


class NoDivision:
    def evaluate(self, subject, action, resource, context):
        if "/" in str(action.arguments.get("expression", "")):
            return Decision(Effect.DENY, "division is off today", "no-division")
        return Decision(Effect.ALLOW, "", "maths")


def agent():
    script = [ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "6 / 3"}),
                                        ToolCall("c2", "calculator", {"expression": "2 * 3"}))),
              "six"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[Calculator()],
                 policy=NoDivision())
'''


@pytest.fixture
def recipe(tmp_path: Path) -> str:
    path = tmp_path / "recipe.py"
    path.write_text(RECIPE)
    return f"{path}:agent"


def test_a_run_is_shown_as_it_happens_and_journaled(
        recipe: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"  # made by the run: it does not exist yet
    code = main(["run", recipe, "What is 2 * 3?", "--store", store,
                 "--budget", "tokens=5000,steps=5,tool_calls=4"])
    out = capsys.readouterr().out
    assert code == 0
    lines = [line.strip() for line in out.splitlines()]
    assert lines[0] == "model turn 1: (no text), 2 tool call(s)"
    assert lines[1].startswith("spend tokens ") and "of 5000" in lines[1]
    assert "steps 1 of 5" in lines[1] and " of 4" in lines[1]  # tool calls, of the limit
    assert ('tool calculator(expression="6 / 3") [c1] -> deny by no-division: division is off '
            'today') in lines
    assert 'tool calculator(expression="2 * 3") [c2] -> allow by maths' in lines
    assert "tool calculator [c2] ok: 6" in lines
    assert lines[-2] == "result finished: six"
    session_id = lines[-1].split()[1]
    assert "\x1b[" not in out  # not a terminal: plain lines
    stored = SQLiteStore(tmp_path / "runs.db").read(session_id)
    assert stored[-1].type == "session.end" and stored[-1].data["answer"] == "six"


def test_a_stopped_run_exits_1_with_the_notice(
        recipe: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", recipe, "2 * 3?", "--store", f"sqlite:///{tmp_path / 'r.db'}",
                 "--budget", "steps=1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "result step_budget: (the model gave no answer)" in out
    assert "notice [tether] The run stopped before an answer: step_budget" in out


@pytest.mark.parametrize(("budget", "message"), [
    ("tokens=lots", "tokens must be a number"),
    ("calls=3", "give NAME=VALUE pairs"),
    ("steps=-1", "max_steps"),
])
def test_a_budget_that_cannot_be_read_is_a_usage_error(
        recipe: str, budget: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", recipe, "x", "--budget", budget]) == 2
    assert message in capsys.readouterr().err


def test_a_recipe_that_is_not_there_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{tmp_path / 'nope.py'}:agent", "x"]) == 2
    assert "nope.py" in capsys.readouterr().err


def test_the_readme_run_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    root = Path(__file__).resolve().parents[1]
    (command,) = [line for line in (root / "docs" / "guide" / "agents.md").read_text().splitlines()
                  if line.startswith("tether run ")]
    monkeypatch.chdir(root)
    monkeypatch.setenv("TETHER_STORE", f"sqlite:///{tmp_path / 'readme.db'}")
    assert main(shlex.split(command)[1:]) == 0
    out = capsys.readouterr().out
    assert "result finished: 391" in out and "tool calculator [call_1] ok: 391" in out
