"""tether's MCP client across MCP's two protocol eras: 2026-07-28 (``server/discover``, a
stateless per-request envelope) and the 2025 ``initialize`` handshake (``tether.mcp.eras``).

Real SDK servers on 127.0.0.1: ``tests/mcp/era_server.py`` (the SDK's low-level ``Server`` over
streamable HTTP, narrowed to one era, recording every request it gets) and ``tether mcp serve``
(both eras). What matters is asserted on the wire: which requests were sent, their
``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` headers and their ``_meta``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_peers import NOTES_POLICY, NOTES_TOOLS, ROOT, http_server, printed_url
from tether import Agent, ReAct, ScriptedModel
from tether.errors import InvalidArgument
from tether.mcp import MCPConnectionError, MCPError, MCPServer, MemoryPinStore, connect
from tether.types import ModelResponse, ToolCall

ERA_SERVER = ROOT / "tests" / "mcp" / "era_server.py"
PV = "io.modelcontextprotocol/protocolVersion"
INFO = "io.modelcontextprotocol/clientInfo"
CAPS = "io.modelcontextprotocol/clientCapabilities"


class Wire:
    """The requests an era server received, as it recorded them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def requests(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines()]

    def methods(self) -> list[str | None]:
        return [(r["body"] or {}).get("method") for r in self.requests()
                if isinstance(r["body"], dict)]

    def of(self, method: str) -> list[dict[str, Any]]:
        return [r for r in self.requests()
                if isinstance(r["body"], dict) and r["body"].get("method") == method]


@contextlib.contextmanager
def era_server(tmp_path: Path, era: str, discover: str = "") -> Iterator[tuple[str, Wire]]:
    """``era_server.py ERA RECORD [DISCOVER]`` in a subprocess: its URL and what it records."""
    record = tmp_path / f"wire-{era}-{discover or 'plain'}.jsonl"
    with printed_url([sys.executable, str(ERA_SERVER), era, str(record),
                      *([discover] if discover else [])]) as (url, _):
        yield url, Wire(record)


def server(url: str, **options: Any) -> MCPServer:
    return MCPServer.http("era", url, connect_timeout=15, call_timeout=15, **options)


def refusal(url: str, **options: Any) -> str:
    """What connecting with these options is refused with (it must be refused)."""
    with pytest.raises(MCPConnectionError) as caught:
        connect(server(url, **options)).open()
    return str(caught.value)


def test_a_2026_server_is_spoken_to_in_2026_on_the_wire(tmp_path: Path) -> None:
    with era_server(tmp_path, "2026") as (url, wire), connect(server(url)) as tools:
        assert tools.protocol_version == "2026-07-28"
        assert asyncio.run(tools.invoke("add", {"a": 2, "b": 3})) == "5"
        seen = json.loads(asyncio.run(tools.invoke("meta", {})))
    assert "initialize" not in wire.methods()
    assert wire.methods()[0] == "server/discover"
    (call,) = [r for r in wire.of("tools/call") if r["body"]["params"]["name"] == "add"]
    assert call["headers"]["mcp-protocol-version"] == "2026-07-28"
    assert call["headers"]["mcp-method"] == "tools/call"
    assert call["headers"]["mcp-name"] == "add"
    meta = call["body"]["params"]["_meta"]
    assert meta[PV] == "2026-07-28" and INFO in meta and CAPS in meta
    (listing,) = wire.of("tools/list")
    assert listing["headers"]["mcp-method"] == "tools/list"
    assert listing["body"]["params"]["_meta"][PV] == "2026-07-28"
    assert seen[PV] == "2026-07-28"  # what the server's handler saw


