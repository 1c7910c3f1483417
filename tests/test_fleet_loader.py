"""The fleet finds a recipe as ``tether run`` does: a package in the project directory, by name.

``tether`` (the console script) does not put the current directory on the import path, and the
fleet once imported ``--agent myapp.agents:build`` on its own, without it: ``tether run`` found
the recipe from the project directory and ``tether fleet`` did not, saying only "No module named
'myapp'". Here a project directory holds a package ``myapp/agents.py`` and nothing sets
PYTHONPATH to it; each command runs with ``python -P`` (as the console script runs: the current
directory not on the path) from that directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

ROOT = Path(__file__).resolve().parents[1]
AGENTS = """
from tether import Agent, ReAct, ScriptedModel


def build() -> Agent:
    return Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), name="myapp",
                 store="sqlite:///journal.db")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "agents.py").write_text(AGENTS)
    return tmp_path


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("TETHER_")},
            "PYTHONPATH": str(ROOT / "src")}  # tether's source, not the project


def tether(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "tether", *argv], cwd=project, env=env(),
                          capture_output=True, text=True, timeout=180)


def test_fleet_enqueue_and_status_find_a_package_in_the_project_directory(
        project: Path) -> None:
    where = ["--agent", "myapp.agents:build", "--db", "sqlite:///dbos.db"]
    queued = tether(project, "fleet", "enqueue", "do it", *where)
    assert queued.returncode == 0, queued.stderr
    session = queued.stdout.strip()
    status = tether(project, "fleet", "status", *where)
    assert status.returncode == 0, status.stderr
    assert status.stdout.split() == [session, "queued"]


def test_a_recipe_that_is_not_there_says_what_was_tried_and_what_to_do(project: Path) -> None:
    failed = tether(project, "fleet", "status", "--agent", "myap.agents:build", "--db",
                    "sqlite:///dbos.db")
    assert failed.returncode == 2
    assert "no module 'myap' on the import path" in failed.stderr
    assert f"run from {project}" in failed.stderr  # where it looked
    assert "path/to/file.py:ATTRIBUTE" in failed.stderr  # what else to do
    by_file = tether(project, "fleet", "status", "--agent", "myapp/agents.py:build", "--db",
                     "sqlite:///dbos.db")
    assert by_file.returncode == 0, by_file.stderr


def test_the_worker_module_finds_a_package_in_the_project_directory(project: Path) -> None:
    worker = subprocess.Popen([sys.executable, "-P", "-m", "tether.durable.worker", "--agent",
                               "myapp.agents:build", "--db", "sqlite:///dbos.db",
                               "--executor-id", "w1", "--poll", "0.1"],
                              cwd=project, env=env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert worker.stdout is not None and worker.stderr is not None
    try:
        first = worker.stdout.readline()  # blocks until it serves, or it exits
        assert first.strip() == "ready w1", worker.stderr.read()
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert worker.returncode == 0
