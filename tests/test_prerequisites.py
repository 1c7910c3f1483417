"""`make test` says what is missing before it starts: one line per missing prerequisite, naming
what needs it and how to get it, instead of `Error 127` twenty minutes in."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from doc_pages import ROOT

SCRIPT = ROOT / "scripts" / "prerequisites.py"


def bin_with(tmp_path: Path, *names: str) -> str:
    """A PATH holding only ``names`` (symlinks to the real programs) and this Python."""
    where = tmp_path / "bin"
    where.mkdir()
    for name in names:
        found = shutil.which(name)
        assert found, f"this machine lacks {name}, which the test copies into its PATH"
        (where / name).symlink_to(found)
    (where / "python3").symlink_to(sys.executable)
    return str(where)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nobody listens


def check(path: str, *args: str, pg: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, **({"TETHER_TEST_PG": pg} if pg else {})}
    if pg is None and "TETHER_TEST_PG" in os.environ:
        env["TETHER_TEST_PG"] = os.environ["TETHER_TEST_PG"]
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_all_present_passes_silently(tmp_path: Path) -> None:
    done = check(bin_with(tmp_path, "node", "npm", "cmake", "cc", "c++"), "--build-local")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_each_missing_prerequisite_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    done = check(bin_with(tmp_path, "cc"), "--build-local",
                 pg=f"postgresql://postgres@127.0.0.1:{closed_port()}/test")
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 3, done.stderr
    node, pg, build = lines
    assert "Node.js 20 or later with npm is not on PATH" in node and "apt-get install" in node
    assert "PostgreSQL is not reachable" in pg and "TETHER_TEST_PG" in pg
    assert "cmake and a C++ compiler not found" in build and "llama-cpp-python" in build
    assert all(line.startswith("make test: ") for line in lines)


def test_the_compilers_are_asked_for_only_while_the_local_build_is_to_come(tmp_path: Path) -> None:
    assert check(bin_with(tmp_path, "node", "npm")).returncode == 0


def test_make_test_checks_them_before_it_installs_anything(tmp_path: Path) -> None:
    path = bin_with(tmp_path, "make", "sh", "cc")
    # -B: as on a fresh machine, whatever this checkout has installed already
    done = subprocess.run(["make", "-s", "-n", "-B", "test"], cwd=ROOT, env={"PATH": path},
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    first_install = next(i for i, line in enumerate(lines) if "pip install" in line)
    for check in ("scripts/prerequisites.py", "/usr/bin/chromium is missing"):
        assert any(check in line for line in lines[:first_install]), (check, done.stdout[:1500])
    done = subprocess.run(["make", "-s", "prereqs"], cwd=ROOT, env={"PATH": path},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Node.js 20 or later with npm is not on PATH" in done.stderr
