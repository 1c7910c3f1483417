"""A value a policy masks in the journal is in no event, whatever its length: not in the tool's
output (``tool.result``), not in what the model is sent or says (``model.request``,
``model.response``), not in ``audit show --json`` or an export — through an agent or the Gateway.
A value of 4 characters or more is absent as a substring; a shorter one as a whole token (a
"7" inside "1737" is another number). The journal writes ``[masked]`` for it."""

from __future__ import annotations

import asyncio
import json
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import Agent, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.cli import main
from tether.runtime.chokepoint.gateway import Gateway
from tether.store.memory import MemoryStore
from tether.types import Event

CARD = "4111111111111111"
# identifiers and names the journal reads back; a masked value is free text everywhere else
IDENTIFIERS = {"id", "name", "tool", "tools", "status", "type", "role", "effect", "signature",
               "call_hash", "recipe", "finish_reason", "fields", "mask_in", "model", "agent"}


@tool
def charge(card: str, cvv: str) -> str:
    """Charge a card."""
    return f"charged {card[-4:]}; cvv {cvv} ok ({cvv})"


@tool
def charge_int(card: str, cvv: int) -> str:
    """Charge a card."""
    return f"charged {card[-4:]}; cvv {cvv} ok"


class MaskCvv:
    inline = True

    def evaluate(self, *_: Any) -> Decision:
        return Decision(Effect.MASK, "card data", "m", fields=("cvv",),
                        mask_in=("journal", "output"))


def _free(value: Any, key: str = "", inside: bool = False) -> Iterator[Any]:
    """Every string an event's data carries as free text, and every number among a call's
    arguments."""
    if isinstance(value, str):
        if inside or not (key in IDENTIFIERS or key.endswith("_id")):
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _free(v, k, inside or k == "arguments")
    elif isinstance(value, list):
        for v in value:
            yield from _free(v, key, inside)
    elif inside and isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def shows(value: str, data: Any) -> list[Any]:
    """Where ``value`` shows in ``data``: as a substring (4 characters or more) or a whole
    token (fewer), or as a number equal to it among a call's arguments."""
    token = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
    return [s for s in _free(data) if (json.dumps(s) == value if not isinstance(s, str)
                                       else value in s if len(value) >= 4
                                       else token.search(s))]


def _script(shown: str, argument: Any, name: str = "charge") -> ScriptedModel:
    return ScriptedModel([
        ModelResponse(text=f"checking {shown} now", tool_calls=(
            ToolCall("c1", name, {"card": CARD, "cvv": argument}),)),
        f"Your cvv {shown} was accepted ({shown})."])


def _run(shown: str, argument: Any, name: str, store: Any = None) -> tuple[list[Event], str]:
    tools = [charge if name == "charge" else charge_int]
    agent = Agent(model=_script(shown, argument, name), reasoning=ReAct(), tools=tools,
                  policy=MaskCvv(), store=store)
    session = agent.session("charge the card")
    result = session.run()
    return session.replay(), result.answer


VALUES = st.text(alphabet=string.digits + "abcdef", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(VALUES)
def test_a_masked_string_of_any_length_is_in_no_event(value: str) -> None:
    events, _ = _run(value, value, "charge")
    for event in events:
        assert shows(value, event.data) == [], (event.type, event.data)
    assert any("[masked]" in s for e in events if e.type == "tool.result" for s in _free(e.data))
    assert "[redacted]" not in json.dumps([e.data for e in events])


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_a_masked_integer_of_any_length_is_in_no_event(value: int) -> None:
    events, _ = _run(str(value), value, "charge_int")
    for event in events:
        assert shows(str(value), event.data) == [], (event.type, event.data)


def test_a_short_value_is_blanked_as_a_token_not_inside_other_words() -> None:
    events, _ = _run("7", "7", "charge")
    result = next(e.data["content"] for e in events if e.type == "tool.result")
    assert result == "charged 1111; cvv [masked] ok ([masked])"  # "1111" keeps its digits
    end = events[-1].data
    assert end["answer"] == "Your cvv [masked] was accepted ([masked])."
    events, _ = _run("11", "11", "charge")
    result = next(e.data["content"] for e in events if e.type == "tool.result")
    assert result == "charged 1111; cvv [masked] ok ([masked])"
    from tether.journal.redaction import HiddenValues

    blank = HiddenValues(["7", "737"]).blank
    assert blank("cvv 737. code:7, (7) 7_ v7 1.7 3,737 1737 7") == \
        "cvv [masked]. code:[masked], ([masked]) 7_ v7 1.7 3,737 1737 [masked]"


@pytest.mark.parametrize("value", ["7", "737", "4242"])
def test_show_json_and_export_carry_no_masked_value(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    events, _ = _run(value, value, "charge", store=url)
    sid = events[0].session_id
    capsys.readouterr()
    assert main(["audit", "show", sid, "--json", "--store", url]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["chain"]["verified"] is True
    assert main(["audit", "export", "--session", sid, "--store", url]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    exported = [line for line in lines if "data" in line]  # the trailer has none
    assert len(exported) == len(events) == len(shown["events"])
    for record in [*shown["events"], *exported]:
        assert shows(value, record["data"]) == [], record
    assert main(["audit", "verify", "--store", url]) == 0


@settings(max_examples=40, deadline=None)
@given(st.one_of(VALUES, st.integers(min_value=0, max_value=10**9)))
def test_through_the_gateway_a_masked_value_is_in_no_event(given_value: str | int) -> None:
    value = str(given_value)
    store = MemoryStore()
    gateway = Gateway([charge, charge_int], policy=MaskCvv(), client="pos", store=store)
    name = "charge" if isinstance(given_value, str) else "charge_int"

    async def call() -> str:
        result = await gateway.call(name, {"card": CARD, "cvv": given_value})
        return result.content

    try:
        content = asyncio.run(call())
        gateway.close()
        assert shows(value, content) == [] and "[masked]" in content
        events = store.read(gateway.id)
        assert events and any(e.type == "tool.result" for e in events)
        for event in events:
            assert shows(value, event.data) == [], (event.type, event.data)
    finally:
        store.close()


def test_a_journal_written_with_the_old_marker_still_verifies_and_reads_as_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Journals before ``[masked]`` wrote ``[redacted]``: they verify, what-if calls their
    masked arguments out, and a call rebuilt from them is refused rather than run."""
    from tether.journal import redaction
    from tether.journal.chain import verify_chain
    from tether.journal.views.whatif import what_if
    from tether.runtime.chokepoint import effects

    monkeypatch.setattr(redaction, "MASKED", "[redacted]")
    monkeypatch.setattr(effects, "MASKED", "[redacted]")
    events, _ = _run("737", "737", "charge")
    monkeypatch.undo()
    text = json.dumps([e.data for e in events])
    assert "[redacted]" in text and "[masked]" not in text
    assert all(shows("737", e.data) == [] for e in events)  # a timing float may hold "737"
    assert verify_chain(events) is None

    class DenyCharges:
        def evaluate(self, *_: Any) -> Decision:
            return Decision(Effect.DENY, "no charges", "d")

    (change,) = what_if(events, DenyCharges())
    assert change.masked == ("cvv",)
    decided = next(e.data for e in events if e.type == "tool.decision")
    assert effects.is_hidden(decided["arguments"])
