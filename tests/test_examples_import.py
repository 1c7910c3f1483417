"""Importing an example only defines things: no run, no output, no file or store, no environment.

Why: ``tether run examples/quickstart.py:agent`` imports the file to find ``agent``; an example
that runs its demo at import prints a second run (and its journal) before the one asked for,
and one that reads ``$TETHER_STORE`` at import pins its recipe to whatever store that shell
had, so a command printed for a new shell names a store the recipe then refuses. Each example is
imported in a fresh interpreter (as the CLI imports it: under its own name, its folder on the
import path), from an empty directory, with ``TETHER_STORE`` naming a store in it; the import
must print nothing, create nothing there, and read no environment variable from the example's
own code (the libraries it imports may read theirs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

PROBE = """
import importlib.util, json, os, sys
path = sys.argv[1]
read = []

class Recording(type(os.environ)):
    def __getitem__(self, key):
        frame = sys._getframe(1)
        for _ in range(4):  # os.environ.get -> Mapping.get -> __getitem__
            if frame is None:
                break
            if frame.f_code.co_filename == path:
                read.append(key)
                break
            frame = frame.f_back
        return super().__getitem__(key)

os.environ.__class__ = Recording
sys.path.insert(0, os.path.dirname(path))
spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
module = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(module)
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("tether"):
        sys.__stdout__.write("SKIP " + str(exc.name))
        raise SystemExit(0)
    raise
sys.stderr.write("\\nREAD " + json.dumps(read))
"""


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_importing_an_example_only_defines_things(example: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["TETHER_STORE"] = f"sqlite:///{tmp_path / 'store.db'}"
    done = subprocess.run([sys.executable, "-c", PROBE, str(example)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    if done.stdout.startswith("SKIP "):
        pytest.skip(f"{example.name} needs {done.stdout[5:]}, not installed")
    assert done.returncode == 0, done.stderr
    said, _, read = done.stderr.rpartition("\nREAD ")
    assert (done.stdout, said) == ("", ""), f"importing {example.name} printed something"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], f"importing {example.name} made files"
    assert json.loads(read) == [], f"importing {example.name} read the environment"
