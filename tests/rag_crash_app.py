"""A retrieval strategy whose process dies once, in one phase: ``run DB MARKER STRATEGY PHASE``
(STRATEGY ``adaptive`` — Adaptive-RAG, routed by the model to ``multi``; ``adaptive-aside``,
the same whose second hop names another tool — or ``crag`` — CRAG
with a model grader that finds the first retrieval poor, and a fallback); PHASE is where it
dies: ``classify``, ``retrieve:N`` (the model's N-th retrieval turn), ``tool:N`` (inside the
N-th retrieval), ``grade:N`` or ``answer``. The test resumes it with ``build``.

The model and the tools are functions of what they are sent, so the resuming process answers as
the dead one would have."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tether import Agent, ModelRequest, ModelResponse, ScriptedModel, ToolCall, tool
from tether.knowledge.adaptive_rag import CLASSIFY_NOTE, AdaptiveRAG, ModelClassifier
from tether.knowledge.crag import CRAG, GRADE_NOTE, ModelGrader
from tether.knowledge.steps import ANSWER_NOTE


def build(db: str, marker: str, strategy: str, die_at: str = "") -> Agent:
    died = Path(marker)

    def die(phase: str) -> None:
        if phase == die_at and not died.exists():
            died.write_text(phase)
            os._exit(9)

    def search(query: str, tool_name: str) -> str:
        die(f"tool:{query.split()[-1]}")
        return json.dumps([{"doc_id": f"{tool_name}-{query}", "text": f"about {query}"}])

    @tool
    def search_docs(query: str) -> str:
        """Search the documents."""
        return search(query, "docs")

    @tool
    def web_search(query: str) -> str:
        """Search the web."""
        return search(query, "web")

    def respond(request: ModelRequest) -> ModelResponse | str:
        last = request.messages[-1].content
        retrieved = sum(m.role == "tool" and m.content.startswith("[") for m in request.messages)
        if CLASSIFY_NOTE in last:
            die("classify")
            return "multi"
        if GRADE_NOTE in last:
            die(f"grade:{retrieved}")
            return "0.1" if retrieved < 2 else "0.5"
        if ANSWER_NOTE in last:
            die("answer")
            return f"answered from {retrieved} retrievals"
        if retrieved >= 3:  # (Adaptive-RAG's next hop: enough)
            return "answered without another hop"
        if strategy == "adaptive-aside" and retrieved and request.tool_choice is None:
            # the next hop names another tool: skipped, the hops end, the answer follows
            return ModelResponse(tool_calls=(ToolCall("", "web_search", {"query": "aside"}),))
        die(f"retrieve:{retrieved + 1}")
        name = request.tool_choice if request.tool_choice in ("search_docs", "web_search") \
            else "search_docs"
        return ModelResponse(tool_calls=(ToolCall("", name, {"query": f"q {retrieved + 1}"}),))

    reasoning = AdaptiveRAG("search_docs", classifier=ModelClassifier()) \
        if strategy.startswith("adaptive") else CRAG("search_docs", fallback_tool="web_search",
                                            grader=ModelGrader())
    return Agent(model=ScriptedModel(respond), reasoning=reasoning,
                 tools=[search_docs, web_search], store=f"sqlite:///{db}")


if __name__ == "__main__":
    command, db, marker, strategy, die_at = sys.argv[1:6]
    session = build(db, marker, strategy, die_at).session("Which service owns billing?")
    print(session.id, flush=True)
    session.run()
