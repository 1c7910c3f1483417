"""Which shape a journal's telemetry takes: tether's default, or ACS Trace's.

Why: the same decisions can be read by three kinds of collector — an OpenTelemetry backend that
follows the GenAI conventions, a SIEM that ingests OCSF, and a collector built for OWASP's Agent
Control Standard, whose Trace pillar names other spans and other OCSF classes. The sinks and the
export each pick a derivation by a ``shape`` argument; what each shape derives, and the error for
one that does not exist, are here once.

Decision: ``"default"`` is tether's own (``spans``: GenAI spans with decision events;
``ocsf``: API Activity 6003 with Detection Findings for tampering); ``"acs"`` is ACS v0.1.0's
(``acs_spans``, ``acs_ocsf``). One shape per destination: both derive their span ids from the
same journal positions, so two shapes sent to one collector would collide.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tether.errors import InvalidArgument
from tether.journal.views.span_records import SpanRecord, fold_spans
from tether.types import Event

SHAPES = ("default", "acs")


def check_shape(shape: str) -> str:
    """``shape``, if it is one; else an error naming the ones there are."""
    if shape not in SHAPES:
        raise InvalidArgument(f"unknown telemetry shape {shape!r}: use 'default' (GenAI spans, "
                              "OCSF API Activity) or 'acs' (OWASP ACS Trace v0.1.0)")
    return shape


def deriver_class(shape: str) -> Any:
    """What derives one session's spans in ``shape``: a class called with the session's id,
    ``content=`` and ``make=`` (``feed``, ``finish``, ``open``); picked once per sink, so the
    choice costs nothing per session or event."""
    if check_shape(shape) == "acs":
        from tether.journal.views.acs_spans import AcsSpanDeriver

        return AcsSpanDeriver
    from tether.journal.views.spans import SpanDeriver

    return SpanDeriver


def derive(shape: str, events: Iterable[Event], *, content: bool = False) -> list[SpanRecord]:
    """Every span of one session's events in ``shape``, in the order they finish."""
    return fold_spans(deriver_class(shape), events, content=content)


def ocsf_view(shape: str, version: str | None = None) -> Any:
    """An OCSF fold (``apply``, ``forget``) in ``shape``."""
    if check_shape(shape) == "acs":
        from tether.journal.views.acs_ocsf import AcsOCSFView

        return AcsOCSFView(version)
    from tether.journal.views.ocsf import OCSFView

    return OCSFView(version)


def ocsf_records(shape: str, events: Iterable[Event],
                 version: str | None = None) -> list[dict[str, Any]]:
    """The OCSF records of ``events`` (sessions each in journal order) in ``shape``."""
    view = ocsf_view(shape, version)
    return [record for event in events for record in view.apply(event)]
