"""A timeline in a real browser (headless Debian Chromium through Playwright, tests/browser.py):
under the console's strict content-security policy the page reports no violation, its stylesheet
applies, and the spend chart renders — each line drawn, with its measure's colour from the CSS.

The console is served by uvicorn on a socket this test bound first, so the browser's first
request waits in the socket's backlog rather than on a sleep.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import chromium
from console_sessions import treasury
from tether.store import open_store
from tether.web import Console, create_app

# what the console's door sets on every page (issue 48: no inline script or style, no CDN)
CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " \
      "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
TIMEOUT_MS = 60_000  # a loaded 2-core machine: every wait is on a selector or a load

WATCH = """() => { window.__violations = [];
  document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI)); }"""
CHART = """() => [...document.querySelectorAll('svg.spend-chart polyline')].map(p => {
    const box = p.getBBox();
    return {measure: p.getAttribute('class'), width: box.width,
            stroke: getComputedStyle(p).stroke, fill: getComputedStyle(p).fill}; })"""


class StrictCSP:
    """The content-security policy header on every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"content-security-policy", CSP.encode())]
            await send(message)

        await self.app(scope, receive, sending)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A console over a store with one finished session: its base URL and the session id."""
    import uvicorn

    url = f"sqlite:///{tmp_path / 'journal.db'}"
    session = treasury(url).session("move 900 to ACME-7")
    session.run()
    store = open_store(url)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(StrictCSP(create_app(Console(store, auth="none"))),
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]})
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", session.id
    finally:
        server.should_exit = True
        thread.join()
        listening.close()
        store.close()


def test_a_timeline_renders_its_chart_with_no_csp_violation(served: tuple[str, str]) -> None:
    base, sid = served
    with chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        messages: list[str] = []
        page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
        page.add_init_script(f"({WATCH})()")
        response = page.goto(f"{base}/sessions/{sid}", wait_until="load")
        assert response is not None and response.status == 200
        assert CSP in response.headers["content-security-policy"]  # (with the door's own)
        page.wait_for_selector("svg.spend-chart polyline")
        lines = page.evaluate(CHART)
        assert {line["measure"] for line in lines} >= {"m-tokens", "m-steps", "m-tool_calls"}
        assert all(line["width"] > 100 and line["fill"] == "none" for line in lines)
        colours = {line["measure"]: line["stroke"] for line in lines}
        assert colours["m-tokens"] == "rgb(63, 81, 181)"  # from timeline.css: it applied
        assert page.evaluate("window.__violations") == []
        assert [m for m in messages if "Content Security Policy" in m] == []
        assert page.locator("ol#rows > li.row").count() == len(page.locator(
            "ol#rows li[data-seq]").all())
        assert page.locator("p.chain.verified").is_visible()
