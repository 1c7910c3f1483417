"""The commands tether prints for what to do next work pasted into a new shell.

A paused run prints ``next`` lines (approve, resume); ``tether approvals approve`` prints how to
resume; the billing desk example prints its own. Each is run here as printed, in a fresh process
with no ``TETHER_*`` variable (a new shell), from the same directory: it must name the recipe
and the store itself, and do what it says.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "Pay the open invoices of order A1"
RECIPE = "examples/billing_desk.py:agent"


def shell(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = [sys.executable] if argv[0] == "python" else [sys.executable, "-m", "tether"]
    return subprocess.run([*exe, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def new_shell() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}


def pasted(line: str) -> list[str]:
    """A printed command as a person would paste it, with NAME filled in."""
    return ["maria" if a == "NAME" else a for a in shlex.split(line)]


def follow(printed: str, store: str) -> None:
    """Approve, then resume, as the printed lines say, each in a new shell."""
    nexts = re.findall(r"next:? +(tether .*)", printed)
    approve = next(line for line in nexts if " approvals approve " in line)
    assert f"--store {store}" in approve and "--store" in nexts[-1]
    decided = shell(pasted(approve), new_shell())
    assert decided.returncode == 0, decided.stderr
    said = re.search(r"resume the session to run the call: (tether resume .*)", decided.stdout)
    assert said, decided.stdout
    assert said[1].endswith(f"--agent {RECIPE} --store {store}")  # the recipe, not MODULE:ATTR
    resumed = shell(pasted(said[1]), new_shell())
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("stop reason: finished"), resumed.stdout


def test_a_paused_runs_next_lines_work_in_a_new_shell(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'billing.db'}"
    ran = shell(["tether", "run", RECIPE, TASK, "--tenant", "acme"],
                {**new_shell(), "TETHER_STORE": store})  # the run's shell had it exported
    assert ran.returncode == 1 and "result needs_approval" in ran.stdout, ran.stderr
    follow(ran.stdout, store)
    shown = re.search(r"\((tether audit show \w+ --store \S+)\)", ran.stdout)
    assert shown, ran.stdout
    audit = shell(shlex.split(shown[1]), new_shell())
    assert audit.returncode == 0 and "status: ended (finished)" in audit.stdout, audit.stderr


def test_the_resume_line_a_run_prints_continues_it_in_a_new_shell(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'billing.db'}"
    ran = shell(["tether", "run", RECIPE, TASK], {**new_shell(), "TETHER_STORE": store})
    resume = next(line for line in re.findall(r"next (tether .*)", ran.stdout)
                  if " resume " in line)
    again = shell(pasted(resume), new_shell())  # not decided yet: it pauses again, and says so
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("stop reason: needs_approval")
    assert f"--agent {RECIPE} --store {store}" in again.stdout


def test_the_billing_desks_own_next_lines_work_in_a_new_shell(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'desk.db'}"
    ran = shell(["python", "examples/billing_desk.py"], {**new_shell(), "TETHER_STORE": store})
    assert ran.returncode == 0 and ": needs_approval" in ran.stdout, ran.stderr
    nexts = re.findall(r"next: (tether .*)", ran.stdout)
    assert [n.split()[1] for n in nexts] == ["approvals", "resume"]
    assert shell(pasted(nexts[0]), new_shell()).returncode == 0
    resumed = shell(pasted(nexts[1]), new_shell())
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("stop reason: finished"), resumed.stdout


def test_approving_a_session_not_started_by_tether_run_says_what_to_fill_in(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'desk.db'}"
    ran = shell(["python", "examples/billing_desk.py"], {**new_shell(), "TETHER_STORE": store})
    approval = re.search(r"waiting: (apr_\w+)", ran.stdout)
    assert approval, ran.stdout
    decided = shell(["tether", "approvals", "approve", approval[1], "--approver", "maria",
                     "--unauthenticated",
                     "--store", store], new_shell())
    assert decided.returncode == 0, decided.stderr
    assert f"--agent MODULE:ATTR --store {store} (MODULE:ATTR: the recipe" in decided.stdout
