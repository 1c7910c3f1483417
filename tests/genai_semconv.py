"""An independent checker of OpenTelemetry GenAI spans, span events and metrics against the
conventions, for tests/test_genai_conformance.py (issue 52, part 1).

Why written here: the official check is Weaver's live-check with the GenAI conformance
runner's policies, and Weaver is a binary on no registry reachable here; the one checker on
PyPI (``pytest-genai-semconv`` 0.1.0) was read and tried, and is not sound enough to trust: it
checks no span names, no metrics and no events, misses kinds the conventions fix (create_agent,
embeddings), and fails a custom ``gen_ai.provider.name`` the conventions allow. So the rules are
encoded here by hand — never from tether's own names (``tether.journal.views.genai``), so a
wrong name there is caught, not echoed.

What the rules follow, pinned: the GenAI conventions as last released, in
open-telemetry/semantic-conventions v1.41.1 (commit ead83b9b, ``model/gen-ai/*.yaml``; the
dedicated repository, semantic-conventions-genai, has no release), and the rules of the
official GenAI conformance runner (open-telemetry/semantic-conventions-conformance at 6421afdb:
``genai_span_validation.rego``, ``span_validation.rego``) with Weaver's built-in live checks:

- ``span-name``: ``{operation}`` or ``{operation} {key}``, the key attribute per operation.
- ``span-kind``: the kinds the operation's span types allow.
- ``operation-unknown``: an operation name outside the registry's.
- ``required``: an attribute the span type requires; ``conditional``: ``error.type`` on an
  error, ``server.port`` with ``server.address``.
- ``expected``: a recommended attribute missing (the runner expects every one but those it
  excludes: sampling parameters, cache token counts, a tool's description).
- ``unknown-attribute``: a ``gen_ai.*`` name not in the registry (tether's own ``tether.*``
  names are its registry's, not the conventions', and are not judged); ``deprecated``; ``type``.
- ``status``: OK set by instrumentation, ERROR without ``error.type``, ``error.type`` without
  ERROR.
- ``metric``: a GenAI metric's instrument, unit, required attributes and buckets.
- ``event``: ``gen_ai.evaluation.result`` without ``gen_ai.evaluation.name``; a
  ``gen_ai.tool.call.decision`` (a proposal, semantic-conventions-genai#535) whose outcome is
  not allow / deny / require_approval.
- ``compacted-false``: ``gen_ai.conversation.compacted`` set false (the registry: only true).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CLIENT, INTERNAL = "CLIENT", "INTERNAL"
INFERENCE = ("chat", "text_completion", "generate_content")
OPERATIONS = frozenset({*INFERENCE, "embeddings", "retrieval", "execute_tool", "invoke_agent",
                        "create_agent", "invoke_workflow"})
NAME_KEY = {**dict.fromkeys(INFERENCE, "gen_ai.request.model"),
            "embeddings": "gen_ai.request.model", "retrieval": "gen_ai.data_source.id",
            "execute_tool": "gen_ai.tool.name", "invoke_agent": "gen_ai.agent.name",
            "create_agent": "gen_ai.agent.name", "invoke_workflow": "gen_ai.workflow.name"}
# inference MAY be INTERNAL when the model runs in the process
KINDS = {**dict.fromkeys(INFERENCE, frozenset({CLIENT, INTERNAL})), "embeddings": {CLIENT},
         "retrieval": {CLIENT}, "execute_tool": {INTERNAL}, "invoke_agent": {CLIENT, INTERNAL},
         "create_agent": {CLIENT}, "invoke_workflow": {INTERNAL}}
OP = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUIRED = {**dict.fromkeys(INFERENCE, frozenset({OP, PROVIDER})), "embeddings": {OP, PROVIDER},
            "retrieval": {OP}, "execute_tool": {OP, "gen_ai.tool.name"},
            "invoke_agent": {OP, PROVIDER}, "create_agent": {OP, PROVIDER},
            "invoke_workflow": {OP}}
_USAGE = {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}
EXPECTED = {
    **dict.fromkeys(INFERENCE, frozenset({
        "server.address", "gen_ai.response.id", "gen_ai.response.model",
        "gen_ai.response.finish_reasons", *_USAGE, "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.response.time_to_first_chunk"})),
    "embeddings": {"server.address", "gen_ai.request.encoding_formats",
                   "gen_ai.usage.input_tokens", "gen_ai.embeddings.dimension.count",
                   "gen_ai.response.model"},
    "execute_tool": {"gen_ai.tool.call.id", "gen_ai.tool.type"},
    "invoke_agent": {"gen_ai.response.finish_reasons", *_USAGE},
    "create_agent": {"server.address"}, "retrieval": {"server.address"},
    "invoke_workflow": set()}
# the registry's gen_ai.* attributes (v1.41.1), with their types
_STR, _INT, _DOUBLE, _STRS, _BOOL = str, int, float, "string[]", bool
REGISTRY: dict[str, Any] = {
    **dict.fromkeys(["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
                     "gen_ai.response.model", "gen_ai.response.id", "gen_ai.conversation.id",
                     "gen_ai.agent.id", "gen_ai.agent.name", "gen_ai.agent.description",
                     "gen_ai.agent.version", "gen_ai.data_source.id", "gen_ai.output.type",
                     "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.type",
                     "gen_ai.tool.description", "gen_ai.token.type", "gen_ai.workflow.name",
                     "gen_ai.evaluation.name", "gen_ai.evaluation.score.label",
                     "gen_ai.evaluation.explanation", "gen_ai.input.messages",
                     "gen_ai.output.messages", "gen_ai.system_instructions",
                     "gen_ai.tool.definitions", "gen_ai.tool.call.arguments",
                     "gen_ai.tool.call.result", "gen_ai.retrieval.query.text",
                     "gen_ai.retrieval.documents", "gen_ai.prompt.name"], _STR),
    **dict.fromkeys(["gen_ai.request.max_tokens", "gen_ai.request.choice.count",
                     "gen_ai.request.seed", "gen_ai.request.top_k",
                     "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                     "gen_ai.usage.cache_read.input_tokens",
                     "gen_ai.usage.cache_creation.input_tokens",
                     "gen_ai.usage.reasoning.output_tokens",
                     "gen_ai.embeddings.dimension.count"], _INT),
    **dict.fromkeys(["gen_ai.request.temperature", "gen_ai.request.top_p",
                     "gen_ai.request.frequency_penalty", "gen_ai.request.presence_penalty",
                     "gen_ai.evaluation.score.value", "gen_ai.response.time_to_first_chunk"],
                    _DOUBLE),
    **dict.fromkeys(["gen_ai.response.finish_reasons", "gen_ai.request.stop_sequences",
                     "gen_ai.request.encoding_formats"], _STRS),
    "gen_ai.request.stream": _BOOL,
    "gen_ai.conversation.compacted": _BOOL,  # semantic-conventions-genai's registry
    # the proposal semantic-conventions-genai#535 (not merged)
    "gen_ai.tool.call.decision.outcome": _STR,
}
DEPRECATED = frozenset({"gen_ai.system", "gen_ai.usage.prompt_tokens",
                        "gen_ai.usage.completion_tokens", "gen_ai.prompt", "gen_ai.completion",
                        "gen_ai.openai.request.seed", "gen_ai.openai.request.response_format"})
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)
METRICS = {"gen_ai.client.token.usage": ("{token}", {OP, PROVIDER, "gen_ai.token.type"},
                                         TOKEN_BUCKETS),
           "gen_ai.client.operation.duration": ("s", {OP, PROVIDER}, DURATION_BUCKETS)}
OUTCOMES = frozenset({"allow", "deny", "require_approval"})


@dataclass(frozen=True)
class Violation:
    rule: str
    subject: str  # the span, event or metric's name
    detail: str  # the attribute, or what is wrong

    def key(self) -> tuple[str, str, str]:
        return self.rule, self.subject.split(" ", 1)[0], self.detail


def _typed(name: str, value: Any) -> bool:
    want = REGISTRY[name]
    if want == _STRS:
        return isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value)
    if want is _DOUBLE:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def check_attributes(subject: str, attributes: Mapping[str, Any]) -> list[Violation]:
    found = []
    for name, value in attributes.items():
        if name in DEPRECATED:
            found.append(Violation("deprecated", subject, name))
        elif name.startswith("gen_ai.") and name not in REGISTRY:
            found.append(Violation("unknown-attribute", subject, name))
        elif name in REGISTRY and not _typed(name, value):
            found.append(Violation("type", subject, f"{name}={value!r}"))
    if attributes.get("gen_ai.conversation.compacted") is False:
        found.append(Violation("compacted-false", subject, "gen_ai.conversation.compacted"))
    return found


def check_span(span: Any) -> list[Violation]:
    """Everything ``span`` (an SDK ``ReadableSpan``) does against the rules."""
    a = dict(span.attributes or {})
    name, found = span.name, check_attributes(span.name, a)
    op = a.get(OP)
    if op is None:
        return found  # not a GenAI span
    if op not in OPERATIONS:
        return [*found, Violation("operation-unknown", name, str(op))]
    key = a.get(NAME_KEY[op])
    if name != (f"{op} {key}" if key is not None else op):
        found.append(Violation("span-name", name, f"{op} {key}"))
    kind = span.kind.name
    if kind not in KINDS[op]:
        found.append(Violation("span-kind", name, kind))
    found += [Violation("required", name, attr) for attr in sorted(REQUIRED[op] - a.keys())]
    found += [Violation("expected", name, attr) for attr in sorted(EXPECTED[op] - a.keys())]
    if "server.address" in a and "server.port" not in a:
        found.append(Violation("conditional", name, "server.port"))
    status = span.status.status_code.name
    if status == "OK":
        found.append(Violation("status", name, "OK set by instrumentation"))
    if status == "ERROR" and "error.type" not in a:
        found.append(Violation("status", name, "ERROR without error.type"))
    if "error.type" in a and status != "ERROR":
        found.append(Violation("status", name, "error.type without ERROR"))
    for event in span.events:
        found += check_event(event.name, dict(event.attributes or {}))
    return found


def check_event(name: str, attributes: Mapping[str, Any]) -> list[Violation]:
    found = check_attributes(name, attributes) if name.startswith("gen_ai.") else []
    if name == "gen_ai.evaluation.result" and "gen_ai.evaluation.name" not in attributes:
        found.append(Violation("event", name, "gen_ai.evaluation.name missing"))
    if name == "gen_ai.tool.call.decision" and (
            attributes.get("gen_ai.tool.call.decision.outcome") not in OUTCOMES):
        found.append(Violation("event", name, "outcome not allow/deny/require_approval"))
    return found


def check_metrics(data: Any) -> list[Violation]:
    """Every GenAI metric of ``data`` (an SDK reader's ``MetricsData``)."""
    found: list[Violation] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name.startswith("gen_ai.") and metric.name not in METRICS:
                    found.append(Violation("metric", metric.name, "not in the registry"))
                if metric.name not in METRICS:
                    continue
                unit, required, buckets = METRICS[metric.name]
                if metric.unit != unit:
                    found.append(Violation("metric", metric.name, f"unit {metric.unit}"))
                if type(metric.data).__name__ != "Histogram":
                    found.append(Violation("metric", metric.name, "not a histogram"))
                for point in metric.data.data_points:
                    a = dict(point.attributes or {})
                    found += [Violation("metric", metric.name, f"{attr} missing")
                              for attr in sorted(required - a.keys())]
                    found += check_attributes(metric.name, a)
                    if tuple(point.explicit_bounds) != buckets:
                        found.append(Violation("metric", metric.name, "buckets"))
                    if a.get("gen_ai.token.type", "input") not in ("input", "output"):
                        found.append(Violation("metric", metric.name, "gen_ai.token.type"))
    return found


def check_all(spans: Iterable[Any], metrics: Any = None) -> list[Violation]:
    found = [v for span in spans for v in check_span(span)]
    return found + (check_metrics(metrics) if metrics is not None else [])
