"""The guide's evaluation section: its example prints what the README shows, and its command
lines are ones the CLI accepts."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from doc_pages import section as doc_section
from tether.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def section() -> str:
    return doc_section("docs/guide/evaluations.md", "Evaluating reliability (pass^k)")


def test_the_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    shown = re.findall(r"```text\n(.*?)```", section(), re.S)[0].rstrip("\n").splitlines()
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "evaluate.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[:len(shown)] == shown
    assert (tmp_path / "eval.html").read_text().startswith("<!doctype html>")
    block = re.findall(r"```python\n(.*?)```", section(), re.S)[0]
    run = block[block.index("report = evaluate("):].strip()
    example = (ROOT / "examples" / "evaluate.py").read_text()
    assert " ".join(run.split()) in " ".join(example.split())  # what the guide shows runs (in
    # the example's main(): indented, so only the words and their order are compared)


def test_the_command_lines_parse() -> None:
    block = re.findall(r"```bash\n(.*?)```", section(), re.S)[0].replace("\\\n", " ")
    parser = build_parser()
    for line in block.splitlines():
        command = shlex.split(line.split("  #", 1)[0])
        if "..." in command:
            continue
        parser.parse_args(command[1:])  # exits (fails the test) on an unknown option
