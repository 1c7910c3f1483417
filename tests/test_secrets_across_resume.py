"""A broker secret issued and a card number masked before an approval pause stay hidden after
the session is resumed by another recipe object in another interpreter — as ``tether resume``
and every fleet worker do: in no event, not in what the model is sent, not in spans with
content on, on SQLite and PostgreSQL, through the API and through the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import secret_resume_app as app
from audit_helpers import store_url
from tether.integrations.governed import GovernedRun
from tether.journal.chain import verify_chain
from tether.journal.views.spans import derive_spans
from tether.store.opening import open_store
from tether.store.sqlite import SQLiteStore
from tether.types import Event

APP = app.__file__


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode in (0, 1), done.stderr
    return done


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_url(request.param, tmp_path) as made:
        yield made


def _stored(url: str, sid: str) -> list[Event]:
    store = open_store(url)
    try:
        events = store.read(sid)
    finally:
        store.close()
    assert verify_chain(events) is None
    return events


def _leaks(text: str, card: bool = True) -> list[str]:
    found = [f"secret form {form[:10]}..." for form in app.FORMS if form in text]
    return [*found, "the card"] if card and app.CARD in text else found


def _after_the_mask(events: list[Event]) -> list[Event]:
    """The events from the step whose decision masked the card on: the user wrote the card in
    the task, so the session's start and first request hold it, as they do in one process."""
    masked = next(e.seq for e in events if e.type in ("model.response", "tool.decision")
                  and "charge_card" in json.dumps(e.data))
    return [e for e in events if e.seq >= masked]


def _nowhere_after_the_mask(events: list[Event]) -> None:
    for event in events:
        leaks = _leaks(json.dumps(event.data), card=event in _after_the_mask(events))
        assert leaks == [], f"{event.type} (seq {event.seq})"


def _check(events: list[Event], sent: Path) -> None:
    types = [e.type for e in events]
    assert "session.resumed" in types and types[-1] == "session.end"
    assert events[-1].data["reason"] == "finished"
    dumped = next(e for e in events if e.type == "tool.result" and e.data["tool"] == "debug_dump")
    assert "[secret redacted]" in dumped.data["content"] and "[masked]" in dumped.data["content"]
    _nowhere_after_the_mask(events)
    for span in derive_spans(_after_the_mask(events), content=True):
        assert _leaks(json.dumps(span.attributes, default=str)) == [], span.name
    requests = sent.read_text().splitlines()
    assert len(requests) == 2  # after the approval: the dump, then the answer
    for request in requests:  # the card was the user's own, in the task: only the secret
        assert _leaks(request, card=False) == [], "what the model was sent"


def test_a_second_process_resuming_keeps_secret_and_masked_value_hidden(
        url: str, tmp_path: Path) -> None:
    sid, reason = _run(APP, "run", url).stdout.split()
    assert reason == "needs_approval"
    before = _stored(url, sid)
    assert any(e.type == "credential.issued" for e in before)
    _run(APP, "approve", url)
    sent = tmp_path / "sent.jsonl"
    resumed = _run(APP, "resume", url, sid, str(sent))
    assert resumed.stdout.strip() == "finished", resumed.stderr
    _check(_stored(url, sid), sent)


def test_through_the_cli_run_approve_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    recipe = f"{APP}:agent"
    ran = _run("-m", "tether", "run", recipe, app.TASK, "--store", url)
    assert "needs_approval" in ran.stdout + ran.stderr
    listed = _run("-m", "tether", "approvals", "list", "--store", url).stdout
    (approval,) = set(re.findall(r"apr_\w+", listed))
    _run("-m", "tether", "approvals", "approve", approval, "--approver", "maria",
         "--unauthenticated",
         "--store", url)
    store = open_store(url)
    try:
        (sid,) = [s.session_id for s in store.sessions()]
    finally:
        store.close()
    resumed = _run("-m", "tether", "resume", sid, "--agent", recipe, "--store", url)
    assert "finished" in resumed.stdout, resumed.stderr
    for text in (resumed.stdout, resumed.stderr):  # the answer is the user's: only the secret
        assert _leaks(text, card=False) == [], "the CLI's output"
    events = _stored(url, sid)
    assert events[-1].data["reason"] == "finished"
    _nowhere_after_the_mask(events)


def test_a_foreign_frameworks_run_continued_in_another_process_keeps_them_hidden(
        tmp_path: Path) -> None:
    """The adapters' door (``GovernedRun(resume=...)``) loads a stored run as a session does."""
    path = tmp_path / "run.db"

    def door(resume: str | None = None) -> GovernedRun:
        recipe = app.build()  # each process builds its own tools and broker
        return GovernedRun(list(recipe.tools), policy=app.CardPolicy(), request=app.TASK,
                           store=SQLiteStore(path), credentials=recipe.credentials,
                           framework="foreign", resume=resume)

    async def body(arguments: dict[str, object]) -> str:
        raise AssertionError("tether's own tools run themselves")

    async def first() -> str:
        run = door()
        await run.call("c1", "fetch_invoice", {"invoice": "I-1"}, body)
        await run.call("c2", "charge_card", {"card": app.CARD, "amount": 5}, body)
        waiting = await run.call("c3", "pay", {"to": "acme"}, body)
        assert waiting.approval_id is not None
        return run.id

    sid = asyncio.run(first())
    later = door(resume=sid)
    dumped = asyncio.run(later.call("c4", "debug_dump", {}, body)).result
    assert _leaks(dumped.content, card=False) == []
    later.close(f"the key was {app.SECRET} and the card {app.CARD}")
    events = SQLiteStore(path).read(sid)
    assert verify_chain(events) is None and events[-1].type == "session.end"
    assert "session.resumed" in [e.type for e in events]
    _nowhere_after_the_mask(events)
