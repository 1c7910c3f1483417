"""tether.observe: telemetry derived from the journal — OpenTelemetry spans and metrics, and
security events in OCSF for a SIEM.

Every export here is a view over the journal (``tether.journal.views``): produced live by a
subscriber (``Agent(telemetry=[...])`` or ``session.events.subscribe(sink)``) and again, after
the fact, from the store (``tether audit export --format otlp|ocsf``), and the two agree. A sink
never fails a run: what it cannot export is counted and logged. OpenTelemetry itself is
imported only when an ``OTelSink`` is built (``pip install -e '.[otel]'``); the
``SIEMSink`` needs nothing beyond the standard library.
"""

from tether.observe.configure import Telemetry, configure
from tether.observe.otel import OTelSink, to_sdk_spans
from tether.observe.siem import SIEMSink
from tether.observe.syslog import SyslogTarget

__all__ = ["OTelSink", "SIEMSink", "SyslogTarget", "Telemetry", "configure", "to_sdk_spans"]