def test_a_2025_server_gets_the_handshake_after_the_probe(tmp_path: Path) -> None:
    with era_server(tmp_path, "2025") as (url, wire), connect(server(url)) as tools:
        assert tools.protocol_version == "2025-11-25"
        assert asyncio.run(tools.invoke("add", {"a": 2, "b": 3})) == "5"
        seen = json.loads(asyncio.run(tools.invoke("meta", {})))
    methods = wire.methods()
    assert methods[:2] == ["server/discover", "initialize"]
    (call,) = [r for r in wire.of("tools/call") if r["body"]["params"]["name"] == "add"]
    assert call["headers"]["mcp-protocol-version"] == "2025-11-25"
    assert "mcp-method" not in call["headers"] and "mcp-name" not in call["headers"]
    assert PV not in (call["body"]["params"].get("_meta") or {})
    assert PV not in seen


def test_pinned_2025_never_probes(tmp_path: Path) -> None:
    with era_server(tmp_path, "2025") as (url, wire), connect(
            server(url, protocol="2025-11-25")) as tools:
        assert tools.protocol_version == "2025-11-25"
    assert "server/discover" not in wire.methods()
    assert wire.methods()[0] == "initialize"


def test_pinned_2026_refuses_a_2025_server_without_a_handshake(tmp_path: Path) -> None:
    with era_server(tmp_path, "2025") as (url, wire):
        said = refusal(url, protocol="2026-07-28")
    assert re.search(r"pinned to protocol='2026-07-28'.*protocol='2025-11-25' or 'auto'", said)
    assert wire.methods() == ["server/discover"]


def test_pinned_2025_refuses_a_2026_server_and_says_what_to_pin(tmp_path: Path) -> None:
    with era_server(tmp_path, "2026") as (url, wire):
        said = refusal(url, protocol="2025-11-25")
    assert re.search(r"refused the 2025 handshake \(Method not found.*protocol='auto' or "
                     r"'2026-07-28'", said)
    assert wire.methods() == ["initialize"]


@pytest.mark.parametrize("bad", ["2026", "legacy", "2025-06-18", "", None, ["auto"], 2026])
def test_a_bad_protocol_is_refused_with_the_choices(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"protocol must be 'auto'.*'2026-07-28' or "
                                              r"'2025-11-25'"):
        MCPServer.http("era", "http://127.0.0.1:1/mcp", protocol=bad)
    with pytest.raises(InvalidArgument, match="protocol must be"):
        MCPServer.stdio("era", sys.executable, protocol=bad)


@pytest.mark.parametrize(("discover", "said"), [
    ("garbage", r"not a discover result \(supportedVersions: .*"),
    ("foreign", r"names no 2026-era version tether speaks \(supportedVersions \['2099-01-01'\]"),
])
@pytest.mark.parametrize("protocol", ["auto", "2026-07-28"])
def test_an_unusable_discover_answer_is_refused_with_advice(tmp_path: Path, discover: str,
                                                            said: str, protocol: str) -> None:
    advice = (r"it is pinned to protocol='2026-07-28'" if protocol == "2026-07-28" else
              r"and it refused the 2025 handshake \(Method not found.*pin the era")
    with era_server(tmp_path, "2026", discover) as (url, wire):
        message = refusal(url, protocol=protocol)
    assert re.search(said + ".*" + advice, message), message
    assert "tools/list" not in wire.methods()  # nothing was done with the untrusted answer


def test_a_server_that_speaks_only_unknown_versions_is_refused(tmp_path: Path) -> None:
    with era_server(tmp_path, "2026", "disjoint") as (url, wire):
        said = refusal(url)
    assert re.search(r"speaks only protocol versions \['2099-01-01'\].*upgrade", said), said
    assert wire.methods() == ["server/discover"]  # no handshake: it said it has none


def test_unsupported_version_is_retried_at_the_version_the_server_names(
        tmp_path: Path) -> None:
    with era_server(tmp_path, "2026", "retry") as (url, wire), connect(server(url)) as tools:
        assert tools.protocol_version == "2026-07-28"
        assert asyncio.run(tools.invoke("add", {"a": 1, "b": 1})) == "2"
    assert wire.methods()[:3] == ["server/discover", "server/discover", "tools/list"]


