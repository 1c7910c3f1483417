"""Span records as OpenTelemetry SDK spans, built once, at the SDK's public constructor.

Why a module of its own: the live sink builds a span for every model and tool call a run
makes, on its worker thread, and ``tether audit export --format otlp`` builds the same spans
from stored events; both go through ``span_maker`` here, so the two cannot build them apart.

Decision: the derivation (``tether.journal.views.spans``) hands a finished span's fields
straight to the maker, with no record in between, and the maker keeps what repeats from span
to span (the scope, the kinds, the unset status, the last parent's and the last trace's
conversion) so a span costs one ``SpanContext`` and one ``ReadableSpan``. Spans are built
through the SDK's own constructors, never by writing their private fields: any exporter or
span processor a user configures receives what the SDK itself would hand it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tether.journal.views import genai as g
from tether.journal.views.span_records import SpanMaker
from tether.tracing import TraceParent

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource


def span_maker(resource: Resource) -> SpanMaker:
    """A maker of SDK ``ReadableSpan``s under ``resource``, for ``SpanDeriver(make=...)``:
    called with ``SpanRecord``'s fields in their order."""
    from opentelemetry.sdk.trace import Event as SpanEvent
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
    from opentelemetry.trace.span import DEFAULT_TRACE_STATE

    from tether._version import __version__

    scope = InstrumentationScope("tether", __version__, g.SCHEMA_URL)
    kinds = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
    unset = Status(StatusCode.UNSET)
    flags = {True: TraceFlags(TraceFlags.SAMPLED), False: TraceFlags(0)}
    # what repeats from one span to the next: a run's spans share a trace and (but the
    # root) a parent; one entry each, so a sink that lives for weeks holds nothing more
    last: list[Any] = [None, None, "", 0]  # parent, its SpanContext, trace id, its int
    # a span's own context, as ``SpanContext(trace, span, False, flags)`` builds it (a tuple
    # of its six fields) without the constructor's defaults and range checks: a digest's
    # ids are in range by construction, and zero (not valid) is checked here
    new: Any = tuple.__new__
    if new(SpanContext, (1, 2, False, flags[True], DEFAULT_TRACE_STATE, True)) != SpanContext(
            1, 2, False, flags[True]):  # pragma: no cover (an SDK that lays it out anew)
        new = None

    def context(parent: TraceParent) -> SpanContext:
        if parent is last[0]:
            found: SpanContext = last[1]
            return found
        found = SpanContext(int(parent.trace_id, 16), int(parent.span_id, 16),
                            is_remote=False, trace_flags=flags[parent.sampled])
        last[0], last[1] = parent, found
        return found

    def make(name: str, own: TraceParent, parent: TraceParent | None, kind: str,
             start_ns: int, end_ns: int, attributes: Any, error: str = "",
             links: tuple[TraceParent, ...] = (),
             events: tuple[tuple[str, int, Any], ...] = ()) -> ReadableSpan:
        trace_id = own.trace_id
        if trace_id == last[2]:
            trace = last[3]
        else:
            trace = last[3] = int(trace_id, 16)
            last[2] = trace_id
        span = int(own.span_id, 16)
        if new is not None and trace and span:
            own_context = new(SpanContext, (trace, span, False, flags[own.sampled],
                                            DEFAULT_TRACE_STATE, True))
        else:
            own_context = SpanContext(trace, span, False, flags[own.sampled])
        return ReadableSpan(
            name=name, context=own_context,
            resource=resource, parent=context(parent) if parent is not None else None,
            attributes=attributes, kind=kinds[kind],
            status=Status(StatusCode.ERROR, error) if error else unset,
            events=[SpanEvent(n, dict(a), timestamp=t) for n, t, a in events]
            if events else (),
            links=[Link(context(link)) for link in links] if links else (),
            start_time=start_ns, end_time=end_ns, instrumentation_scope=scope)

    return make
