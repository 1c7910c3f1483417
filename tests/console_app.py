"""What the console's tests share: sessions to list, a console served by a real uvicorn in a
thread (for what Starlette's TestClient cannot do: server-sent events, a browser), and reading a
page's CSRF token."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterator

import httpx
import uvicorn
from starlette.applications import Starlette

from tether import Agent, ReAct, ScriptedModel
from tether.store.base import Store
from tether.web import Console, create_app


def run_session(store: Store, *, agent: str = "helper", tenant: str | None = None,
                user: str | None = None, session_id: str | None = None) -> str:
    """A finished one-turn session in ``store``; its id."""
    recipe = Agent(model=ScriptedModel(["done"]), reasoning=ReAct(), store=store, name=agent)
    session = recipe.session("hello", tenant_id=tenant, user_id=user, session_id=session_id)
    session.run()
    return session.id


def opened(stream: httpx.Response) -> Iterator[str]:
    """The lines of a live stream after its ``ready`` event (its first look at the store is
    taken: any change from now on is one it reports)."""
    lines = stream.iter_lines()
    assert stream.status_code == 200, stream.read()
    assert [next(lines), next(lines), next(lines)] == ["event: ready", "data: {}", ""]
    return lines


def csrf_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found[1]


@contextlib.contextmanager
def served(console: Console) -> Iterator[tuple[str, Starlette]]:
    """``console`` served on a free loopback port in a thread: (base URL, app). The socket listens
    before the server starts, so a client may connect at once (no wait). On leaving, the
    live streams are stopped and the server is shut down and joined."""
    app = create_app(console)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, access_log=False, log_level="warning",
                                           lifespan="off", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}", app
    finally:
        app.state.streams.stop()
        server.should_exit = True
        thread.join(30)
        listening.close()
        assert not thread.is_alive(), "the console's server did not stop"

