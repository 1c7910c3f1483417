"""A subscriber that raises never breaks the run: whatever it raises (an exception whose text
cannot even be read included), on whichever event (its own error events too), sync or async,
with a durable store; the run ends as it would have, the other
subscribers see every event, and the failure is journaled."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, ReAct, ScriptedModel, StopReason, tool
from tether.store.opening import open_store
from tether.types import Event


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


class Unreadable(Exception):
    def __str__(self) -> str:
        raise ValueError("this exception's text cannot be read")


def _raising(kind: str) -> Any:
    def subscriber(event: Event) -> None:
        if kind == "plain":
            raise RuntimeError(f"subscriber bug at {event.type}")
        if kind == "unreadable":
            raise Unreadable()
        if kind == "lookup":
            {}["missing"]  # a KeyError, as a careless subscriber raises it

    return subscriber


class Unnamed:
    """A callable subscriber whose repr raises, and which raises."""

    def __repr__(self) -> str:
        raise ValueError("no repr either")

    def __call__(self, event: Event) -> None:
        raise Unreadable()


def _agent(store: str | None = None) -> Agent:
    model = ScriptedModel.tool_then_answer("add", {"a": 17, "b": 23}, "40")
    return Agent(model=model, reasoning=ReAct(), tools=[add], store=store)


@pytest.mark.parametrize("kind", ["plain", "unreadable", "lookup"])
@pytest.mark.parametrize("mode", ["sync", "async", "stored"])
def test_a_raising_subscriber_never_breaks_the_run(kind: str, mode: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'j.db'}" if mode == "stored" else None
    session = _agent(url).session("add 17 and 23")
    seen: list[int] = []
    session.events.subscribe(_raising(kind))
    session.events.subscribe(Unnamed())
    session.events.subscribe(lambda e: seen.append(e.seq))
    result = asyncio.run(session.arun()) if mode == "async" else session.run()
    assert result.stop_reason is StopReason.FINISHED and result.answer == "40"
    events = session.replay()
    assert seen == [e.seq for e in events]  # every event reached the other subscriber
    errors = [e for e in events if e.type == "subscriber.error"]
    assert errors and {e.data["subscriber"] for e in errors} == {
        "_raising.<locals>.subscriber", "Unnamed (its text could not be read)"}
    if kind == "unreadable":
        assert errors[0].data["error"] == "Unreadable (its text could not be read)"
    assert [e.type for e in events].count("session.end") == 1
    assert session.verify() is None
    if url is not None:
        store = open_store(url)
        try:
            assert [e.hash for e in store.read(session.id)] == [e.hash for e in events]
        finally:
            store.close()


def test_a_subscriber_that_unsubscribes_itself_or_subscribes_another_midway() -> None:
    session = _agent().session("add")
    later: list[str] = []
    first: list[str] = []

    def once(event: Event) -> None:
        first.append(event.type)
        stop()
        session.events.subscribe(lambda e: later.append(e.type))
        raise RuntimeError("and then fails")

    stop = session.events.subscribe(once)
    assert session.run().stop_reason is StopReason.FINISHED
    assert first == ["session.start"] and "session.end" in later
