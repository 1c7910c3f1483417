"""The ACS wire's canonical form is RFC 8785's, byte for byte, however it is written.

``tether.serve.acs.jcs`` writes plain values (strings, small integers, booleans, null, lists and
objects of them) with the standard library's C encoder instead of the pure-Python ``rfc8785``:
these tests hold it to ``rfc8785.dumps`` on every value hypothesis can build — floats, large
integers, astral and control characters, lone surrogates, non-string keys included, where the
two must also fail alike — and check both halves of the mechanism: plain values never reach
``rfc8785`` (the saving is real), and each kind of value the C encoder would write differently
always does (the fallback is not optional).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import import_or_unavailable

rfc8785 = import_or_unavailable("rfc8785", "acs")

from tether.serve.acs import jcs  # noqa: E402
from tether.serve.acs.wire import AcsRefused, canonical  # noqa: E402

# every code point, surrogates and controls included
CHARACTERS = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
TEXT = st.text(CHARACTERS, max_size=12) | st.sampled_from(
    ["", "a", "\ue000", "\U0001f600", "\ud800", '"', "\\", "\x7f", "\x1f", "\u2028", "é"])
SCALARS = (st.none() | st.booleans() | TEXT | st.integers()
           | st.integers(-(2**53) - 2, 2**53 + 2) | st.floats()
           | st.sampled_from([0.0, -0.0, 1.0, 1e21, 1e-7, 5e-324, 2.0**53, 0.1]))
KEYS = TEXT | st.sampled_from([1, None, True, 2.5])
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(KEYS, inner, max_size=4), max_leaves=24)


def _outcome(write: Any, value: Any) -> bytes | type[BaseException]:
    try:
        return write(value)  # type: ignore[no-any-return]
    except (ValueError, TypeError, RecursionError) as exc:
        return type(exc)


@settings(max_examples=1500, deadline=None)
@given(VALUES)
@example({"\ue000": 1, "\U0001f600": 2})  # UTF-16 puts the astral key first; code points don't
@example({"a": [1.0, 2**53, -(2**53) + 1]})
@example({"\ud800": 1, "b": 2})
@example({1: "a"})
def test_the_canonical_form_is_rfc8785s_byte_for_byte(value: Any) -> None:
    assert _outcome(jcs.dumps, value) == _outcome(rfc8785.dumps, value)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.text() | st.integers(-jcs.SAFE, jcs.SAFE),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=24))
def test_plain_values_never_reach_rfc8785(value: Any) -> None:
    want = rfc8785.dumps(value)
    if jcs._ASTRAL.search(want.decode()):  # an astral character: rfc8785's by design
        return
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(rfc8785, "dumps", _unreachable)
        assert jcs.dumps(value) == want


def _unreachable(value: Any) -> bytes:
    raise AssertionError("a plain value went to rfc8785")


ENVELOPE = {"jsonrpc": "2.0", "id": "7", "method": "steps/toolCallRequest", "params": {
    "acs_version": "0.1.0", "request_id": "0b7c", "timestamp": "2026-09-09T12:00:00Z",
    "metadata": {"session_id": "s-1", "agent_id": "a"},
    "payload": {"tool": {"name": "lookup"}, "arguments": {"id": {"value": "c-1\n\"é\""}}}}}


@pytest.mark.parametrize("odd", [
    1.0, 0.1, 1e21, 2**53, -(2**53), {1: "x"}, {"\U0001f600": 1, "\ue000": 2}, "\U0001f600",
    ("x", 2.5), "\ud800", True.__class__, {"k": frozenset()}])
def test_what_the_c_encoder_would_write_otherwise_goes_to_rfc8785(
        odd: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    real = rfc8785.dumps
    monkeypatch.setattr(rfc8785, "dumps", lambda value: asked.append(value) or real(value))
    value = {**ENVELOPE, "extra": [odd]}
    assert _outcome(jcs.dumps, value) == _outcome(real, value)
    assert asked == [value]


def test_nesting_past_the_depth_goes_to_rfc8785(monkeypatch: pytest.MonkeyPatch) -> None:
    deep: Any = "x"
    for _ in range(jcs.DEPTH + 1):
        deep = [deep]
    asked: list[Any] = []
    real = rfc8785.dumps
    monkeypatch.setattr(rfc8785, "dumps", lambda value: asked.append(value) or real(value))
    assert jcs.dumps(deep) == real(deep) and asked == [deep]
    assert jcs.dumps(deep[0]) == real(deep[0]) and len(asked) == 1  # DEPTH deep: fast


def test_the_wire_refuses_what_rfc8785_cannot_write() -> None:
    for value in (float("nan"), 2**60, {"\ud800": 1}):
        with pytest.raises(AcsRefused) as refused:
            canonical({**ENVELOPE, "extra": value})
        assert refused.value.reason == "not_canonical"
