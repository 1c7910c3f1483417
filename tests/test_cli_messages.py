"""What the CLI tells a person when something is off says the cause and the command to type."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tether.cli import main
from tether.store.sqlite import SQLiteStore

OWN_STORE_RECIPE = '''
from tether import Agent, ReAct, ScriptedModel
from tether.store.sqlite import SQLiteStore

def agent():
    return Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), tools=[],
                 store=SQLiteStore({path!r}))
'''


def test_run_refuses_a_store_flag_the_recipe_would_not_use(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own, other = tmp_path / "own.db", tmp_path / "other.db"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(OWN_STORE_RECIPE.format(path=str(own)))
    code = main(["run", f"{recipe}:agent", "a task", "--store", f"sqlite:///{other}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"sqlite:///{other}" in err and "own store" in err and "drop --store" in err
    assert not other.exists()  # nothing was written where the flag pointed ...
    assert not SQLiteStore(own).sessions()  # ... nor anywhere else: the run did not start
    # the same store named by the flag is no conflict
    assert main(["run", f"{recipe}:agent", "a task", "--store", f"sqlite:///{own}"]) == 0
    assert len(SQLiteStore(own).sessions()) == 1


APPROVAL_RECIPE = '''
from tether import Agent, Decision, Effect, ReAct, ScriptedModel, ToolCall, ModelResponse
from tether.tools import Calculator


class AskFirst:
    def evaluate(self, subject, action, resource, context):
        return Decision(Effect.REQUIRE_APPROVAL, "a person checks sums", "ask-first")


def agent():
    script = [ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "2 * 3"}),)),
              "six"]
    return Agent(model=ScriptedModel(script), reasoning=ReAct(), tools=[Calculator()],
                 policy=AskFirst())
'''


def test_a_run_paused_for_approval_prints_the_commands_that_continue_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "recipe.py"
    recipe.write_text(APPROVAL_RECIPE)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    assert main(["run", f"{recipe}:agent", "2 * 3?", "--store", store]) == 1
    out = capsys.readouterr().out
    lines = [line.split(None, 1)[1] for line in out.splitlines() if line.split()[0] == "next"]
    session_id = SQLiteStore(tmp_path / "runs.db").sessions()[0].session_id
    [request] = SQLiteStore(tmp_path / "runs.db").list_approvals(status="pending")
    request_id = request["id"]
    assert lines == [f"tether approvals approve {request_id} --store {store}",
                     f"tether approvals deny {request_id} --store {store}",
                     f"tether resume {session_id} --agent {recipe}:agent --store {store}"]
    # and they work as printed: approve, then resume runs the call and finishes
    approve = lines[0].replace("NAME", "maria").split()[1:]
    assert main(approve) == 0
    assert main(lines[2].split()[1:]) == 0
    assert "stop reason: finished" in capsys.readouterr().out


TOKEN_RECIPE = '''
from tether import Agent, ReAct, ScriptedModel, ToolCall, ModelResponse
from tether.tools import Calculator

def agent():
    call = ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "6 / 3"}),))
    return Agent(model=ScriptedModel([call, call, "two"]), reasoning=ReAct(),
                 tools=[Calculator()])
'''


@pytest.mark.parametrize("tokens", [150, 400])
def test_a_token_budget_stop_agrees_with_the_live_spend_line(
        tokens: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "recipe.py"
    recipe.write_text(TOKEN_RECIPE)
    code = main(["run", f"{recipe}:agent", "what is 6 / 3, and then what is it again?",
                 "--store", "memory://", "--budget", f"tokens={tokens}"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "result token_budget" in out
    spend = [line for line in out.splitlines() if line.split()[0] == "spend"]
    used = int(re.search(rf"tokens (\d+) of {tokens}", spend[-1])[1])  # type: ignore[index]
    [notice] = [line for line in out.splitlines() if line.split()[0] == "notice"]
    said = {int(n) for n in re.findall(rf"(\d+) of {tokens}", notice)}
    assert said == {used}, (notice, spend[-1])


def test_the_commands_name_the_recipes_own_store_when_no_flag_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "own.db"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(APPROVAL_RECIPE.replace(
        "policy=AskFirst())", f"policy=AskFirst(), store={f'sqlite:///{own}'!r})"))
    assert main(["run", f"{recipe}:agent", "2 * 3?"]) == 1
    lines = [line.split(None, 1)[1] for line in capsys.readouterr().out.splitlines()
             if line.split()[0] == "next"]
    assert len(lines) == 3 and all(line.endswith(f"--store sqlite:///{own}") for line in lines)
    assert main(lines[0].replace("NAME", "maria").split()[1:]) == 0  # found where it waits


def test_a_resume_that_pauses_again_prints_commands_for_the_recipes_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "own.db"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(APPROVAL_RECIPE.replace(
        "policy=AskFirst())", f"policy=AskFirst(), store={f'sqlite:///{own}'!r})"))
    assert main(["run", f"{recipe}:agent", "2 * 3?"]) == 1
    capsys.readouterr()
    session_id = SQLiteStore(own).sessions()[0].session_id
    assert main(["resume", session_id, "--agent", f"{recipe}:agent"]) == 0  # still waiting
    lines = [line.removeprefix("next: ") for line in capsys.readouterr().out.splitlines()
             if line.startswith("next: ")]
    [request] = SQLiteStore(own).list_approvals(status="pending")
    assert lines[0] == (f"tether approvals approve {request['id']} "
                        f"--store sqlite:///{own}")
    assert lines[-1] == f"tether resume {session_id} --agent {recipe}:agent --store sqlite:///{own}"
    assert main(lines[0].replace("NAME", "maria").split()[1:]) == 0
    assert main(lines[-1].split()[1:]) == 0
    assert "stop reason: finished" in capsys.readouterr().out
