"""tether.observe: telemetry derived from the journal — OpenTelemetry spans and metrics.

Every export here is a view over the journal (``tether.journal.views``): produced live by a
subscriber (``Agent(telemetry=[...])`` or ``session.events.subscribe(sink)``) and again, after
the fact, from the store (``tether audit export --format otlp``), and the two agree. A sink
never fails a run: what it cannot export is counted and logged. OpenTelemetry itself is
imported only when a sink is built (``pip install 'tether[otel]'``).
"""

from tether.observe.configure import Telemetry, configure
from tether.observe.otel import OTelSink, to_sdk_spans

__all__ = ["OTelSink", "Telemetry", "configure", "to_sdk_spans"]
