"""Stored sessions as OTLP: the same spans the live ``OTelSink`` sent, derived again.

Why: a trace that was never sent (telemetry was off, the collector was down) or that a
collector has since dropped can be produced again from the journal, for any past session —
``tether audit export --format otlp`` writes it as OTLP/JSON lines or posts it to a collector.

Decision: OTLP/JSON as its specification defines it — the protobuf messages' JSON mapping with
trace and span ids as hex strings (not protobuf JSON's base64) and enums as integers — one
``ExportTraceServiceRequest`` per session per line, so a file can be replayed to a collector's
``/v1/traces`` endpoint line by line.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import IO, Any

from tether.journal.views.shapes import derive
from tether.observe.otel import tether_resource, to_sdk_spans
from tether.types import Event

_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_request(events: Sequence[Event], *, content: bool = False,
                 service_name: str | None = None, shape: str = "default") -> Any:
    """A session's spans (in ``shape``) as an ``ExportTraceServiceRequest`` protobuf message."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = to_sdk_spans(derive(shape, events, content=content), tether_resource(service_name))
    return encode_spans(spans)


def write_otlp(sessions: Iterable[Sequence[Event]], out: IO[str], *,
               content: bool = False, shape: str = "default") -> int:
    """Write each session's spans as one OTLP/JSON line; returns how many spans."""
    from google.protobuf.json_format import MessageToDict

    count = 0
    for events in sessions:
        request = otlp_request(events, content=content, shape=shape)
        body = MessageToDict(request, use_integers_for_enums=True)
        for resource in body.get("resourceSpans", ()):
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    _hex_ids(span)
                    for link in span.get("links", ()):
                        _hex_ids(link)
                    count += 1
        out.write(json.dumps(body, separators=(",", ":")) + "\n")
    return count


def _hex_ids(item: dict[str, Any]) -> None:
    for key in _IDS:
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()
