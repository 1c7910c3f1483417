"""Live updates: server-sent events that say "something changed", read from the store.

Why: a running session's timeline, the inbox and the session list should move while one watches
— also when another process (the agent's own, a CLI approving elsewhere) writes the store, so
the console cannot wait for an in-process signal: each stream polls the store every
``Console.poll`` seconds and tells the page what changed; the page fetches the fragment it needs
(``static/live.js``). The events carry seqs, types and counts only, never content: content
reaches a page only through a page's own rendering, scoped and masked there.

Decision: a stream is tenant-scoped like every page (another tenant's session is 404, word for
word as a session that does not exist). It ends when the client goes (Starlette cancels it on
disconnect) and when the console stops: ``Streams.stop()`` (the command calls it on Ctrl-C) ends
every stream at its next poll, so the server's shutdown never waits on an open page. ``Streams``
counts the open ones, so a test can wait for them to end.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Hashable
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tether.errors import InvalidArgument
from tether.runtime.approvals.deciding import pending
from tether.runtime.approvals.identity import Identity
from tether.store.base import Store
from tether.store.paging import decode_cursor, page_sessions
from tether.web._access import visible as can_see
from tether.web.pages import console, identity
from tether.web.sessions import PAGE, listing

HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


class Streams:
    """The open live streams of one app: how many, and whether the console is stopping."""

    def __init__(self) -> None:
        self._open = 0
        self._stopping = threading.Event()
        self._changed = threading.Condition()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def open(self) -> int:
        with self._changed:
            return self._open

    def stop(self) -> None:
        """Ends every stream at its next poll, and refuses new ones."""
        self._stopping.set()

    def wait(self, count: int, timeout: float) -> bool:
        """Whether the number of open streams became ``count`` within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._open == count, timeout)

    def moved(self, by: int) -> None:
        """A stream opened (+1) or ended (-1)."""
        with self._changed:
            self._open += by
            self._changed.notify_all()


def streams(request: Request) -> Streams:
    value: Streams = request.app.state.streams
    return value


def visible(store: Store, viewer: Identity, session_id: str) -> bool:
    """Whether ``session_id`` exists and belongs to the viewer's tenant (every one's for an
    operator of all tenants)."""
    return can_see(viewer, store.read(session_id)[:1])  # the first event names the tenant


def message(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream(request: Request, step: Callable[[], list[bytes]]) -> Response:
    """A server-sent event stream that sends what ``step`` (run in a thread every poll) finds."""
    live = streams(request)
    if live.stopping:
        return PlainTextResponse("the console is stopping", 503)
    poll = console(request).poll

    async def body() -> AsyncIterator[bytes]:
        live.moved(+1)
        try:
            # the first look happens before ``ready``, so any change made after the client heard
            # it is one the stream reports
            found = await run_in_threadpool(step)
            yield message("ready", {})
            while True:
                for chunk in found:
                    yield chunk
                await anyio.sleep(poll)  # cancelled at once when the client disconnects
                if live.stopping:
                    break
                found = await run_in_threadpool(step)
        finally:
            live.moved(-1)

    return StreamingResponse(body(), media_type="text/event-stream", headers=HEADERS)


async def session_events(request: Request) -> Response:
    """``/events/session/{id}?after=SEQ``: ``journal`` {seq, type} per event after SEQ."""
    store, viewer = console(request).store, identity(request)
    session_id = request.path_params["session_id"]
    try:
        after = int(request.query_params.get("after", "0"))
    except ValueError:
        return PlainTextResponse("after must be an event seq (a whole number)", 400)
    if not await run_in_threadpool(visible, store, viewer, session_id):
        return PlainTextResponse(f"no session {session_id}", 404)
    seen = [after]

    def step() -> list[bytes]:
        events = store.read(session_id, after_seq=seen[0])
        if events:
            seen[0] = events[-1].seq
        return [message("journal", {"seq": e.seq, "type": str(e.type)}) for e in events]

    return stream(request, step)


def changes(event: str, look: Callable[[], Hashable], count: Callable[[Any], int]
            ) -> Callable[[], list[bytes]]:
    """A stream step that sends ``event`` when ``look()`` differs from what it was at the
    stream's start (or at the last event)."""
    last: list[Any] = []

    def step() -> list[bytes]:
        now = look()
        if not last:
            last.append(now)
            return []
        if now == last[0]:
            return []
        last[0] = now
        return [message(event, {"count": count(now)})]

    return step


async def inbox_events(request: Request) -> Response:
    """``/events/inbox``: ``inbox`` {count} whenever the viewer's pending requests change (one
    arrives, is decided, expires, or its session moves on)."""
    store, viewer = console(request).store, identity(request)

    def look() -> frozenset[tuple[str, str]]:
        return frozenset((p.request.id, p.version) for p in pending(store, viewer))

    return stream(request, changes("inbox", look, len))


async def sessions_events(request: Request) -> Response:
    """``/events/sessions?<the list's filters>``: ``sessions`` {count} whenever the sessions
    that page lists, or their status or length, change."""
    store = console(request).store
    try:
        chosen = listing(request.query_params, identity(request))
        if chosen.after is not None:
            decode_cursor(chosen.after)  # a cursor no listing gave: 400, not a wider list
    except InvalidArgument as exc:
        return PlainTextResponse(str(exc), 400)

    def look() -> tuple[tuple[str, str, int], ...]:
        page = page_sessions(store, chosen.where, limit=PAGE, after=chosen.after)
        return tuple((s.session_id, s.status, s.events) for s in page.sessions)

    return stream(request, changes("sessions", look, len))


ROUTES = [Route("/events/session/{session_id:path}", session_events),
          Route("/events/inbox", inbox_events), Route("/events/sessions", sessions_events)]
