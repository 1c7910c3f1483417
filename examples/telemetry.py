"""A session's trace as an OpenTelemetry collector receives it.

Run ``python examples/telemetry.py`` (needs ``pip install -e '.[otel]'``). It starts a small
OTLP/HTTP receiver on 127.0.0.1 that decodes what arrives with the official
``opentelemetry-proto`` messages — as a collector does — runs a scripted agent whose policy
refuses one of two calculator calls, with an ``OTelSink`` pointed at the receiver, and prints
the trace it received. Span ids are digests of the journal, so they are the same on every run
of this session id; ``tether audit export --format otlp`` derives the same spans from a store.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tether import Agent, Budget, Decision, Effect, ModelResponse, ReAct, ScriptedModel, ToolCall
from tether.observe import OTelSink
from tether.policy import Action, Context, Resource, Subject
from tether.tools import Calculator

received: list[Any] = []  # the spans, as the receiver decoded them


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        received.extend(span for rs in request.resource_spans for ss in rs.scope_spans
                        for span in ss.spans)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class NoNines:
    """Refuses any calculation with a 9 in it."""

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if "9" in str(action.arguments):
            return Decision(Effect.DENY, "no nines today", "no-nines")
        return Decision(Effect.ALLOW, "fine", "no-nines")


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind)


SHOWN = ("gen_ai.request.max_tokens", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
         "gen_ai.response.finish_reasons", "gen_ai.tool.call.id", "tether.decision.effect",
         "tether.policy.id", "tether.tool.status", "tether.stop_reason",
         "tether.budget.left.tool_calls", "gen_ai.conversation.id")


def show(span: Any, depth: int) -> None:
    attributes = {kv.key: value(kv.value) for kv in span.attributes}
    print(f"{'  ' * depth}{span.name}  [span {span.span_id.hex()}]")
    shown = [f"{k}={attributes[k]}" for k in SHOWN if k in attributes]
    if shown:
        print(f"{'  ' * depth}    " + " ".join(shown))
    for child in sorted((s for s in received if s.parent_span_id == span.span_id),
                        key=lambda s: s.start_time_unix_nano):
        show(child, depth + 1)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    model = ScriptedModel([
        ModelResponse(tool_calls=(ToolCall("c1", "calculator", {"expression": "17 * 23"}),
                                  ToolCall("c2", "calculator", {"expression": "9 * 9"}))),
        "17 * 23 = 391; I was not allowed to compute 9 * 9."])
    with OTelSink(endpoint=endpoint) as sink:
        agent = Agent(model=model, reasoning=ReAct(), tools=[Calculator()], policy=NoNines(),
                      name="math", telemetry=[sink])
        agent.session("Compute 17 * 23 and 9 * 9.", session_id="demo-session-0001",
                      budget=Budget(max_tool_calls=5)).run()
    server.shutdown()
    server.server_close()
    (root,) = [s for s in received if not s.parent_span_id]
    print(f"the collector received {len(received)} spans in trace {root.trace_id.hex()}:")
    show(root, 0)


if __name__ == "__main__":
    main()
