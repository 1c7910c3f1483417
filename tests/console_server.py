"""A real console server for browser tests and screenshots: uvicorn on a free port, in a thread.

Started and stopped by a context manager: the server is up (its socket bound) before the block
runs, and stopped and joined when it ends, so no test leaves it behind.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import uvicorn

from tether.web import Console, create_app


@contextlib.contextmanager
def serving(console: Console) -> Iterator[str]:
    """``console`` served on 127.0.0.1 at a free port; yields its base URL."""
    config = uvicorn.Config(create_app(console), host="127.0.0.1", port=0, log_level="warning",
                            lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="console", daemon=True)
    thread.start()
    try:
        while not server.started:  # set by uvicorn once the socket listens
            if not thread.is_alive():
                raise RuntimeError("the console server did not start; see its log above")
            thread.join(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