def test_input_required_is_answered_by_the_session_and_retried(tmp_path: Path) -> None:
    # the 2026 way of asking during a call (tests/test_mcp_input_required.py has the rest)
    with era_server(tmp_path, "2026") as (url, wire), connect(
            server(url, prefix="", elicitation=lambda question: {"name": "ann"})) as tools:
        model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "ask", {}),)), "done"])
        session = Agent(model=model, reasoning=ReAct(), tools=[*tools]).session("ask me")
        result = session.run()
    ((status, content),) = [(r.status, r.content) for r in result.trajectory.tool_results]
    assert status == "ok" and json.loads(str(content)) == {
        "responses": {"q": {"action": "accept", "content": {"name": "ann"}}}, "state": "s1"}
    assert [e.type for e in session.replay() if e.type.startswith("elicitation.")] == [
        "elicitation.requested", "elicitation.answered"]
    first, retry = [r["body"] for r in wire.of("tools/call")]
    assert retry["id"] != first["id"] and retry["params"]["requestState"] == "s1"
    assert retry["params"]["inputResponses"]["q"]["action"] == "accept"


def test_tool_changes_unheard_in_2026_mean_a_relisting_before_every_call(
        tmp_path: Path) -> None:
    # the server announces tools.listChanged but refuses the stream that would carry the
    # changes: each call is preceded by a listing, so its pin is checked against what is current
    with era_server(tmp_path, "2026", "nolisten") as (url, wire), connect(server(url)) as tools:
        assert tools.stale
        assert asyncio.run(tools.invoke("add", {"a": 1, "b": 2})) == "3"
        assert asyncio.run(tools.invoke("add", {"a": 2, "b": 2})) == "4"
    methods = [m for m in wire.methods() if m != "server/discover"]
    assert methods == ["subscriptions/listen", "tools/list", "tools/list", "tools/call",
                       "tools/list", "tools/call"]


def test_a_2026_server_that_announces_no_changes_is_listed_once(tmp_path: Path) -> None:
    with era_server(tmp_path, "2026") as (url, wire), connect(server(url)) as tools:
        assert not tools.stale
        asyncio.run(tools.invoke("add", {"a": 1, "b": 2}))
        asyncio.run(tools.invoke("add", {"a": 2, "b": 2}))
    assert wire.methods().count("tools/list") == 1
    assert "subscriptions/listen" not in wire.methods()


def test_a_result_without_its_result_type_is_a_clear_error(tmp_path: Path) -> None:
    with era_server(tmp_path, "2026") as (url, _), connect(server(url)) as tools:
        with pytest.raises(MCPError, match=r"answered the call of 'untyped' with a result the "
                                           r"MCP SDK does not accept under protocol 2026-07-28 "
                                           r"\(.*resultType: Field required\).*unknown"):
            asyncio.run(tools.invoke("untyped", {}))
        assert asyncio.run(tools.invoke("add", {"a": 1, "b": 2})) == "3"


def test_tether_mcp_serve_speaks_either_era_with_the_same_pins(tmp_path: Path) -> None:
    args = ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store",
            f"sqlite:///{tmp_path / 'j.db'}"]
    pins = MemoryPinStore()
    seen: dict[str, tuple[str | None, list[str]]] = {}
    with http_server(args, env={"NOTES_DIR": str(tmp_path / "notes")}) as (url, _):
        for protocol in ("auto", "2025-11-25", "2026-07-28"):
            with connect(server(url, protocol=protocol), pins=pins,
                         require_approval_for_new=True) as tools:
                seen[protocol] = (tools.protocol_version, sorted(tools.names))
                pending = tools.pending()
            if protocol == "auto":
                assert pending
                for pin in pending:  # approved once, in the 2026 era
                    pins.approve(pin.server, pin.tool)
            else:  # the same definitions, pinned in one era, are approved in the other
                assert pending == []
    assert seen["auto"][0] == "2026-07-28" and seen["2026-07-28"][0] == "2026-07-28"
    assert seen["2025-11-25"][0] == "2025-11-25"
    assert seen["auto"][1] == seen["2025-11-25"][1] == seen["2026-07-28"][1]
