"""What `make test` needs beyond Python, checked before anything is installed or run.

A missing prerequisite used to surface twenty minutes in, as `make: npm: Error 127` or a cmake
trace from llama-cpp-python's source build. This script runs first and says, in one line per
missing thing, what is missing, what needs it and how to get it. It uses the standard library
only, since it runs with the system's Python before the virtual environment exists.

Usage: ``python3 scripts/prerequisites.py [--build-local]`` — ``--build-local`` adds what
compiling the local model needs (cmake, a C and a C++ compiler), asked only while that build is
still to come.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from urllib.parse import urlsplit

NODE_MAJOR = 20
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def node() -> str | None:
    """Node.js and npm, for the reference MCP servers and the conformance suite."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return (f"Node.js {NODE_MAJOR} or later with npm is not on PATH (the MCP servers the tests "
                "run against); install both (Debian: sudo apt-get install nodejs npm)")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    major = int(version.strip().lstrip("v").split(".")[0] or 0)
    if major < NODE_MAJOR:
        return f"Node.js {version.strip()} is too old: the MCP tests need {NODE_MAJOR} or later"
    return None


def postgres() -> str | None:
    """A PostgreSQL server, which the store and fleet tests use for real."""
    url = os.environ.get("TETHER_TEST_PG", PG_DEFAULT)
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        return (f"PostgreSQL is not reachable at {host}:{port} ({exc.strerror or exc}): start "
                "one with trust auth and a database 'test', or set TETHER_TEST_PG to its URL")
    return None


def compilers() -> str | None:
    """What llama-cpp-python's source build needs (the local model of the real-model tests)."""
    missing = [name for name, options in (("cmake", ("cmake",)), ("a C compiler", ("cc", "gcc")),
                                          ("a C++ compiler", ("c++", "g++")))
               if not any(shutil.which(o) for o in options)]
    if missing:
        return (f"{' and '.join(missing)} not found: the local model (llama-cpp-python) is built "
                "from source; install them (Debian: sudo apt-get install cmake build-essential)")
    return None


def main(argv: list[str]) -> int:
    checks = [node, postgres] + ([compilers] if "--build-local" in argv else [])
    problems = [p for p in (check() for check in checks) if p]
    for problem in problems:
        print(f"make test: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
