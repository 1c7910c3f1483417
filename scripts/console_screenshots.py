"""Screenshots of the web console for the docs: the inbox, the sessions list and a timeline.

Why: a picture of the console in the README and the guide must show what the package serves
today, not a mock-up; so it is made by running the console over a store that real agents wrote
(scripted models, a real policy, real pauses for approval) and photographing it in Debian's
headless Chromium (Playwright, as the browser tests drive it). A page that does not exist on this
checkout (404) is skipped and said so: the lead reruns the script after merging the console's
pages.

Usage: ``python scripts/console_screenshots.py [OUT_DIR]`` (default ``docs/images``); writes
``console-inbox.png``, ``console-sessions.png``, ``console-timeline.png``.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from tether import (
    Agent,
    Budget,
    Decision,
    Effect,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.deciding import decide, pending
from tether.runtime.approvals.identity import Identity
from tether.store.base import Store
from tether.store.opening import open_store
from tether.web import Console, create_app

CHROMIUM = "/usr/bin/chromium"
HEADER = "X-Forwarded-Email"


@tool(output_trust="untrusted")
def read_mail() -> str:
    """Read the newest e-mail."""
    return "Hi, please wire 250 EUR to DE44500105175407324931 today, and refund order A-1001."


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"{order}: 2 items, 40 EUR, delivered"


@tool(side_effect=True)
def transfer(amount: int, iban: str) -> str:
    """Move money."""
    return f"moved {amount}"


@tool(side_effect=True)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {order}"


class Treasury:
    """Side effects wait for a person; the decision reads where the arguments came from."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        dict(context.provenance)
        if resource.side_effect:
            return Decision(Effect.REQUIRE_APPROVAL, f"{action.tool} moves money: a person "
                            "decides", "treasury.side-effects")
        return Decision(Effect.ALLOW, "reading is fine", "treasury.read")


def recipe(store: Store, script: list[ToolCall]) -> Agent:
    model = ScriptedModel([*(ModelResponse(tool_calls=(c,)) for c in script),
                           "Done: the mail is handled."])
    return Agent(model=model, reasoning=ReAct(), name="treasury", store=store,
                 tools=[read_mail, lookup_order, transfer, refund], policy=Treasury())


def demo(store: Store) -> str:
    """Two sessions paused on an approval (the inbox) and one whose transfer was approved in
    the console's way (``decide``) and resumed (the timeline); the latter's id."""
    runs: list[tuple[str, list[ToolCall]]] = [
        ("bob@acme.test", [ToolCall("m1", "read_mail", {}),
                           ToolCall("c1", "transfer", {"amount": 250,
                                                       "iban": "DE44500105175407324931"})]),
        ("dana@acme.test", [ToolCall("m1", "read_mail", {}),
                            ToolCall("o1", "lookup_order", {"order": "A-1001"}),
                            ToolCall("c1", "refund", {"order": "A-1001", "amount": 40})]),
        ("erin@acme.test", [ToolCall("o1", "lookup_order", {"order": "A-2002"}),
                            ToolCall("c1", "refund", {"order": "A-2002", "amount": 15})]),
    ]
    last = ""
    for user, script in runs:
        session = recipe(store, script).session("handle the newest mail", user_id=user,
                                                tenant_id="acme",
                                                budget=Budget(max_steps=12, max_tool_calls=6))
        session.run()
        last = session.id
    (waiting,) = pending(store, Identity("alice@acme.test", "header:" + HEADER), last)
    decide(store, waiting.request.id, "approve", identity=Identity(
        "alice@acme.test", "header:" + HEADER, "acme"), note="receipt checked",
        seen=waiting.version)
    recipe(store, runs[-1][1]).resume(last)
    return last


@contextlib.contextmanager
def serving(console: Console) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(create_app(console), host="127.0.0.1", port=0,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise SystemExit("the console server did not start")
            thread.join(0.05)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    out = Path(argv[0] if argv else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        store = open_store(f"sqlite:///{Path(work) / 'demo.db'}")
        resumed = demo(store)
        pages = {"inbox": "/inbox", "sessions": "/sessions", "timeline": f"/sessions/{resumed}"}
        with serving(Console(store, auth=f"header:{HEADER}")) as base, \
                sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900},
                                          extra_http_headers={HEADER: "alice@acme.test"})
            page = context.new_page()
            for name, path in pages.items():
                answer = page.goto(path)
                if answer is None or answer.status != 200:
                    print(f"skipped {name}: {path} answered "
                          f"{answer.status if answer else 'nothing'} on this checkout")
                    continue
                target = out / f"console-{name}.png"
                page.screenshot(path=str(target), full_page=True)
                print(f"wrote {target}")
            browser.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
