"""A PostgreSQL server of a test's own, to restart and stop under running sessions (the shared
server at 127.0.0.1:5432 is never touched). ``initdb`` and ``pg_ctl`` refuse root, so they run
as the ``postgres`` user, in a temporary directory it owns, on a free loopback port. Outside
CI a machine without them skips; under ``CI=true`` a server that cannot start fails the test."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest


class PrivateServer:
    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
        if not bins or os.geteuid() != 0 or shutil.which("runuser") is None:
            raise RuntimeError("needs root, runuser and /usr/lib/postgresql/*/bin")
        self.bin = bins[-1]
        self.home = tempfile.mkdtemp(prefix="tether-pg-")
        shutil.chown(self.home, "postgres", "postgres")
        self.data = os.path.join(self.home, "data")
        with socket.socket() as probe:  # a free loopback port
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres("initdb", "-D", self.data, "-A", "trust", "-U", "postgres",
                          "--no-sync")

    def _as_postgres(self, program: str, *args: str) -> None:
        done = subprocess.run(["runuser", "-u", "postgres", "--", f"{self.bin}/{program}",
                               *args], capture_output=True, text=True, cwd=self.home)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        """Start it and return once it accepts connections (``pg_ctl -w``)."""
        self._as_postgres("pg_ctl", "-D", self.data, "-l", os.path.join(self.home, "log"), "-w",
                          "-o", f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 "
                          "-c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop it (``fast``: every session is told ``AdminShutdown``, as a restart does)."""
        self._as_postgres("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """``fast`` as maintenance does; ``immediate`` as a crash does (recovery on start)."""
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        try:
            if os.path.exists(os.path.join(self.data, "postmaster.pid")):
                self.stop("immediate")
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def pg_server() -> Iterator[PrivateServer]:
    server = None
    try:
        server = PrivateServer()
        server.start()
    except RuntimeError as exc:
        if server is not None:
            server.remove()
        if os.environ.get("CI") == "true":
            raise  # CI can run it: a failure to start is a failure
        pytest.skip(f"a private PostgreSQL server cannot be started here: {exc}")
    try:
        yield server
    finally:
        server.remove()
