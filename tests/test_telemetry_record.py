"""The sink's metric recorders (``tether.observe._record``) give a reader exactly the points
``Histogram.record`` and ``Counter.add`` give it, for every value and attribute set the SDK
accepts, drops or cleans; they are the fast path for the SDK's instruments and plain ``record``
or ``add`` for anyone else's."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tether.observe._record import adder, recorder

values = st.one_of(st.sampled_from([math.inf, -math.inf, math.nan, -0.0, -1, 0]),
                   st.integers(-10, 10**9), st.floats(allow_nan=True, allow_infinity=True))
plain = st.one_of(st.text(max_size=8), st.booleans(), st.integers(-5, 5), st.floats(0, 1))
uncleaned = st.one_of(st.lists(st.text(max_size=3), max_size=2), st.none())  # cleaned to a
keys = st.one_of(st.sampled_from(["gen_ai.operation.name", "gen_ai.token.type", "k"]),
                 st.just(""))  # tuple / kept; an empty key is dropped
attribute_sets = st.dictionaries(keys, st.one_of(plain, plain, uncleaned), max_size=4)


def _points(reader: InMemoryMetricReader) -> list[Any]:
    data = reader.get_metrics_data()
    if data is None:
        return []
    return [dataclasses.replace(point, start_time_unix_nano=0, time_unix_nano=0)
            for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            for point in m.data.data_points]  # (the clock's fields: the two runs differ)


def _instrument(reader: InMemoryMetricReader, counter: bool) -> Any:
    meter = MeterProvider(metric_readers=[reader]).get_meter("tether")
    if counter:
        return meter.create_counter("c", unit="{call}")
    return meter.create_histogram("h", unit="s",
                                  explicit_bucket_boundaries_advisory=[0.0, 0.5, 1.0, 100.0])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(st.tuples(values, attribute_sets), max_size=12))
def test_recorded_points_are_the_sdks_own(counter: bool,
                                          points: list[tuple[float, dict[str, Any]]]) -> None:
    fast_reader, sdk_reader = InMemoryMetricReader(), InMemoryMetricReader()
    fast_instrument, sdk_instrument = (_instrument(r, counter) for r in (fast_reader, sdk_reader))
    fast = adder(fast_instrument) if counter else recorder(fast_instrument)
    sdk = sdk_instrument.add if counter else sdk_instrument.record
    for value, attributes in points:
        fast(value, dict(attributes))
        sdk(value, dict(attributes))
    assert _points(fast_reader) == _points(sdk_reader)


def test_the_sdks_instruments_skip_the_cleaning_and_others_get_theirs() -> None:
    histogram, counter = (_instrument(InMemoryMetricReader(), c) for c in (False, True))
    assert recorder(histogram) != histogram.record  # the fast path is the one in use
    assert adder(counter) != counter.add
    meter = NoOpMeterProvider().get_meter("tether")
    noop_histogram, noop_counter = meter.create_histogram("h"), meter.create_counter("c")
    assert recorder(noop_histogram) == noop_histogram.record
    assert adder(noop_counter) == noop_counter.add
