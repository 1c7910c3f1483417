"""Attacks that come through MCP itself, through ``tether mcp proxy``: a hostile upstream
(tests/mcp/hostile_server.py) behind the proxy, and an obedient scripted client in front
(tests/mcp_attacks_proxy.py) that makes whatever call a payload it read asks for. Each asserts
what the client could read, what ran upstream, and what stopped the attack.

A name collision has no channel here: the proxy fronts one upstream and serves its names as
they are; two servers' names meet in the client's own namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_attacks import DOCS_KEY, Case
from mcp_attacks_proxy import EXPORT, ProxyVerdict, run_proxy_case
from tether.mcp.pins import JSONFilePinStore, Pin

HONEST = "Read a document by its name."


async def attack(kind: str, channel: str, template: str = "ignore",
                 target: str = "export") -> ProxyVerdict:
    return await run_proxy_case(Case(kind, channel, template, target, "read"))


def refused_export(v: ProxyVerdict) -> str:
    ((is_error, _said, meta),) = v.results["export_data"]
    assert is_error and ("export_data", EXPORT) not in v.ran  # never sent upstream
    return str(meta.get("tether/status"))


# the channels through which the payload reaches the proxy's client as it was sent: pinned on
# first sight (description), the upstream's own words (error, result), relayed to the client
# waiting for the call (log, progress, elicitation, sampling); what it asks for meets the policy
@pytest.mark.parametrize(("kind", "channel"), [
    ("poison", "description"), ("false_error", "error"), ("inject", "result"),
    ("inject", "log"), ("inject", "progress"), ("inject", "elicitation"),
    ("inject", "sampling")])
async def test_what_the_client_reads_it_may_obey_and_the_policy_stops(kind: str,
                                                                      channel: str) -> None:
    v = await attack(kind, channel, template="retry" if kind == "false_error" else "ignore")
    assert v.read
    assert refused_export(v) == "approval_required"  # the operator's rule: a person must approve
    assert [name for name, _ in v.ran] == ["read_doc"]
    assert "exports-need-a-person" in v.journal


async def test_a_rug_pulled_mid_session_is_never_served_and_its_tool_is_blocked() -> None:
    v = await attack("rugpull", "midsession")
    assert not v.read  # the client keeps being served the pinned description
    (ok, _first), (blocked, second) = [(not e, s) for e, s, _ in v.results["read_doc"]]
    assert ok and not blocked and "MCPToolBlocked" in second and "was not sent" in second
    assert [name for name, _ in v.ran] == ["read_doc"]  # the second read never reached it


async def test_a_rug_pulled_between_two_proxy_processes_is_never_served_and_blocked(
        tmp_path: Path) -> None:
    pins = tmp_path / "pins.json"
    case = Case("rugpull", "reconnect", "ignore", "export", "read")
    first = await run_proxy_case(case, pins=pins, before=True)  # pinned on first sight
    assert first.listed["read_doc"] == HONEST and [n for n, _ in first.ran] == ["read_doc"]
    pinned, waiting = read_doc_pins(pins)
    assert pinned is not None and waiting is None
    # the proxy is restarted and meets read_doc redefined, the payload in its description; the
    # operator's word for the reviewed read_doc does not carry over to the new definition
    second = await run_proxy_case(case, pins=pins, proxy_args=("--read-only", "read_doc"))
    assert not second.read  # the client is served the approved text, with a note
    assert second.listed["read_doc"].startswith(HONEST)
    assert "awaits re-approval" in second.listed["read_doc"]
    ((is_error, said, _),) = second.results["read_doc"]
    assert is_error and "MCPToolBlocked" in said and "was not sent" in said
    assert "tether mcp pins approve upstream read_doc" in said  # what a person runs
    assert second.ran == []  # not even the client's own read reached the changed tool
    kept, change = read_doc_pins(pins)
    assert kept == pinned and change is not None  # the change waits for a person
    assert case.payload in str(change.definition["description"])


async def test_without_a_pin_file_a_restarted_proxy_pins_the_changed_tool_afresh() -> None:
    # what --pins is for: pins kept in memory die with the proxy, so the second process trusts
    # the changed definition on first sight and serves it; only the policy is left to stop what
    # it asks for
    v = await run_proxy_case(Case("rugpull", "reconnect", "ignore", "export", "read"))
    assert v.read and v.case.payload in v.listed["read_doc"]
    assert refused_export(v) == "approval_required"


def read_doc_pins(path: Path) -> tuple[Pin | None, Pin | None]:
    """read_doc's pinned and pending definitions in the pin file."""
    store = JSONFilePinStore(path)
    return store.get("upstream", "read_doc"), store.pending("upstream", "read_doc")


@pytest.mark.parametrize("channel", ["oversized", "malformed"])
async def test_an_unfit_definition_is_never_served(channel: str) -> None:
    v = await attack("schema", channel)
    assert not v.read and v.ran == []
    assert all(len(s) < 20_000 for s in v.seen)
    ((is_error, said, _),) = v.results["read_doc"]
    assert is_error and ("not offered" in said or "input schema" in said)


@pytest.mark.parametrize("channel", ["result", "error", "log"])
async def test_a_credential_the_upstream_echoes_is_blanked(channel: str) -> None:
    v = await attack("echo", channel, target="passed")
    assert any("DOCS_API_KEY=****" in s for s in v.seen)  # the echo arrives, blanked
    assert not v.leaked and DOCS_KEY not in v.journal
