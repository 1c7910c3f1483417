"""Shared test helpers: small scripted agents used across the suite, the ``store`` fixture
(memory, SQLite, PostgreSQL) every store contract test runs against, the ``local_server`` (a real
model, started once per test session), and the check that no test leaves a process behind."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

from tether import Decision, Effect, ModelResponse, ToolCall
from tether.store.base import Store, StoreError
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore


def call(name: str, args: dict[str, Any] | str, id: str = "") -> ModelResponse:
    """A scripted model turn that calls one tool."""
    return ModelResponse(tool_calls=(ToolCall(id, name, args),))


class TaintWatch:
    """A policy that allows every call and records, per call, whether the session was tainted."""

    inline = True

    def __init__(self) -> None:
        self.tainted: list[bool] = []

    def evaluate(self, subject: Any, action: Any, resource: Any, context: Any) -> Decision:
        self.tainted.append(context.tainted)
        return Decision(Effect.ALLOW, "watched", "watch")


def calls(*pairs: tuple[str, dict[str, Any]]) -> ModelResponse:
    """A scripted model turn that calls several tools."""
    return ModelResponse(tool_calls=tuple(ToolCall("", n, a) for n, a in pairs))


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as GitHub Actions and most CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def unavailable(reason: str) -> NoReturn:
    """A test's prerequisite (a server, a program, an installed extra) is missing: skip it on a
    developer's machine, fail it under CI, which installs everything the suite needs — a test
    skipped there would be a promise nobody checks."""
    if in_ci():
        pytest.fail(f"{reason}; CI (CI=true) must have it, so this fails instead of skipping",
                    pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def import_or_unavailable(name: str, extra: str) -> ModuleType:
    """``pytest.importorskip`` that fails under CI (see ``unavailable``)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        unavailable(f"{name} is not installed: pip install -e '.[{extra}]'")


PG_URL = os.environ.get("TETHER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_store() -> Store:
    """A PostgreSQL store in a schema of its own (skipped only outside CI when unreachable)."""
    from tether.store.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:10]}"
    try:
        return PostgresStore(PG_URL, schema=schema)
    except StoreError as exc:
        unavailable(f"PostgreSQL is not reachable ({exc}); TETHER_TEST_PG names the server")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        made: Store = MemoryStore()
    elif request.param == "sqlite":
        made = SQLiteStore(tmp_path / "t.db")
    else:
        made = postgres_store()
    yield made
    if request.param == "postgres":
        from tether.store.postgres import PostgresStore

        assert isinstance(made, PostgresStore)
        with made._pool.connection() as db:
            db.execute(f"DROP SCHEMA {made.schema} CASCADE")
    made.close()


@pytest.fixture(scope="session")
def local_server() -> Iterator[Any]:
    """llama.cpp's OpenAI-compatible server on SmolLM2-135M (``tether.models.local``), started
    once for the tests that ask for it. Skipped only outside CI when the ``local`` extra is not
    installed; ``make test`` installs it and CI must run it."""
    from tether.models.local import local_model_server

    import_or_unavailable("llama_cpp", "local")
    with local_model_server() as server:
        yield server


# -- no process outlives the tests -------------------------------------------------------------
# Every process the tests start inherits this marker in its environment, detached ones included;
# at the end, any process still carrying it is a leftover: it is killed and the run fails.
RUN_MARKER = f"TETHER_TEST_RUN={uuid.uuid4().hex}"
os.environ["TETHER_TEST_RUN"] = RUN_MARKER.split("=", 1)[1]


def leftover_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if RUN_MARKER.encode() in environ.split(b"\0") and not _ends_with_us(entry):
            found.append(int(entry.name))
    return found


def _ends_with_us(entry: Path) -> bool:
    """multiprocessing's resource tracker: a helper of this process that exits with it."""
    try:
        return b"multiprocessing.resource_tracker" in (entry / "cmdline").read_bytes()
    except OSError:
        return False


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not Path("/proc").is_dir():
        return
    left = {pid: command_of(pid) for pid in leftover_processes()}
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if left:
        print(f"\nthe tests left {len(left)} process(es) behind (killed now): {left}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:100].decode(
            errors="replace")
    except OSError:
        return "?"


def comparable(span: Any) -> tuple[Any, ...]:
    """Everything a collector would see of an OpenTelemetry SDK span (tests of tether.observe)."""
    return (span.name, span.context.trace_id, span.context.span_id,
            span.parent.span_id if span.parent else None, span.kind, span.start_time,
            span.end_time, json.dumps(dict(span.attributes or {}), sort_keys=True, default=str),
            span.status.status_code, span.status.description,
            tuple((link.context.trace_id, link.context.span_id) for link in span.links),
            tuple((e.name, e.timestamp, json.dumps(dict(e.attributes or {}), sort_keys=True))
                  for e in span.events))
