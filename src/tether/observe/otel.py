"""OpenTelemetry export of a session's spans and metrics, derived from its journal.

Why: operators already run collectors; tether should appear in them as any GenAI client does
(``invoke_agent``, ``chat`` and ``execute_tool`` spans, the conventions' client histograms),
with what only tether knows — decisions, approvals, budgets, the chain head — under ``tether.*``.

Decision: the sink is a journal subscriber whose call only queues the event; one worker thread
derives spans and metric points (``tether.journal.views.spans`` / ``.measures``: the same
derivation ``tether audit export --format otlp`` runs on stored events) and hands the spans to
the exporter in batches. Spans are built as SDK ``ReadableSpan`` records with the journal's
own ids and times, never through a tracer: a tracer would invent ids and read the clock. A
failing exporter, a full queue or a bug in derivation is counted (``failures``, ``dropped``)
and logged once, never raised into the run.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import MissingExtra, install_command
from tether.journal.views import genai as g
from tether.journal.views.measures import COUNTED, chat_measures, event_measures
from tether.journal.views.shapes import deriver_class
from tether.journal.views.span_records import SpanRecord, data_of
from tether.observe._bounded import Deadline, bounded
from tether.observe._metrics import Instruments
from tether.observe._sdk import span_maker
from tether.types import Event
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("tether.observe")
BATCH = 512  # spans per export at most
WAKE_AT = 64  # queued events that wake the worker
# a run's last event: exported at once
_LAST = frozenset({EventType.SESSION_END, EventType.SESSION_PAUSED})


def content_enabled(content: bool | None) -> bool:
    """``content`` as given, else the conventions' opt-in environment variable."""
    if content is not None:
        return content
    return os.environ.get(g.CAPTURE_CONTENT_ENV, "").strip().lower() in g.CAPTURE_CONTENT_ON


def tether_resource(service_name: str | None = None) -> Resource:
    """The resource spans are reported under: ``service.name`` (``OTEL_SERVICE_NAME`` or
    "tether" unless given) and the SDK's own attributes."""
    from opentelemetry.sdk.resources import Resource

    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "tether"
    return Resource.create({"service.name": name})


def to_sdk_spans(records: Iterable[SpanRecord], resource: Resource) -> list[ReadableSpan]:
    """Span records as SDK spans, ready for any ``SpanExporter`` (built by the maker the live
    sink builds its spans with)."""
    make = span_maker(resource)
    return [make(r.name, r.context, r.parent, r.kind, r.start_ns, r.end_ns, r.attributes,
                 r.error, r.links, r.events) for r in records]


class OTelSink:
    """Send a session's spans (and, given a meter provider, its metrics) to OpenTelemetry.

    Attach it to a recipe (``Agent(telemetry=[OTelSink(...)])``, which also propagates trace
    context) or to one session (``session.events.subscribe(sink)``). ``exporter`` is any SDK
    ``SpanExporter``; with none, spans go over OTLP/HTTP to ``endpoint``, else where
    OpenTelemetry's exporter sends by default (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, then http://localhost:4318). ``content`` puts the
    conversation on the spans (default: the conventions' opt-in environment variable).
    ``shape="acs"`` sends OWASP ACS Trace's spans instead of the GenAI conventions' (no model
    call spans there, so no model-call duration or token histograms either).
    """

    signal = "otel"  # what it sends (an ACS Guardian's ServerHello says so)

    def __init__(self, exporter: SpanExporter | None = None, *, endpoint: str | None = None,
                 meter_provider: MeterProvider | None = None, content: bool | None = None,
                 service_name: str | None = None, max_queue: int = 10_000,
                 linger: float = 1.0, shape: str = "default") -> None:
        if exporter is None:
            exporter = _otlp_exporter(endpoint)
        self.exporter = exporter
        self.resource = tether_resource(service_name)
        self.content = content_enabled(content)
        self.shape = shape
        self._deriver = deriver_class(shape)  # (checks the shape)
        self._instruments = Instruments(meter_provider) if meter_provider is not None else None
        self._make = self._maker()  # what the worker builds a finished span as
        # events for the worker: a deque (appends are atomic) and a wake-up, so queuing an
        # event takes no lock unless the worker sleeps
        self._pending: deque[Event | threading.Event | None] = deque()
        self._max_queue = max_queue
        self._linger = linger  # seconds an event waits for its batch at most
        self._wake = threading.Event()
        self._derivers: dict[str, Any] = {}  # session -> its deriver (shapes.deriver_class)
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._warned = False
        self.failures = 0  # exports and derivations that failed
        self.dropped = 0  # events not queued because the queue was full (or the sink closed)
        self.exported = 0  # spans the exporter accepted

    def __repr__(self) -> str:
        return (f"OTelSink({type(self.exporter).__name__}, exported={self.exported}, "
                f"failures={self.failures}, dropped={self.dropped})")

    def __call__(self, event: Event) -> None:
        if self._closed or len(self._pending) >= self._max_queue:
            self.dropped += 1
            if not self._closed:
                self._warn("its queue is full; events are being dropped")
            return
        if self._worker is None:
            self._start()
        pending = self._pending
        pending.append(event)
        # the worker is woken per batch, not per event (a wake-up is a thread switch), and at
        # a run's end or pause; what is left waits at most ``linger`` seconds
        if (len(pending) >= WAKE_AT or event.type in _LAST) and not self._wake.is_set():
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="tether-otel",
                                                daemon=True)
                self._worker.start()

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every event queued so far is exported; False if ``timeout`` ran out."""
        if self._worker is None:
            return True
        done = threading.Event()
        self._pending.append(done)
        self._wake.set()
        return done.wait(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Export what is queued, stop the worker and shut the exporter down, all within
        ``timeout`` seconds in total: what is still unsent then is lost, as with a collector
        that is down (the worker is a daemon thread: it never holds the process's exit)."""
        if self._closed:
            return
        deadline = Deadline.after(timeout)
        self.flush(deadline.left())
        self._closed = True
        if self._worker is not None:
            self._pending.append(None)
            self._wake.set()
            self._worker.join(deadline.left())
        # shutting an OTLP exporter down also cuts its retries short; it runs even when the
        # deadline has passed, but is waited for only until then
        if not bounded(self.exporter.shutdown, deadline, "otel-shutdown"):
            self.failures += 1

    def __enter__(self) -> OTelSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the worker ---------------------------------------------------------------------------

    def _work(self) -> None:
        batch: list[ReadableSpan] = []
        pending, wake = self._pending, self._wake
        while True:
            wake.wait(self._linger)
            wake.clear()
            derive, popleft = self._derive, pending.popleft
            while pending:
                item = popleft()
                if item is None:
                    self._export(batch)
                    return
                if type(item) is not Event and isinstance(item, threading.Event):
                    self._export(batch)  # (an event's own type: one check for the usual item)
                    batch = []
                    item.set()
                    continue
                try:
                    batch.extend(derive(item))
                except Exception as exc:
                    self.failures += 1
                    self._warn(f"deriving spans failed ({type(exc).__name__}: {exc})")
                if len(batch) >= BATCH:
                    self._export(batch)
                    batch = []
            self._export(batch)
            batch = []

    def _maker(self) -> Any:
        """SDK spans, built as the deriver finishes them; with metrics, a ``chat`` span's
        histogram points recorded as it is built (from the same attributes and times)."""
        make = span_maker(self.resource)
        instruments = self._instruments
        if instruments is None:
            return make

        def make_and_measure(name: str, context: Any, parent: Any, kind: str, start_ns: int,
                             end_ns: int, attributes: Any, *rest: Any) -> ReadableSpan:
            span: ReadableSpan = make(name, context, parent, kind, start_ns, end_ns,
                                      attributes, *rest)
            instruments.measure(chat_measures(attributes, start_ns, end_ns))
            return span

        return make_and_measure

    def _derive(self, event: Event) -> list[ReadableSpan]:
        deriver = self._derivers.get(event.session_id)
        if deriver is None:
            deriver = self._derivers[event.session_id] = self._deriver(
                event.session_id, content=self.content, make=self._make)
        instruments = self._instruments
        if instruments is None or event.type not in COUNTED:
            spans: list[ReadableSpan] = deriver.feed(event)
        else:  # decoded once, for the spans and the counters
            data = data_of(event)
            spans = deriver.feed(event, data)
            instruments.measure(event_measures(event.type, data))
        if not deriver.open:  # its segment ended
            del self._derivers[event.session_id]
        return spans

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        if self._instruments is not None:
            try:
                self._instruments.add_sums()
            except Exception as exc:
                self.failures += 1
                self._warn(f"recording metrics failed ({type(exc).__name__}: {exc})")
        if not batch:
            return
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self.exporter.export(batch)
        except Exception as exc:
            self.failures += 1
            self._warn(f"its exporter raised {type(exc).__name__}: {exc}")
            return
        if result is SpanExportResult.SUCCESS:
            self.exported += len(batch)
        else:
            self.failures += 1
            self._warn(f"its exporter failed to export {len(batch)} spans")

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("tether telemetry: %s (counted in OTelSink.failures / .dropped; the "
                        "run goes on)", what)


def signal_url(base: str, signal: str) -> str:
    """The URL of ``signal`` ("traces", "metrics") under a collector's base URL, as the OTLP
    specification builds it from ``OTEL_EXPORTER_OTLP_ENDPOINT``: ``/v1/{signal}`` appended
    (once: a base that already ends with it is taken as that URL)."""
    path = f"/v1/{signal}"
    base = base.rstrip("/")
    return base if base.endswith(path) else base + path


def otlp_span_exporter(url: str | None = None) -> SpanExporter:
    """OTLP/HTTP to exactly ``url`` (a signal URL, used as is), else where OpenTelemetry's own
    exporter sends by default (its environment variables, then http://localhost:4318)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise MissingExtra(f"OTelSink needs OpenTelemetry: {install_command('otel')}") from exc
    return OTLPSpanExporter(endpoint=url)


def _otlp_exporter(endpoint: str | None) -> SpanExporter:
    """OTLP/HTTP to the collector at ``endpoint`` (a base URL, or its ``/v1/traces`` URL)."""
    return otlp_span_exporter(None if endpoint is None else signal_url(endpoint, "traces"))
