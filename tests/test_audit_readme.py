"""The guide's "Durable sessions, audit and the CLI" section runs as written: its Python block,
and its shell commands in order (with the real session and approval ids for the placeholders)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from doc_pages import section as doc_section

ROOT = Path(__file__).resolve().parents[1]


def section() -> str:
    return doc_section("docs/guide/journal.md", "Durable sessions, audit and the CLI")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def commands() -> list[str]:
    lines = "\n".join(blocks("bash")).replace("\\\n", " ").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_python_block_runs(tmp_path: Path) -> None:
    (block,) = blocks("python")
    assert "`PYTHONPATH=examples python`" in section()  # what the text tells the reader to do
    path = os.pathsep.join(["examples", *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "TETHER_STORE": f"sqlite:///{tmp_path / 'py.db'}", "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-c", block], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["needs_approval", "Paid INV-1 and INV-2 for order A1."]


def test_the_shell_commands_run_in_order(tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_STORE": f"sqlite:///{tmp_path / 'billing.db'}"}
    ids: dict[str, str] = {}
    seen = []
    for command in commands():
        argv = shlex.split(command, comments=True)
        if argv[0] == "export":
            assert argv[1].startswith("TETHER_STORE=")  # replaced by a store in tmp_path
            continue
        argv = [{"5c1f...": ids.get("session", "?"), "apr_9b2e...": ids.get("approval", "?"),
                 "audit.jsonl": str(tmp_path / "audit.jsonl")}.get(a, a) for a in argv]
        exe = [sys.executable] if argv[0] == "python" else [sys.executable, "-m", "tether"]
        done = subprocess.run([*exe, *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)
        seen.append(argv[1])
        out = done.stdout
        if argv[0] == "python":
            found = re.search(r"session (\w+): needs_approval", out)
            assert found, out
            ids["session"] = found[1]
        elif argv[1:3] == ["approvals", "list"]:
            ids["approval"] = out.split()[0]
        if argv[1] == "settle":  # the README says: only after a crash mid-effect
            assert done.returncode == 1 and "nothing to settle" in done.stderr
        elif argv[1] == "what-if":
            assert done.returncode == 1, done.stderr
            assert ("require_approval (billing:big-payments-need-approval) -> deny "
                    "(billing-strict:payments-frozen-over-30)") in out
            assert out.endswith("2 of 3 decisions in 1 session would change under "
                                "examples/policies/billing_strict.yaml\n")
        else:
            assert done.returncode == 0, (command, done.stderr)
        if argv[1] == "resume":
            assert out.startswith("stop reason: finished")
        if argv[1:3] == ["audit", "trust"]:  # nothing planted in the billing desk's world
            assert out == "no tool result carried a canary\n"
        if argv[1:3] == ["store", "prune"]:
            assert out.startswith(("would prune 0 sessions", "pruned 0 sessions"))
            assert out.endswith("1 kept\n") or "--dry-run" in argv
        if argv[1:3] == ["store", "purge"]:  # SQLite, nobody else reading: nothing left
            assert out.startswith("purged sqlite:///") and "not reached" not in out
    assert seen == ["examples/billing_desk.py", "approvals", "approvals", "resume", "settle",
                    "audit", "audit", "audit", "audit", "audit", "audit", "audit", "what-if",
                    "store", "store", "store"]
