"""Live updates over server-sent events, served by a real uvicorn: a session another process
writes streams to the page as it is journaled; the inbox and the session list say when they
change; a stream ends when its client goes and when the console stops. Waits on lines read and
on the open-stream count, never on sleeps."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx

from console_app import opened, run_session, served
from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.policy import Action, Context, Resource, Subject
from tether.runtime.approvals.deciding import decide, pending
from tether.runtime.approvals.identity import Identity
from tether.store.sqlite import SQLiteStore
from tether.web import Console

HERE = Path(__file__).parent
TIMEOUT = httpx.Timeout(20.0)  # a loaded 2-core machine; every wait ends on a line read


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, object]]]:
    """(event, data) per server-sent event of ``lines``."""
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


def test_a_session_another_process_writes_streams_as_it_is_journaled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    writer = subprocess.Popen([sys.executable, str(HERE / "console_writer.py"), url, "live-1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "ready"  # the session is stored, paused in
        store = SQLiteStore(tmp_path / "live.db")  # its tool until we say go
        after = store.read("live-1")[-1].seq
        with served(Console(store, auth="none")) as (base, app), httpx.stream(
                "GET", f"{base}/events/session/live-1?after={after}", timeout=TIMEOUT) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = opened(stream)
            writer.stdin.write("go\n")
            writer.stdin.flush()
            seen = []
            for name, data in events_of(lines):
                assert name == "journal"
                seen.append((data["seq"], data["type"]))
                if data["type"] == "session.end":
                    break
        assert [seq for seq, _ in seen] == list(range(after + 1, after + 1 + len(seen)))
        assert seen[0][1] == "model.response"
        assert {"tool.result", "session.end"} <= {t for _, t in seen}
        assert app.state.streams.wait(0, 60)
        assert writer.wait(120) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_a_stream_ends_when_its_client_disconnects(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    session = run_session(store)
    with served(Console(store, auth="none")) as (base, app):
        with httpx.stream("GET", f"{base}/events/session/{session}", timeout=TIMEOUT) as stream:
            lines = opened(stream)
            first = next(events_of(lines))
            assert first == ("journal", {"seq": 1, "type": "session.start"})
            assert app.state.streams.open == 1
        assert app.state.streams.wait(0, 60), "the stream outlived its client"


def test_stopping_the_console_ends_its_streams_and_refuses_new_ones(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    with served(Console(store, auth="none")) as (base, app):
        with httpx.stream("GET", f"{base}/events/sessions", timeout=TIMEOUT) as stream:
            lines = opened(stream)
            app.state.streams.stop()
            assert [line for line in lines if line] == []  # the server ended the body
        assert app.state.streams.wait(0, 60)
        assert httpx.get(f"{base}/events/inbox", timeout=TIMEOUT).status_code == 503


def test_the_session_list_hears_a_new_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    run_session(store, agent="first")
    with served(Console(store, auth="none")) as (base, app), httpx.stream(
            "GET", f"{base}/events/sessions?agent=second", timeout=TIMEOUT) as stream:
        lines = opened(stream)
        run_session(store, agent="first")  # not listed by this page's filter: no event;
        run_session(store, agent="second")  # then one that is
        assert next(events_of(lines)) == ("sessions", {"count": 1})
    assert app.state.streams.wait(0, 60)


class AskFirst:
    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        return Decision(Effect.REQUIRE_APPROVAL, "a person decides", "ask")


@tool(side_effect=True)
def refund(amount: int) -> str:
    """Refund money."""
    return f"refunded {amount}"


def test_the_inbox_hears_a_request_decided_elsewhere(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "refund", {"amount": 5}),)),
                           "done"])
    Agent(model=model, reasoning=ReAct(), tools=[refund], store=store, policy=AskFirst(),
          name="shop").session("refund it").run()
    operator = Identity("ops", "os-user")
    [waiting] = pending(store, operator)
    with served(Console(store, auth="none")) as (base, app), httpx.stream(
            "GET", f"{base}/events/inbox", timeout=TIMEOUT) as stream:
        lines = opened(stream)
        decide(store, waiting.request.id, "deny", identity=operator, note="no")
        assert next(events_of(lines)) == ("inbox", {"count": 0})
    assert app.state.streams.wait(0, 60)
