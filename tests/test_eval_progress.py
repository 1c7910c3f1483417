"""``tether eval run`` draws its progress with ``rich.progress`` when stderr is a terminal, and
draws nothing into a pipe (a CI log, a file): no carriage returns, no bar."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SUITE = str(HERE / "evals" / "arith.yaml")
AGENT = f"{HERE / 'eval_app.py'}:make_agent"


def command(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "tether", "eval", "run", SUITE, "--agent", AGENT, "-k", "2",
            "--perturb", "canonical", "--seed", "7", "--store",
            f"sqlite:///{tmp_path / 'evals.db'}", "--out", str(tmp_path / "out")]


def test_no_progress_bar_into_a_pipe(tmp_path: Path) -> None:
    done = subprocess.run(command(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "trials" not in done.stderr, done.stderr
    assert "━" not in done.stderr


def test_a_rich_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    main, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(command(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=child, env=env)
    os.close(child)
    drawn = b""
    try:
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(main)
        assert proc.stdout is not None
        proc.stdout.read()
        proc.stdout.close()
        code = proc.wait(timeout=300)
    text = drawn.decode(errors="replace")
    assert code == 0, text
    assert "━" in text  # rich.progress's bar, not a hand-drawn one
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    trials = len(json.loads((tmp_path / "out" / "report.json").read_text())["trials"])
    assert "trials " in plain and f"{trials}/{trials}" in plain, plain  # all done, M of N
