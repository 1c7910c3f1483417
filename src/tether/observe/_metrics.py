"""The sink's metric instruments, and how its points reach them with the fewest SDK calls.

Why: recording a point through the SDK (``Counter.add``, ``Histogram.record``) costs more than
deriving it — a measurement object, the clock, the current context, the exemplar filter, and
per reader the attribute set's key and the aggregation's lock. The sink records on its worker
thread, beside the run, but every thread's work counts.

Decision: a counter's points are summed per attribute set in the sink and added once per batch
(when the batch's spans are exported): a sum of sums is the same sum, so every collection
shows the same values, at most one batch (``OTelSink``'s linger) later. A histogram's points
are recorded one by one — its count, sum, buckets, minimum and maximum need every value, and
the API takes one at a time — but without the objects around them (``measures.Measure``) and,
for the SDK's histograms, without re-cleaning the attributes the sink built (``_record``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from tether.journal.views import genai as g
from tether.journal.views.measures import Measure
from tether.observe._record import adder, recorder

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

_COUNTERS = {g.DECISIONS: ("{decision}", "Tool call decisions by effect."),
             g.STOPS: ("{run}", "Runs ended or paused, by reason."),
             g.APPROVALS: ("{approval}", "Approvals by outcome."),
             g.OVERRUNS: ("{call}", "Model calls past their budget.")}


class Instruments:
    """The metric instruments, made once from a meter provider; counters summed per batch."""

    def __init__(self, provider: MeterProvider) -> None:
        from tether._version import __version__

        meter = provider.get_meter("tether", __version__, schema_url=g.SCHEMA_URL)
        self._records: dict[str, Callable[..., None]] = {
            g.TOKEN_USAGE: recorder(meter.create_histogram(
                g.TOKEN_USAGE, unit="{token}", description="Number of input and output tokens "
                "used.", explicit_bucket_boundaries_advisory=g.TOKEN_BUCKETS)),
            g.OPERATION_DURATION: recorder(meter.create_histogram(
                g.OPERATION_DURATION, unit="s", description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=g.DURATION_BUCKETS)),
            g.ESTIMATE_ERROR: recorder(meter.create_histogram(
                g.ESTIMATE_ERROR, unit="1", description="(estimated - reported) / reported "
                "input tokens of a model call")),
        }
        self._adds: dict[str, Callable[..., None]] = {
            name: adder(meter.create_counter(name, unit=unit, description=description))
            for name, (unit, description) in _COUNTERS.items()}
        # counters' points since the last batch: (name, attributes' items) -> [sum, attributes]
        self._sums: dict[tuple[str, tuple[tuple[str, Any], ...]], list[Any]] = {}

    def measure(self, measures: Iterable[Measure]) -> None:
        """Record histograms' points now; sum counters' until ``add_sums``."""
        records, sums = self._records, self._sums
        for name, value, attributes in measures:
            record = records.get(name)
            if record is not None:
                record(value, attributes)
                continue
            key = (name, tuple(attributes.items()))
            summed = sums.get(key)
            if summed is None:
                sums[key] = [value, attributes]
            else:
                summed[0] += value

    def add_sums(self) -> None:
        """Add each counter's sums to it, once per attribute set."""
        if not self._sums:
            return
        sums, self._sums = self._sums, {}
        for (name, _), (value, attributes) in sums.items():
            self._adds[name](value, attributes)
