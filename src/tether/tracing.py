"""Trace identity derived from the journal: W3C ``traceparent`` values and deterministic ids.

Why: tether's telemetry is a view over the journal (``tether.observe``), produced live by a
subscriber and again, after the fact, from the store — and the two must agree. So no span id is
random: every id is a digest of where its event sits in the journal (the session, the seq at
which this run of it began, the model request's seq or the tool call's id). The
runtime needs the same ids for what it propagates (a provider request's ``traceparent`` header,
an MCP request's ``_meta``, a sub-agent's session), which is why they live here, in a leaf
module both can import.

Decision: a session's trace is one *run segment* — from its ``session.start`` or
``session.resumed`` to its end or pause in one process. A resumed session starts a new trace
that links to the one before (the ``session.resumed`` event carries that segment's traceparent);
a session started with a parent ``traceparent`` (a sub-agent, an MCP client's request, a
caller's own trace) joins its parent's trace. A ``traceparent`` that is not exactly the W3C
format is ignored, never trusted in part.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from tether.records import fast_init

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


@fast_init
@dataclass(frozen=True, slots=True)
class TraceParent:
    """A span in a trace, as W3C Trace Context carries it between processes."""

    trace_id: str  # 32 lowercase hex digits, not all zero
    span_id: str  # 16 lowercase hex digits, not all zero
    sampled: bool = True

    def header(self) -> str:
        """The ``traceparent`` header value (version 00)."""
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    @classmethod
    def parse(cls, text: object) -> TraceParent | None:
        """The span ``text`` names, or None when it is not a version-00 ``traceparent``
        (wrong type, shape, case or length, or an all-zero id)."""
        if not isinstance(text, str):
            return None
        match = _TRACEPARENT.fullmatch(text)
        if match is None:
            return None
        trace_id, span_id, flags = match.groups()
        if trace_id == "0" * 32 or span_id == "0" * 16:
            return None
        return cls(trace_id, span_id, bool(int(flags, 16) & 1))


_HASHERS = {size: hashlib.blake2b(digest_size=size, person=b"tether-trace") for size in (8, 16)}


def _digest(size: int, *parts: object) -> str:
    hasher = _HASHERS[size].copy()  # keyed once; a copy is cheaper than a new one
    hasher.update("\x1f".join(map(str, parts)).encode())
    return hasher.hexdigest()


@dataclass(frozen=True, slots=True)
class Segment:
    """One run of a session in one process, from the event at ``start_seq`` (its
    ``session.start`` or ``session.resumed``); ``parent`` is the span it runs under, if any.

    A call's span id is a digest of ``session_id``, ``start_seq``, the kind and the call's
    key; the digest state of everything but the key is computed once here, so an id costs
    one copy, one short update and one digest (every model and tool call of a run with
    telemetry asks for one, on the run's thread)."""

    session_id: str
    start_seq: int
    parent: TraceParent | None = None
    trace_id: str = field(init=False, repr=False, compare=False)
    root_span_id: str = field(init=False, repr=False, compare=False)  # its invoke_agent span
    _model: Any = field(init=False, repr=False, compare=False)  # keyed up to the request seq
    _tool: Any = field(init=False, repr=False, compare=False)  # keyed up to the call id
    _head: str = field(init=False, repr=False, compare=False)  # "00-{trace_id}-"

    def __post_init__(self) -> None:
        trace_id = self.parent.trace_id if self.parent else _digest(16, self.session_id,
                                                                    self.start_seq)
        object.__setattr__(self, "trace_id", trace_id)
        object.__setattr__(self, "root_span_id", _digest(8, self.session_id, self.start_seq,
                                                         "agent"))
        object.__setattr__(self, "_model", _keyed(self.session_id, self.start_seq, "model"))
        object.__setattr__(self, "_tool", _keyed(self.session_id, self.start_seq, "tool"))
        object.__setattr__(self, "_head", f"00-{trace_id}-")

    def root(self) -> TraceParent:
        return TraceParent(self.trace_id, self.root_span_id)

    def model_call(self, request_seq: int) -> TraceParent:
        """The ``chat`` span of the model call journaled as ``model.request`` at that seq."""
        return TraceParent(self.trace_id, self.model_span_id(request_seq))

    def tool_call(self, call_id: str) -> TraceParent:
        """The ``execute_tool`` span of the call ``call_id`` (unique in its session: the
        runtime renames a model's repeated ids, a gateway numbers its clients' calls)."""
        return TraceParent(self.trace_id, self.tool_span_id(call_id))

    def model_span_id(self, request_seq: int) -> str:
        """``model_call(request_seq).span_id``, without building the TraceParent."""
        hasher = self._model.copy()
        hasher.update(str(request_seq).encode())
        return hasher.hexdigest()  # type: ignore[no-any-return]

    def tool_span_id(self, call_id: str) -> str:
        """``tool_call(call_id).span_id``, without building the TraceParent."""
        hasher = self._tool.copy()
        hasher.update(str(call_id).encode())
        return hasher.hexdigest()  # type: ignore[no-any-return]

    def step_span_id(self, key: str) -> str:
        """The span id of another span of the segment, named by ``key`` (a view's own spans:
        ACS Trace's steps)."""
        return _digest(8, self.session_id, self.start_seq, "step", key)

    def model_call_header(self, request_seq: int) -> str:
        """``model_call(request_seq).header()``, built directly (the hot path's form)."""
        return f"{self._head}{self.model_span_id(request_seq)}-01"

    def tool_call_header(self, call_id: str) -> str:
        """``tool_call(call_id).header()``, built directly (the hot path's form)."""
        return f"{self._head}{self.tool_span_id(call_id)}-01"


def _keyed(*parts: object) -> Any:
    """The span-id hasher with ``parts`` and their separators fed: a call's id is this plus
    its key, the same digest ``_digest(8, *parts, key)`` gives."""
    hasher = _HASHERS[8].copy()
    hasher.update("".join(f"{part}\x1f" for part in parts).encode())
    return hasher
