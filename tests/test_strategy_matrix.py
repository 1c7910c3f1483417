"""Every strategy composes with every recipe feature: strategy × feature, through the public API.

Hostile first: no test combined them, and two combinations broke (tool selection refused every
LATS branch call and every LLM+P step). Each cell runs a strategy (ReAct, Reflexion, LATS, LLM+P,
Router, Adaptive-RAG, CRAG) with one feature (tool selection, compaction, an output type, thread
memory, a telemetry sink) against a scripted model that behaves as a provider does — it answers
every request that carries an output schema with that schema's JSON, as a strict response format
forces — and checks the promises: the run finishes, every tool that ran was decided at the gate,
the journal's chain verifies, and the feature left its own mark.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool
from tether.journal.chain import verify_chain
from tether.knowledge import CRAG, AdaptiveRAG, ModelClassifier, ModelGrader
from tether.reasoning.lats import LATS, SelfEvaluation
from tether.reasoning.reflexion import Reflexion, SelfCritique
from tether.reasoning.router import Router
from tether.runtime.accounting.stop import StopReason
from tether.runtime.context.compaction import Compaction
from tether.runtime.lifecycle.thread import thread_history
from tether.store.memory import MemoryStore
from tether.tools.selection import ToolSelection
from tether.types import ModelRequest

from conftest import import_or_unavailable

WEATHER = "What is the temperature in Paris?"
REFUNDS = "How long is the refund window after delivery?"
BLOCKS = "Blocks: a is on b; b and c are on the table. Put c on a and b on c."


class Answer(BaseModel):
    text: str


@tool
def lookup(city: str) -> str:
    """The temperature in a city, in Celsius."""
    return "25 C in " + city


@tool(output_trust="untrusted")
def search_docs(query: str) -> list[dict[str, Any]]:
    """Search the company documents about refunds and delivery."""
    return [{"doc_id": "refunds",
             "text": "The refund window is 30 days from delivery for every order."}]


@tool(output_trust="untrusted")
def web_search(query: str) -> str:
    """Search the web."""
    return "web: nothing reliable"


def _distractor(i: int) -> Any:
    def manage(item: str = "") -> str:
        return "managed"
    manage.__name__ = f"inventory_{i}"
    manage.__doc__ = f"Manage inventory item number {i} in the warehouse."
    return tool(manage)


DISTRACTORS = [_distractor(i) for i in range(8)]


def respond(request: ModelRequest) -> ModelResponse | str:
    """A model for every strategy's questions; with an output schema, the schema's JSON."""
    messages = request.messages
    last = messages[-1].content
    if messages and messages[0].content.startswith("You compress"):
        return "Summary: " + last  # (it keeps the results: the transcript holds them)
    plain = _plain(last)
    if plain is not None:  # a strict response format forces even a grade into the schema
        return json.dumps({"text": plain}) if request.output_schema is not None else plain
    choice = request.tool_choice
    offered = {s.name for s in request.tools}
    if choice in offered:  # a strategy forced a retrieval
        return ModelResponse(tool_calls=(ToolCall("", str(choice), {"query": "refund window"}),))
    seen = " ".join(m.content for m in messages)  # (a summary of results included)
    for city in ("Paris", "Rome"):  # two lookups, so there is an earlier turn to compact
        if f"25 C in {city}" not in seen and "lookup" in offered and choice != "none":
            return ModelResponse(tool_calls=(ToolCall("", "lookup", {"city": city}),))
    text = "The refund window is 30 days." if any("refund" in m.content for m in messages) \
        else "It is 25 C in Paris."
    return json.dumps({"text": text}) if request.output_schema is not None else text


def _plain(last: str) -> str | None:
    """The answer to a strategy's side question (a route, a grade, a problem), if ``last``
    is one."""
    if "classical planner" in last or "PDDL problem" in last or "corrected problem" in last:
        from test_llmp import PROBLEM  # (only LLM+P asks: its extra may be missing)

        return PROBLEM
    for asked, said in (("classify the question", "single"), ("Grade the passages", "0.9"),
                        ("choose how to approach", "direct"),
                        ("Check the answer you just gave", "PASS"),
                        ("one number from 0 to 10", "9")):
        if asked in last:
            return said
    return None


@dataclass(frozen=True)
class Case:
    task: str
    reasoning: Callable[[], Any]
    tools: Callable[[], list[Any]]


def _blocks_tools() -> list[Any]:
    from test_llmp import blocks

    return list(blocks().tools())


def _llmp() -> Any:
    import_or_unavailable("pyval", "planning")
    from tether.reasoning.llmp import LLMP
    from tether.reasoning.pddl import blocksworld

    return LLMP(blocksworld())


STRATEGIES: dict[str, Case] = {
    "react": Case(WEATHER, ReAct, lambda: [lookup]),
    "reflexion": Case(WEATHER, lambda: Reflexion(evaluator=SelfCritique()), lambda: [lookup]),
    "lats": Case(WEATHER, lambda: LATS(value=SelfEvaluation(), n=1), lambda: [lookup]),
    "llmp": Case(BLOCKS, _llmp, _blocks_tools),
    "router": Case(WEATHER, lambda: Router({"direct": ReAct(), "careful": Reflexion()},
                                           ask_model=True, default="direct"),
                   lambda: [lookup]),
    "adaptive_rag": Case(REFUNDS, lambda: AdaptiveRAG("search_docs",
                                                      classifier=ModelClassifier()),
                         lambda: [search_docs, web_search]),
    "crag": Case(REFUNDS, lambda: CRAG("search_docs", fallback_tool="web_search",
                                       grader=ModelGrader()),
                 lambda: [search_docs, web_search]),
}
FEATURES = ("tool_selection", "compaction", "output_type", "thread", "telemetry", "all")


def build(case: Case, feature: str, sink: list[Any],
          sent: list[ModelRequest] | None = None) -> Agent:
    extra: dict[str, Any] = {}
    tools = case.tools()
    every = feature == "all"
    if every or feature == "tool_selection":
        extra["tool_selection"] = ToolSelection(k=3)
        tools = [*tools, *DISTRACTORS]
    if every or feature == "compaction":
        extra["compaction"] = Compaction(context_window=300, threshold=0.3, keep_last=1)
    if every or feature == "output_type":
        extra["output_type"] = Answer
    if every or feature == "telemetry":
        extra["telemetry"] = [sink.append]
    def recording(request: ModelRequest) -> ModelResponse | str:
        if sent is not None:
            sent.append(request)
        return respond(request)

    return Agent(model=ScriptedModel(recording), reasoning=case.reasoning(), tools=tools,
                 store=MemoryStore(), **extra)


def through_the_gate(events: list[Any]) -> None:
    """Every tool that ran was decided first (a simulated branch call runs nothing)."""
    decided = {e.data["call_id"] for e in events if e.type == "tool.decision"}
    ran = [e.data for e in events if e.type == "tool.result" and e.data["status"] == "ok"]
    assert ran, "no tool ran"
    assert all(d["call_id"] in decided for d in ran), ran


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_each_strategy_keeps_its_promises_with_each_feature(strategy: str, feature: str) -> None:
    case = STRATEGIES[strategy]
    sink: list[Any] = []
    sent: list[ModelRequest] = []
    agent = build(case, feature, sink, sent)
    if feature in ("thread", "all"):  # a first session on the thread, by another recipe
        opener = Agent(model=ScriptedModel(["Noted: Lisbon."]), reasoning=ReAct(),
                       store=agent.store)
        first = opener.session("Remember: my city is Lisbon.", user_id="ada", thread="t1")
        assert first.run().stop_reason is StopReason.FINISHED
        sent.clear()
        session = agent.session(case.task, user_id="ada", thread="t1")
    else:
        session = agent.session(case.task)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    events = list(session.replay())
    assert verify_chain(events) is None
    through_the_gate(events)
    kinds = [e.type for e in events]
    if feature == "all":  # every feature's own mark at once (compaction: see below)
        assert {"tools.selected", "output.valid"} <= set(kinds)
        assert isinstance(result.output, Answer)
        assert [(e.seq, e.type) for e in sink] == [(e.seq, e.type) for e in events]
        (start,) = [e.data for e in events if e.type == "session.start"]
        assert start["thread"]["shown"]  # the earlier turns, named by reference
        assert strategy == "lats" or "context.compacted" in kinds
    elif feature == "tool_selection":
        assert "tools.selected" in kinds
    elif feature == "compaction" and strategy == "lats":
        # a search's branches are its own contexts (a path from the root, bounded by
        # max_depth), not the session's conversation: compaction does not reach them, and the
        # chosen path here ran no side effect, so no session turn was ever made to compact
        assert "context.compacted" not in kinds and "model.request" not in kinds
    elif feature == "compaction":
        assert "context.compacted" in kinds
    elif feature == "output_type":
        assert "output.valid" in kinds and isinstance(result.output, Answer)
    elif feature == "thread":
        (start,) = [e.data for e in events if e.type == "session.start"]
        assert start["thread"]["shown"], start["thread"]  # named by reference
        # the strategy's first question to the model (a turn, a branch) carries the thread
        assert sent and any("my city is Lisbon" in m.content for m in sent[0].messages)
    elif feature == "telemetry":
        assert [(e.seq, e.type) for e in sink] == [(e.seq, e.type) for e in events]
    if feature in ("thread", "all"):  # the same recipe again: from its memory of the thread
        assert agent.checked_threads.get((None, "ada", "t1")) is not None
        store = agent.journal_store
        assert store is not None
        fresh = thread_history(store, None, "ada", "t1")  # what a reader without memory finds
        asked = len(sent)
        again = agent.session(case.task, user_id="ada", thread="t1")
        again.run()
        events = list(again.replay())
        assert verify_chain(events) is None
        (start,) = [e.data for e in events if e.type == "session.start"]
        assert {k: start["thread"][k] for k in fresh.reference} == fresh.reference
        assert fresh.reference["shown"] == 2
        history = [(m.role, m.content) for m in fresh.messages]
        first = [(m.role, m.content) for m in sent[asked].messages]
        assert first[1:1 + len(history)] == history, first


def words_until_repaired(request: ModelRequest) -> ModelResponse | str:
    """A model held to the schema only by instructions: it answers in words until a repair
    note tells it what was wrong."""
    said = respond(request)
    if isinstance(said, str) and said.startswith('{"text"') and not any(
            m.content.startswith("[tether] Your answer is not valid output")
            for m in request.messages[-2:]):
        return json.loads(said)["text"]
    return said


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_an_answer_that_does_not_validate_is_repaired_by_the_model(strategy: str) -> None:
    """The repair runs the strategy again, which must ask the model: LATS handed back its
    journaled branch answer each time until the repairs ran out, Reflexion (resumed from its
    notes) its passed attempt's, and Adaptive-RAG and CRAG classified or graded and retrieved
    again (the same query: a loop)."""
    case = STRATEGIES[strategy]
    agent = Agent(model=ScriptedModel(words_until_repaired), reasoning=case.reasoning(),
                  tools=case.tools(), output_type=Answer)
    session = agent.session(case.task)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    assert isinstance(result.output, Answer)
    kinds = [e.type for e in session.replay()]
    assert kinds.count("output.invalid") == 1 and "output.valid" in kinds
