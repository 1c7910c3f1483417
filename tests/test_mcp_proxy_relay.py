"""What an upstream sends and asks during a call through ``tether mcp proxy`` reaches the client
that made the call — bounded, scrubbed, journaled, its answers checked — and nothing when the
operator turns relaying off (``--no-relay``).

The official SDK client talks to ``tether mcp proxy`` over stdio, in front of a hostile upstream
(tests/mcp/relay_upstream.py) that floods log lines, progress and elicitations, logs a secret,
and is sent answers that do not match its form.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters, stdio_client

import tether
from mcp import ClientSession, types
from mcp_peers import ROOT, journal_text, journals, store_url, text
from tether.journal.chain import verify_chain
from tether.mcp.requests import MAX_LOGS, MAX_PROGRESS
from tether.runtime.chokepoint.asks import MAX_ASKS
from tether.tools.caller import MAX_LOG_CHARS
from tether.types import Event

UPSTREAM = ROOT / "tests" / "mcp" / "relay_upstream.py"
POLICY = ROOT / "tests" / "mcp" / "relay_policy.yaml"
TOKEN = "tok-3f9a7c21e5b84d06"


class Client:
    """What the proxy's client was told and asked, and how it answers."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.logs: list[str] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.asked: list[str] = []
        self.sampled: list[str] = []
        self.answer = {"name": "ann"} if answer is None else answer

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(str(params.data))

    async def on_progress(self, progress: float, total: float | None,
                          message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(str(params.message))
        return types.ElicitResult(action="accept", content=self.answer)

    async def on_sample(self, context: Any, params: Any) -> types.CreateMessageResult:
        self.sampled.append(" ".join(str(m.content.text) for m in params.messages))
        return types.CreateMessageResult(role="assistant", model="client-model",
                                         content=types.TextContent(type="text", text="42"))


@contextlib.asynccontextmanager
async def proxied(tmp_path: Path, client: Client, *extra: str) -> AsyncIterator[ClientSession]:
    # the upstream's tools ask on the back-channel directly (the SDK's ctx.session), which
    # only the 2025 handshake has: the proxy is told to speak it
    args: Sequence[str] = ["-m", "tether", "mcp", "proxy", "--policy", str(POLICY), "--store",
                           store_url(tmp_path / "j.db"), "--upstream-protocol", "2025-11-25",
                           *extra, "--", sys.executable, str(UPSTREAM)]
    source = str(Path(tether.__file__).resolve().parents[1])  # this checkout's tether
    params = StdioServerParameters(command=sys.executable, args=list(args), cwd=str(ROOT),
                                   env={"PYTHONPATH": source})
    with (tmp_path / "err.txt").open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(
                read, write, read_timeout_seconds=60, logging_callback=client.on_log,
                log_level="debug",
                elicitation_callback=client.on_elicit,
                sampling_callback=client.on_sample) as session:
            await session.initialize()
            yield session


def events(tmp_path: Path) -> list[Event]:
    (session,) = journals(tmp_path / "j.db").values()
    assert verify_chain(session) is None
    return session


def kinds(journaled: Sequence[Event], kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in journaled if e.type == kind]


async def test_a_flood_of_logs_and_progress_is_cut_scrubbed_and_journaled_once(
        tmp_path: Path) -> None:
    client = Client()
    async with proxied(tmp_path, client) as session:
        result = await session.call_tool(
            "chatty", {"logs": MAX_LOGS + 50, "progress": MAX_PROGRESS + 20, "token": TOKEN,
                       "long": 3 * MAX_LOG_CHARS}, progress_callback=client.on_progress)
    assert not result.is_error and text(result) == "done"
    assert len(client.logs) == MAX_LOGS  # the long line came after the flood: dropped too
    assert client.logs[0].startswith("line 0: using ") and TOKEN not in client.logs[0]
    assert not any(TOKEN in line for line in client.logs)
    assert len(client.progress) == MAX_PROGRESS
    assert client.progress[1][:2] == (1, MAX_PROGRESS + 20)
    assert not any(TOKEN in (message or "") for _, _, message in client.progress)
    journaled = events(tmp_path)
    assert len(kinds(journaled, "log.dropped")) == 1
    assert len(kinds(journaled, "progress.dropped")) == 1
    assert TOKEN not in journal_text(journaled)


async def test_a_long_log_line_is_cut_and_no_progress_is_asked_unless_the_client_asks(
        tmp_path: Path) -> None:
    client = Client()
    async with proxied(tmp_path, client) as session:
        result = await session.call_tool("chatty", {"logs": 0, "progress": 3,
                                                    "long": 3 * MAX_LOG_CHARS})
    assert not result.is_error
    (line,) = client.logs
    assert len(line) < MAX_LOG_CHARS + 100 and line.endswith("characters]")
    assert client.progress == []  # no progressToken from the client: none asked upstream


async def test_a_flood_of_elicitations_is_relayed_up_to_the_limit_and_journaled(
        tmp_path: Path) -> None:
    client = Client()
    async with proxied(tmp_path, client) as session:
        result = await session.call_tool("ask", {"n": MAX_ASKS + 4})
    answers = json.loads(text(result))
    assert [a[0] for a in answers] == ["accept"] * MAX_ASKS + ["decline"] * 4
    assert answers[0][1] == {"name": "ann"}
    assert len(client.asked) == MAX_ASKS
    journaled = events(tmp_path)
    assert len(kinds(journaled, "elicitation.relayed")) == MAX_ASKS
    answered = kinds(journaled, "elicitation.answered")
    assert [a["action"] for a in answered] == ["accept"] * MAX_ASKS
    assert all(a["by"] == "client" for a in answered)
    assert len(kinds(journaled, "elicitation.refused")) == 1  # the flood, recorded once


async def test_an_answer_that_does_not_match_the_form_is_refused_to_the_upstream(
        tmp_path: Path) -> None:
    client = Client(answer={"name": 5, "shell": "rm -rf /"})
    async with proxied(tmp_path, client) as session:
        result = await session.call_tool("ask", {"n": 1})
    assert json.loads(text(result)) == [["decline", None]]
    assert len(client.asked) == 1
    (answered,) = kinds(events(tmp_path), "elicitation.answered")
    assert answered["action"] == "decline" and "does not match" in answered["reason"]
    assert "rm -rf" not in json.dumps(answered)


async def test_sampling_is_relayed_to_the_client_and_journaled(tmp_path: Path) -> None:
    client = Client()
    async with proxied(tmp_path, client) as session:
        result = await session.call_tool("sample", {"prompt": "what is six times seven?"})
    assert text(result) == "sampled: 42"
    assert client.sampled == ["what is six times seven?"]
    journaled = events(tmp_path)
    (relayed,) = kinds(journaled, "sampling.relayed")
    assert relayed["messages"][0]["content"] == "what is six times seven?"
    (answered,) = kinds(journaled, "sampling.answered")
    assert answered["text"] == "42" and answered["by"] == "client"


async def test_with_relaying_off_requests_are_declined_and_journaled(tmp_path: Path) -> None:
    client = Client()
    async with proxied(tmp_path, client, "--no-relay") as session:
        asked = await session.call_tool("ask", {"n": 1})
        sampled = await session.call_tool("sample", {"prompt": "hello"})
    assert json.loads(text(asked)) == [["decline", None]]
    assert text(sampled).startswith("error: ") and "declined" in text(sampled)
    assert client.asked == [] and client.sampled == []
    journaled = events(tmp_path)
    (refused,) = kinds(journaled, "elicitation.refused")
    assert "configured" in refused["reason"]
    (refused,) = kinds(journaled, "sampling.refused")
    assert "configured" in refused["reason"]
    assert not kinds(journaled, "elicitation.relayed") and not kinds(journaled, "sampling.relayed")
