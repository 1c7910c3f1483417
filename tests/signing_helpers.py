"""Helpers for the signing tests: an operator key and a witness key, a witness served on
loopback, and a verify run in a subprocess whose environment holds no secret at all."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tether.journal.note import COSIGNATURE_V1, generate, read_private, read_public, write_pair
from tether.serve.witness import Witness, serve

SRC = Path(__file__).resolve().parent.parent / "src"


@dataclass(frozen=True)
class Keys:
    operator: Path  # stem: .key and .pub
    witness: Path

    @property
    def operator_key(self) -> str:
        return f"{self.operator}.key"

    @property
    def operator_pub(self) -> str:
        return f"{self.operator}.pub"

    @property
    def witness_pub(self) -> str:
        return f"{self.witness}.pub"


def make_keys(folder: Path) -> Keys:
    write_pair(generate("example.com/tether/prod"), folder / "operator")
    write_pair(generate("witness.example/w1", COSIGNATURE_V1), folder / "witness")
    return Keys(folder / "operator", folder / "witness")


@contextmanager
def witness_thread(keys: Keys, state: Path) -> Iterator[str]:
    """A witness served on loopback from a thread of this process; yields its URL."""
    server = serve(Witness(read_private(f"{keys.witness}.key"), read_public(keys.operator_pub),
                           state), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def clean_env() -> dict[str, str]:
    """PATH and the source: no audit key, no signing key, no store URL, nothing secret."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(SRC),
            "HOME": os.environ.get("HOME", "/tmp")}


def verify_outside(*args: str) -> tuple[int, str]:
    """``tether audit verify ARGS`` in a fresh process with ``clean_env``."""
    env = clean_env()
    assert not any(name.startswith("TETHER_") for name in env)
    done = subprocess.run([sys.executable, "-m", "tether", "audit", "verify", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr
