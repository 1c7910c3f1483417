"""``tether.observe.configure()``: the telemetry sinks an operator's settings ask for.

Why: operators configure OpenTelemetry through its standard environment variables
(``OTEL_EXPORTER_OTLP_ENDPOINT`` and its per-signal variants, ``OTEL_SERVICE_NAME``, the GenAI
content switch) and a SIEM through a file or a syslog address (``TETHER_SIEM_PATH``,
``TETHER_SIEM_SYSLOG``); a deployment should get tether's telemetry from the same settings
without code per sink.
``configure()`` reads arguments first, then the environment.

Decision: it builds and returns a ``Telemetry`` bundle — the sinks to hand to
``Agent(telemetry=...)`` and whatever they own (a meter provider) — and installs nothing
process-wide: no global tracer provider, no hidden default that a second agent in the same
process would inherit, not even the SDK's exit hook (the bundle's ``close`` is bounded; the
hook would wait at exit on a collector that never answers). With nothing configured the bundle
is empty and telemetry is off, at no cost. Endpoints resolve as the OTLP specification says: a
signal's own variable (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is the URL, used as is; only
the generic one gets ``/v1/traces`` or ``/v1/metrics`` appended — appending to the former sent
every span to a path no collector serves, counted only as failures.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.journal.views.shapes import check_shape
from tether.observe._bounded import Deadline, bounded
from tether.types import Event

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

Sink = Callable[[Event], object]


@dataclass(frozen=True, slots=True)
class Telemetry:
    """Configured sinks (iterate it, or pass it as ``Agent(telemetry=...)``) and what they own."""

    sinks: tuple[Sink, ...] = ()
    meter_provider: Any = None  # an SDK MeterProvider this bundle made and must shut down

    def __iter__(self) -> Iterator[Sink]:
        return iter(self.sinks)

    def __bool__(self) -> bool:
        return bool(self.sinks)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every sink has exported what it was given, ``timeout`` seconds in total;
        False if one did not finish in time."""
        deadline = Deadline.after(timeout)
        done = all([getattr(sink, "flush", lambda _t: True)(deadline.left())
                    for sink in self.sinks])
        if self.meter_provider is not None:
            provider = self.meter_provider
            done = bounded(lambda: provider.force_flush(deadline.millis()), deadline,
                           "metrics-flush") and done
        return done

    def close(self, timeout: float = 30.0) -> None:
        """Flush and shut every sink (and the meter provider) down, ``timeout`` seconds in
        total: what is unsent by then is lost, as with a collector that is down."""
        deadline = Deadline.after(timeout)
        for sink in self.sinks:
            close = getattr(sink, "close", None)
            if close is not None:
                close(deadline.left())
        if self.meter_provider is not None:
            provider = self.meter_provider
            bounded(lambda: provider.shutdown(deadline.millis()), deadline, "metrics-shutdown")

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def configure(*, endpoint: str | None = None, exporter: SpanExporter | None = None,
              metrics: bool | None = None, content: bool | None = None,
              service_name: str | None = None, siem_path: str | None = None,
              syslog: str | None = None, redact_keys: Collection[str] = (),
              shape: str | None = None,
              environ: Mapping[str, str] | None = None) -> Telemetry:
    """Sinks from the arguments, else from the environment.

    Spans go to ``exporter``, or over OTLP/HTTP as the OTLP specification resolves the
    endpoint: ``endpoint`` (a collector's base URL) + ``/v1/traces``, else
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` used as is, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
    ``/v1/traces``. Metrics (unless ``metrics=False``) likewise go to ``endpoint`` +
    ``/v1/metrics``, else ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` as is, else the generic
    variable + ``/v1/metrics``; with none of those, no metrics. ``content`` and
    ``service_name`` are as for ``OTelSink``. OCSF security events go to the JSON-lines file
    ``siem_path`` (else ``TETHER_SIEM_PATH``) and/or ``syslog`` (else ``TETHER_SIEM_SYSLOG``:
    ``udp://host:port`` or ``tcp://host:port``), with ``redact_keys`` (else the comma-separated
    ``TETHER_SIEM_REDACT_KEYS``) masked. ``shape`` (else ``TETHER_TELEMETRY_SHAPE``, else
    ``default``) is both sinks' shape: ``acs`` for OWASP ACS Trace's spans and OCSF classes.
    With no destination at all the result is empty: telemetry off."""
    env = os.environ if environ is None else environ
    shape = check_shape(shape or env.get("TETHER_TELEMETRY_SHAPE") or "default")
    sinks: list[Sink] = []
    siem_path = siem_path or env.get("TETHER_SIEM_PATH") or None
    syslog = syslog or env.get("TETHER_SIEM_SYSLOG") or None
    if siem_path or syslog:
        from tether.observe.siem import SIEMSink

        keys = redact_keys or [k.strip() for k in env.get("TETHER_SIEM_REDACT_KEYS", "").split(",")
                               if k.strip()]
        sinks.append(SIEMSink(siem_path, syslog=syslog, redact_keys=list(keys), shape=shape))
    traces = _signal_endpoint(endpoint, env, "traces")
    if exporter is None and traces is None:
        return Telemetry(tuple(sinks))
    from tether.observe.otel import OTelSink, otlp_span_exporter, tether_resource

    provider = None
    points = _signal_endpoint(endpoint, env, "metrics")
    if points is not None and metrics is not False:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=points))
        # no exit hook of the SDK's own: the bundle owns the provider and its close() is
        # bounded; the SDK's hook would wait at exit on a collector that never answers
        provider = MeterProvider(metric_readers=[reader], resource=tether_resource(service_name),
                                 shutdown_on_exit=False)
    spans = exporter if exporter is not None else otlp_span_exporter(traces)
    sinks.append(OTelSink(spans, meter_provider=provider, content=content,
                          service_name=service_name, shape=shape))
    return Telemetry(tuple(sinks), provider)


def _signal_endpoint(endpoint: str | None, env: Mapping[str, str], signal: str) -> str | None:
    """Where ``signal`` goes, as the OTLP specification resolves it: the ``endpoint`` argument
    (a base URL) with the signal's path; else the signal's own variable, used as is; else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` with the signal's path; else nowhere (telemetry off)."""
    from tether.observe.otel import signal_url

    if endpoint:
        return signal_url(endpoint, signal)
    own = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if own:
        return own
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return signal_url(base, signal) if base else None
