"""A client's W3C ``traceparent``, sent in a ``tools/call`` request's ``_meta``, accepted by the
served gateway: journaled on ``client.call`` when valid, ignored (and the call run) when not; and
with telemetry, the span of the gateway's own call handed to the tool — from the proxy, to the
upstream MCP server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doc_pages import blocks
from mcp import Client
from mcp_peers import (
    NOTES_POLICY,
    NOTES_TOOLS,
    ROOT,
    http_peer,
    journals,
    status,
    stdio_peer,
    store_url,
    text,
)
from mcp_servers import py_server
from tether import tool
from tether.policy import AllowAll
from tether.runtime.chokepoint.gateway import Gateway
from tether.serve.clients import ClientGateways, Governance
from tether.serve.proxy import proxy
from tether.serve.server import build_server, listing_of
from tether.store.memory import MemoryStore
from tether.tools.base import ToolContext
from tether.tracing import Segment, TraceParent
from tether.types import Event

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CLIENT = TraceParent.parse(PARENT)
MALFORMED: list[Any] = [
    PARENT.upper(),  # uppercase hex
    "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",  # all-zero span id
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # another version
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # the forbidden version
    PARENT + "-00", " " + PARENT, PARENT + "\n", "00-4bf92f35-00f067aa0ba902b7-01", "",
    12345, None, True, ["a"], {"traceparent": PARENT},  # not strings
    PARENT + "x" * 10_240, "0" * 10_240,  # 10 KB
]

seen: list[ToolContext] = []


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def traced(text: str, context: ToolContext) -> str:
    """Echo the text, keeping the context the call ran with."""
    seen.append(context)
    return text


def sink(event: Event) -> None:
    pass


def gateways(telemetry: tuple[Any, ...] = ()) -> tuple[ClientGateways, MemoryStore]:
    store = MemoryStore()
    return ClientGateways([echo, traced], Governance(AllowAll(), store,
                                                     telemetry=telemetry)), store


def client_calls(store: MemoryStore) -> list[Event]:
    (info,) = store.sessions()
    return [e for e in store.read(info.session_id) if e.type == "client.call"]


async def test_a_valid_traceparent_is_journaled_on_the_client_call() -> None:
    g, store = gateways()
    async with Client(build_server(g, listing_of(g.tools))) as client:
        with_parent = await client.call_tool("echo", {"text": "hi"},
                                             meta={"traceparent": PARENT,
                                                   "tracestate": "vendor=secret-ish",
                                                   "other": "not ours"})
        without = await client.call_tool("echo", {"text": "again"})
    assert status(with_parent) == "ok" and text(with_parent) == "hi"
    assert status(without) == "ok"
    first, second = client_calls(store)
    assert first.data["traceparent"] == PARENT
    assert "traceparent" not in second.data  # no field at all when the client sent none
    (info,) = store.sessions()
    everything = json.dumps([e.data for e in store.read(info.session_id)])
    assert "secret-ish" not in everything and "not ours" not in everything


async def test_a_traceparent_is_kept_in_its_canonical_form() -> None:
    g, store = gateways()
    async with Client(build_server(g, listing_of(g.tools))) as client:
        await client.call_tool("echo", {"text": "hi"}, meta={"traceparent": PARENT[:-2] + "03"})
    (event,) = client_calls(store)
    assert event.data["traceparent"] == PARENT  # only the sampled flag survives the parse


async def test_a_malformed_traceparent_is_ignored_and_the_call_runs() -> None:
    g, store = gateways()
    async with Client(build_server(g, listing_of(g.tools))) as client:
        results = [await client.call_tool("echo", {"text": f"n{i}"},
                                          meta={"traceparent": bad})
                   for i, bad in enumerate(MALFORMED)]
    assert [status(r) for r in results] == ["ok"] * len(MALFORMED)
    assert [text(r) for r in results] == [f"n{i}" for i in range(len(MALFORMED))]
    events = client_calls(store)
    assert len(events) == len(MALFORMED)
    assert all("traceparent" not in e.data for e in events)


async def test_with_telemetry_the_tool_gets_its_own_span_in_the_clients_trace() -> None:
    seen.clear()
    g, _ = gateways(telemetry=(sink,))
    async with Client(build_server(g, listing_of(g.tools))) as client:
        await client.call_tool("traced", {"text": "a"}, meta={"traceparent": PARENT})
        await client.call_tool("traced", {"text": "b"})
        await client.call_tool("traced", {"text": "c"}, meta={"traceparent": PARENT.upper()})
    (gateway,) = g.gateways
    under_client, own, ignored = (TraceParent.parse(c.traceparent) for c in seen)
    assert under_client == Segment(gateway.id, 1, CLIENT).tool_call(seen[0].call_id)
    assert CLIENT is not None and under_client is not None
    assert under_client.trace_id == CLIENT.trace_id and under_client.span_id != CLIENT.span_id
    assert own == Segment(gateway.id, 1).tool_call(seen[1].call_id)
    assert ignored == Segment(gateway.id, 1).tool_call(seen[2].call_id)


async def test_without_telemetry_the_tool_gets_no_span() -> None:
    seen.clear()
    g, store = gateways()
    async with Client(build_server(g, listing_of(g.tools))) as client:
        await client.call_tool("traced", {"text": "a"}, meta={"traceparent": PARENT})
    assert [c.traceparent for c in seen] == [""]
    assert client_calls(store)[0].data["traceparent"] == PARENT  # still journaled


async def test_tether_mcp_serve_journals_the_clients_traceparent(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    args = ["serve", NOTES_TOOLS, "--policy", NOTES_POLICY, "--store", store_url(db)]
    async with stdio_peer(args, errlog=tmp_path / "err.txt",  # this tree's tether, not another
                          env={"NOTES_DIR": str(tmp_path / "notes"),
                               "PYTHONPATH": str(ROOT / "src")}) as client:
        traced_call = await client.call_tool("list_notes", {}, meta={"traceparent": PARENT})
        bad = await client.call_tool("list_notes", {}, meta={"traceparent": "z" * 10_240})
    assert status(traced_call) == "ok" and status(bad) == "ok"
    (events,) = journals(db).values()
    first, second = (e for e in events if e.type == "client.call")
    assert first.data["traceparent"] == PARENT
    assert "traceparent" not in second.data


async def proxied_meta(telemetry: tuple[Any, ...], meta: dict[str, Any] | None,
                       ) -> tuple[dict[str, Any], ClientGateways | Any, str]:
    """Call the upstream's ``meta`` tool through the proxy: the ``_meta`` the upstream saw,
    the client's gateway, and the call's id."""
    upstream = py_server("upstream", prefix="", env={"TETHER_TEST_META": "1"})
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    clients: list[Any] = []
    task = asyncio.ensure_future(proxy(
        upstream, Governance(AllowAll(), MemoryStore(), telemetry=telemetry), transport="http",
        on_ready=ready.set_result, on_client=lambda key, gw: clients.append(gw),
        log=lambda line: None))
    try:
        done, _ = await asyncio.wait({task, ready}, timeout=60,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
        async with http_peer(await ready) as client:
            result = await client.call_tool("meta", {}, meta=meta)
        assert status(result) == "ok", text(result)
        (gateway,) = clients
        (call,) = [e for e in gateway.journal.events() if e.type == "client.call"]
        return json.loads(text(result)), gateway, call.data["call"]["id"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("meta", [{"traceparent": PARENT}, None], ids=["parent", "none"])
async def test_the_proxy_without_telemetry_forwards_nothing(meta: Any) -> None:
    seen_upstream, _, _ = await proxied_meta((), meta)
    assert "traceparent" not in seen_upstream


async def test_the_proxy_with_telemetry_sends_its_own_call_span_upstream() -> None:
    seen_upstream, gateway, call_id = await proxied_meta((sink,), {"traceparent": PARENT})
    expected = Segment(gateway.id, 1, CLIENT).tool_call(call_id).header()
    assert seen_upstream["traceparent"] == expected != PARENT


async def test_the_proxy_with_telemetry_and_no_client_span_starts_its_own_trace() -> None:
    seen_upstream, gateway, call_id = await proxied_meta((sink,), None)
    assert seen_upstream["traceparent"] == Segment(gateway.id, 1).tool_call(call_id).header()


HEX = "0123456789abcdef"
valid = st.builds(lambda t, s, f: f"00-{t}-{s}-{f}", st.text(HEX, min_size=32, max_size=32),
                  st.text(HEX, min_size=16, max_size=16), st.text(HEX, min_size=2, max_size=2))
traceparents = st.one_of(valid, st.builds(
    lambda v, t, s, f: f"{v}-{t}-{s}-{f}",
    st.sampled_from(["00", "01", "ff", "0A"]), st.text(HEX + "A", min_size=31, max_size=33),
    st.text(HEX + "G", min_size=15, max_size=17), st.sampled_from(["00", "01", "03", "1"])))
anything = st.one_of(valid, traceparents, valid.map(str.upper), valid.map(lambda v: v + " "),
                     st.text(max_size=80), st.integers(), st.none(), st.binary(max_size=40),
                     st.lists(st.text(max_size=5), max_size=2))


@settings(max_examples=150, deadline=None)
@given(sent=anything)
def test_the_client_call_records_exactly_the_canonical_form_of_a_valid_traceparent(
        sent: Any) -> None:
    gateway = Gateway([echo], policy=AllowAll())
    result = asyncio.run(gateway.call("echo", {"text": "x"}, traceparent=sent))
    assert result.status == "ok"
    (event,) = [e for e in gateway.journal.events() if e.type == "client.call"]
    parsed = TraceParent.parse(sent)
    if parsed is None:
        assert "traceparent" not in event.data
    else:
        assert event.data["traceparent"] == parsed.header() == TraceParent.parse(
            event.data["traceparent"]).header()  # type: ignore[union-attr]
        assert sent[:53] == parsed.header()[:53]  # the ids are the client's, unchanged


def test_the_guides_gateway_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = blocks("docs/guide/telemetry-propagation.md",
                      "Accepting a client's trace: `tether mcp serve`")
    exec(compile(block, "telemetry-propagation.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == [PARENT, "False"]
