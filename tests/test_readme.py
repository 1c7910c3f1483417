"""The README's tour and the example it names run as written: its shell commands in order against
one store, each exiting 0 with what its comment says (its Python block runs as pasted in
tests/test_doc_blocks.py, which checks it prints `391 finished 278`)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from doc_pages import ROOT, blocks


def test_readme_tour_commands_run_in_order(tmp_path: Path) -> None:
    (script,) = blocks("README.md", "A 30-line tour", "bash")
    env = {**os.environ, "TETHER_STORE": f"sqlite:///{tmp_path / 'tour.db'}"}
    outputs = []
    for line in script.splitlines():
        argv = shlex.split(line, comments=True)
        assert argv[0] == "tether", line
        done = subprocess.run([sys.executable, "-m", "tether", *argv[1:]], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs.append(done.stdout)
    run, listed, verified = outputs
    assert "result finished: 391" in run
    session = run.split("session ", 1)[1].split()[0].rstrip(".")
    assert session[:8] in listed and " ended " in listed and "1 session" in listed
    assert "ok" in verified


def test_quickstart_example_runs() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                         capture_output=True, text=True, check=True).stdout
    assert "answer:      391" in out and "stop reason: finished" in out
    assert "chain intact: True" in out
