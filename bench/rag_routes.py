"""Retrieval routes, measured with the evaluation module: python bench/rag_routes.py [--k K]

The corpus is this project's own documentation (docs/**/*.md split into passages, BM25); the
tasks are 20 questions whose answers are in it (graded: the answer must contain the expected
words) and 5 that need no documents (small talk, arithmetic). Each route is a reasoning
strategy over the same retrieval tool, evaluated as pass^k with its interval, with tokens, tool
calls and cost (at a small model's price) per task:

- never: AdaptiveRAG whose classifier always says "none" (the model alone);
- always: AdaptiveRAG whose classifier always says "single" (retrieve for every question);
- adaptive: AdaptiveRAG with the RuleClassifier;
- crag: CRAG with the LexicalGrader and one rewrite.

The model is a deterministic *reader*: made to search, it searches for the question's content
words; made to answer, it returns the retrieved line that shares the most words with the
question (or computes the arithmetic, or greets back) — so accuracy measures retrieval and
routing, not a model's knowledge. (A 135M local model reading the same passages adds its own
errors on top; the routes' relative costs are the same.)
"""

from __future__ import annotations

import argparse
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from tether import Agent, ModelRequest, ModelResponse, ScriptedModel, ToolCall
from tether.evals import Task, contains, evaluate, finished, numeric
from tether.knowledge import CRAG, AdaptiveRAG, LexicalGrader, RuleClassifier
from tether.knowledge.adaptive_rag import RouteDecision
from tether.knowledge.bm25 import BM25Retriever
from tether.knowledge.passages import split_markdown
from tether.knowledge.retrieval import retrieval_tool
from tether.knowledge.steps import words
from tether.models.pricing import Price
from tether.runtime.strategy.handle import Handle

ROOT = Path(__file__).resolve().parents[1]
PRICE = Price(Decimal("0.15"), Decimal("0.60"))  # $ per million tokens, a small model's price

QUESTIONS = [
    ("Which marker replaces a masked value in the journal?", "[masked]"),
    ("What is the embedded default store URL?", "sqlite:///tether.db"),
    ("Which environment variable holds the audit key that signs anchors?", "TETHER_AUDIT_KEY"),
    ("For how many seconds is a PostgreSQL restart or failover ridden through by default?",
     "ride_through=30"),
    ("What stop reason ends a run whose answer never validates as the output type?",
     "output_invalid"),
    ("Which OCSF version do the SIEM events follow?", "1.8.0"),
    ("What type does an erased event take?", "content.erased"),
    ("Which extra installs the BM25 conversation search?", "tether[knowledge]"),
    ("Which command approves a pending approval request?", "tether approvals approve"),
    ("Which error stops a run when the SQLite disk is full?", "StoreFull"),
    ("Which span name does a tool call get in OpenTelemetry GenAI spans?", "execute_tool"),
    ("Which event type journals a strategy's route or grade?", "strategy.note"),
    ("Which stop reason pauses a session until a person decides?", "needs_approval"),
    ("Which exception does forget raise when a session is running?", "ErasureRefused"),
    ("Which command erases a user's conversations from a shell?", "tether memory forget"),
    ("Which small model does the local model tier run?", "SmolLM2"),
    ("Which W3C header carries the trace context to providers?", "traceparent"),
    ("Which error stops a thread continued from an edited earlier turn?", "ThreadTampered"),
    ("Which grader compares the fields of a structured output?", "output_fields"),
    ("Which policy effect replaces fields with a marker in the tool's input and output?",
     "MASK"),
]
NO_DOCUMENTS = [("hello!", None), ("thanks", None), ("What is 12 * 12?", "144"),
                ("What is 7 + 35?", "42"), ("compute 100 / 4", "25")]


def corpus() -> BM25Retriever:
    documents = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        source = str(page.relative_to(ROOT))
        documents += split_markdown(page.read_text(), source)
    return BM25Retriever(documents)


def tasks() -> list[Task]:
    found = [Task(q, expected=a, grader=contains(a, ignore_case=False), id=f"doc{i}")
             for i, (q, a) in enumerate(QUESTIONS)]
    for i, (q, a) in enumerate(NO_DOCUMENTS):
        found.append(Task(q, expected=a, grader=finished() if a is None else numeric(),
                          id=f"plain{i}"))
    return found


def reader(request: ModelRequest) -> ModelResponse | str:
    question = next(m.content for m in reversed(request.messages)
                    if m.role == "user" and not m.content.startswith(("Search", "Answer",
                                                                      "The ", "If ")))
    if request.tool_choice not in (None, "auto", "none", "required"):
        query = " ".join(sorted(words(question))) or question
        if "rewritten query" in request.messages[-1].content:
            query = " ".join(w for w in re.findall(r"[\w.:/\[\]-]+", question) if len(w) > 3)
        return ModelResponse(tool_calls=(ToolCall("", request.tool_choice, {"query": query}),))
    lines = [line for m in request.messages if m.role == "tool"
             for line in re.split(r"(?<=[.!?])\s+|\n", m.content) if line.strip()]
    if lines:
        asked = words(question)
        return max(lines, key=lambda line: len(asked & words(line)))
    arithmetic = re.findall(r"\d+\s*[-+*/]\s*\d+", question)
    if arithmetic:
        return str(eval(arithmetic[0], {"__builtins__": {}}))  # digits and one operator
    return "Hello! How can I help?" if words(question) <= {"hello", "thanks"} else "I don't know."


class Always:
    def __init__(self, route: str) -> None:
        self.route = route

    async def classify(self, question: str, handle: Handle) -> RouteDecision:
        return RouteDecision(self.route, f"always {self.route}")  # type: ignore[arg-type]


def routes(tool_name: str) -> dict[str, Any]:
    return {"never": AdaptiveRAG(tool_name, classifier=Always("none")),
            "always": AdaptiveRAG(tool_name, classifier=Always("single")),
            "adaptive": AdaptiveRAG(tool_name, classifier=RuleClassifier()),
            "crag": CRAG(tool_name, grader=LexicalGrader(), max_rewrites=1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=1, help="trials per task (the reader is "
                        "deterministic: 1 suffices)")
    args = parser.parse_args()
    search = retrieval_tool(corpus(), name="search_docs", k=3)
    suite = tasks()
    print(f"{len(suite)} tasks ({len(QUESTIONS)} need the docs), k={args.k}")
    print(f"{'route':<10} {'pass^k':>7} {'interval':>15} {'tokens/task':>12} "
          f"{'tool calls/task':>16} {'$/1k tasks':>11}")
    for label, reasoning in routes("search_docs").items():
        agent = Agent(model=ScriptedModel(reader, price=PRICE), reasoning=reasoning,
                      tools=[search])
        report = evaluate(agent, suite, k=args.k, name=label, concurrency=4)
        estimate = report.pass_hat_k(args.k)
        facts = [r.facts for r in report.records]
        tokens = sum(f.tokens for f in facts) / len(facts)
        calls = sum(f.tool_calls for f in facts) / len(facts)
        cost = sum(f.cost_usd for f in facts) / len(facts) * 1000
        print(f"{label:<10} {estimate.value:7.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"
              f" {tokens:12.0f} {calls:16.2f} {cost:11.4f}")


if __name__ == "__main__":
    main()
