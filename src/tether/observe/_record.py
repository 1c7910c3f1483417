"""A metric point handed to the SDK as ``Histogram.record`` hands it, minus the cleaning.

Why: a chat span gives three or four histogram points (its duration, its input and output
tokens, the estimate's error), and ``Histogram.record`` costs about 43 k instructions each
before any reader sees them — most of it in ``Measurement``'s constructor cleaning the
attributes (one recursive ``_clean_attribute_value`` call and several ABC checks per key and
value). The sink builds those attributes itself, fresh for every point, with plain values
(``str``, ``bool``, ``int``, ``float``), on which cleaning is a copy.

Decision: for the SDK's own instruments, ``recorder`` records as ``Histogram.record`` does
(``adder`` as ``Counter.add``, for the counters' sums) — the meter's enabled flag, the same
finite and non-negative checks, the clock, the current context, one ``Measurement`` handed to
the instrument's measurement consumer (the exemplar filter and every reader's storage,
unchanged) — but builds the ``Measurement`` with its fields as its constructor would leave
them (a copy of the attributes) instead of cleaning them. Anything else goes through the SDK's
own method: an instrument that is not the SDK's, a value the SDK would warn about and drop, an
attribute that is not plain. At construction the fast measurement is checked against the
constructor's; an SDK that lays ``Measurement`` out differently gets the plain method. Readers
receive equal measurements, so exported points are identical (``tests/test_telemetry_record.py``
holds them to it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

Record = Callable[[float, Mapping[str, Any]], None]
_PLAIN = frozenset({str, bool, int, float})
_FIELDS = ("value", "time_unix_nano", "instrument", "context", "attributes")


def recorder(histogram: Any) -> Record:
    """``histogram.record`` (value, attributes), or its equivalent without the cleaning when
    ``histogram`` is the SDK's."""
    return _fast(histogram, "record")


def adder(counter: Any) -> Record:
    """``counter.add`` (value, attributes), or its equivalent without the cleaning when
    ``counter`` is the SDK's (its ``add`` checks and measures exactly as ``record`` does)."""
    return _fast(counter, "add")


def _fast(instrument: Any, method: str) -> Record:
    slow: Record = getattr(instrument, method)
    try:
        from dataclasses import fields
        from time import time_ns

        from opentelemetry.context import Context, get_current
        from opentelemetry.sdk.metrics._internal.instrument import Counter, Histogram
        from opentelemetry.sdk.metrics._internal.measurement import Measurement

        sdk = Histogram.record if method == "record" else Counter.add
        if getattr(type(instrument), method, None) is not sdk \
                or tuple(f.name for f in fields(Measurement)) != _FIELDS:
            return slow
        consume = instrument._measurement_consumer.consume_measurement
        enabled = instrument._is_enabled
    except (ImportError, AttributeError, TypeError):  # pragma: no cover (another SDK)
        return slow
    new = object.__new__
    set_field = object.__setattr__

    def measurement(value: float, time: int, context: Any, attributes: dict[str, Any]) -> Any:
        built = new(Measurement)
        set_field(built, "__dict__", {"value": value, "time_unix_nano": time,
                                      "instrument": instrument, "context": context,
                                      "attributes": attributes})
        return built

    probe: dict[str, Any] = {"a": "b", "n": 1, "f": 0.5, "t": True}
    context = Context()
    if measurement(1.5, 7, context, dict(probe)) != Measurement(1.5, 7, instrument, context,
                                                                 probe):  # pragma: no cover
        return slow
    isfinite, plain = math.isfinite, _PLAIN

    def record(value: float, attributes: Mapping[str, Any]) -> None:
        if not enabled() or not isfinite(value) or value < 0:
            slow(value, attributes)  # (it passes to the no-op, or warns and drops)
            return
        for key, item in attributes.items():
            if type(item) not in plain or type(key) is not str or not key:
                slow(value, attributes)  # cleaned (and logged) as the SDK cleans
                return
        consume(measurement(value, time_ns(), get_current(), dict(attributes)))

    return record
