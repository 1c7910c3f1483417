"""What the CLI tells a person when something is off says the cause and the command to type."""

from __future__ import annotations

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
