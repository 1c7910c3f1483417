"""W3C traceparent parsing and the journal-derived ids: strict, deterministic, distinct."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.tracing import Segment, TraceParent

HEX = "0123456789abcdef"


@given(st.text(HEX, min_size=32, max_size=32), st.text(HEX, min_size=16, max_size=16),
       st.booleans())
def test_a_valid_traceparent_round_trips(trace_id: str, span_id: str, sampled: bool) -> None:
    parsed = TraceParent.parse(TraceParent(trace_id, span_id, sampled).header())
    if set(trace_id) == {"0"} or set(span_id) == {"0"}:
        assert parsed is None
    else:
        assert parsed == TraceParent(trace_id, span_id, sampled)


@given(st.one_of(st.text(max_size=80), st.integers(), st.none(), st.binary(max_size=60)))
def test_anything_else_is_refused_whole(value: object) -> None:
    parsed = TraceParent.parse(value)
    if parsed is not None:  # only the exact version-00 shape gets through
        assert isinstance(value, str) and parsed.header()[:53] == value[:53].lower() == value[:53]


def test_the_shapes_a_hostile_client_sends_are_refused() -> None:
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert TraceParent.parse(good) == TraceParent("4bf92f3577b34da6a3ce929d0e0e4736",
                                                  "00f067aa0ba902b7", True)
    for bad in (good.upper(), "01" + good[2:], good + "-extra", good[:-1], " " + good,
                "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",
                good.replace("-", "_"), good + "\n", "x" * 10_000, b"00-", 17):
        assert TraceParent.parse(bad) is None, bad


@given(st.text(min_size=1, max_size=40), st.integers(1, 10_000), st.integers(1, 10_000))
def test_ids_are_deterministic_and_distinct_by_place(session: str, a: int, b: int) -> None:
    one, other = Segment(session, a), Segment(session, b)
    assert Segment(session, a).model_call(7) == one.model_call(7)
    assert TraceParent.parse(one.root().header()) == one.root()
    if a != b:
        assert one.trace_id != other.trace_id and one.root_span_id != other.root_span_id
    spans = {one.root_span_id, one.model_call(a).span_id, one.model_call(b + 10_001).span_id,
             one.tool_call("call_1").span_id, one.tool_call("call_2").span_id}
    assert len(spans) == 5


def test_a_segment_under_a_parent_joins_the_parents_trace() -> None:
    parent = TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    segment = Segment("s1", 1, parent)
    assert segment.trace_id == parent.trace_id
    assert segment.model_call(2).trace_id == parent.trace_id
    assert segment.root_span_id == Segment("s1", 1).root_span_id  # ids of its own spans hold
