"""Adaptive-RAG: retrieve never, once, or step by step, as the question needs.

Why: always retrieving costs a tool call, tokens and latency on questions the model answers
alone ("hi", "what is 17 * 23"), and feeds it untrusted text it did not need (every retrieved
passage taints the session); retrieving once is not enough for a question that needs two facts
joined ("which of the two services ... and who owns it"). Adaptive-RAG (Jeong et al., 2024)
routes each question by its complexity: no retrieval, a single retrieval, or iterative
multi-step retrieval.

Decision: the route is chosen by a classifier — ``RuleClassifier`` (no model call: greetings and
arithmetic need nothing; comparisons, several questions and long multi-part ones need steps; the
rest one retrieval) or ``ModelClassifier`` (one model turn with no tool offered and a small
output cap of its own, an unreadable answer routing to one retrieval) — and journaled with its
reason (``strategy.note`` ``route``) before anything else happens. Every retrieval is a model
call of the retrieval tool through the gate; each later hop the model chooses between retrieving
again and answering, within ``max_hops``; the answer is a turn with no tool offered. Resumed
after a pause or a crash, it keeps the route it journaled and the retrievals that ran
(``tether.knowledge.steps.Replay``): nothing is classified, journaled or retrieved twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from tether.errors import InvalidArgument
from tether.knowledge.steps import Replay, answer, retrieve, run_retrievals, words
from tether.runtime.strategy.handle import Handle

Route = Literal["none", "single", "multi"]
ROUTES: tuple[Route, ...] = ("none", "single", "multi")


@dataclass(frozen=True, slots=True)
class RouteDecision:
    route: Route
    reason: str


class Classifier(Protocol):
    async def classify(self, question: str, handle: Handle) -> RouteDecision: ...


_SMALL_TALK = re.compile(r"^\s*(hi|hello|hey|thanks|thank you|good (morning|evening|night)|"
                         r"bye|ok|okay)\b[\s!.?]*$", re.I)
_ARITHMETIC = re.compile(r"^[\s\d+\-*/().,^%=?x×÷]*(what is|compute|calculate)?[\s\d+\-*/().,"
                         r"^%=?x×÷]*$", re.I)
_MULTI = re.compile(r"\b(compare|comparison|difference between|differences|versus|vs\.?|both|"
                    r"and then|as well as|which of|relationship between|how does .+ affect)\b",
                    re.I)


@dataclass(frozen=True, slots=True)
class RuleClassifier:
    """Routes by the question's shape, with no model call."""

    long_question_words: int = 30  # content words past which a question is taken as multi-part

    async def classify(self, question: str, handle: Handle) -> RouteDecision:
        if _SMALL_TALK.match(question):
            return RouteDecision("none", "small talk: nothing to look up")
        if any(ch.isdigit() for ch in question) and _ARITHMETIC.match(question):
            return RouteDecision("none", "arithmetic: nothing to look up")
        found = _MULTI.search(question)
        if found:
            return RouteDecision("multi", f"a multi-part question ({found.group(0)!r})")
        if question.count("?") > 1:
            return RouteDecision("multi", f"{question.count('?')} questions in one")
        if len(words(question)) > self.long_question_words:
            return RouteDecision("multi", f"a long question ({len(words(question))} content "
                                 "words)")
        if not words(question):
            return RouteDecision("none", "no content word to look up")
        return RouteDecision("single", "a plain question: one retrieval")


CLASSIFY_NOTE = ("Before answering, classify the question above for retrieval. Reply with one "
                 "word: none (you can answer without looking anything up), single (one search "
                 "finds it), or multi (it needs several searches, one fact leading to the next).")


@dataclass(frozen=True, slots=True)
class ModelClassifier:
    """Routes by asking the model, in one turn with no tool and at most ``max_output_tokens``."""

    max_output_tokens: int = 8

    async def classify(self, question: str, handle: Handle) -> RouteDecision:
        said = (await handle.ask_model(note=CLASSIFY_NOTE, tool_choice="none",
                                       max_output_tokens=self.max_output_tokens)).text
        first = next(iter(re.findall(r"[a-z]+", said.lower())), "")
        if first in ROUTES:
            return RouteDecision(first, f"the model classified it {first!r}")
        return RouteDecision("single", f"the model's classification {said[:40]!r} is not one "
                             "of none/single/multi: one retrieval")


RETRIEVE_NOTE = ("Search the documents for what the question needs: call {tool} with a "
                 "focused query.")
NEXT_HOP_NOTE = ("If the passages so far do not answer the question, call {tool} again with a "
                 "query for the missing part; if they do, answer now.")


@dataclass(frozen=True, slots=True)
class AdaptiveRAG:
    """A strategy that routes each question to no retrieval, one, or several steps of it:
    ``Agent(reasoning=AdaptiveRAG("search_docs"), tools=[search_docs, ...])``.

    Args:
        retrieval_tool: The name of the agent's retrieval tool (``retrieval_tool(...)``).
        classifier: Picks the route: ``RuleClassifier()`` (no model call) or
            ``ModelClassifier()`` (one capped model turn).
        max_hops: Retrievals at most on the several-steps route.
    """

    retrieval_tool: str
    classifier: Classifier = RuleClassifier()
    max_hops: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.retrieval_tool, str) or not self.retrieval_tool:
            raise InvalidArgument("AdaptiveRAG needs the name of the agent's retrieval tool")
        if type(self.max_hops) is not int or self.max_hops < 1:
            raise InvalidArgument("max_hops must be a whole number >= 1")

    async def run(self, handle: Handle) -> str:
        tool = self.retrieval_tool
        replay = Replay(handle.history(), (tool,), lambda n: n.kind == "hops" or (
            n.kind == "route" and n.data.get("strategy") == "adaptive-rag"))
        decision = await self._route(handle, replay)
        if decision.route == "none":
            return await answer(handle, "Answer the question now, without tools.")
        found = replay.retrieved(tool) or await retrieve(handle, tool,
                                                         RETRIEVE_NOTE.format(tool=tool))
        hops = 1
        while decision.route == "multi" and hops < self.max_hops and found.results \
                and replay.note("hops", take=False) is None:
            again = replay.retrieved(tool)
            if again is None:
                turn = await handle.ask_model(note=NEXT_HOP_NOTE.format(tool=tool))
                wanted = [c for c in turn.tool_calls if c.name == tool]
                if not wanted:
                    if not turn.tool_calls:
                        handle.record("hops", {"hops": hops, "ended_by": "the model answered"})
                        return turn.text
                    break  # it named another tool: not run (skipped); answer from what there is
                again = await run_retrievals(handle, wanted)
            found = again
            hops += 1
        if replay.note("hops") is None:
            handle.record("hops", {"hops": hops, "ended_by": "the route's retrievals are done"})
        return await answer(handle)

    async def _route(self, handle: Handle, replay: Replay) -> RouteDecision:
        """The route journaled before a resume, or the classifier's (journaled now)."""
        past = replay.note("route")
        if past is not None and past.data.get("route") in ROUTES:
            return RouteDecision(past.data["route"], str(past.data.get("reason", "")))
        decision = await self.classifier.classify(handle.task, handle)
        handle.record("route", {"strategy": "adaptive-rag", "route": decision.route,
                                "reason": decision.reason,
                                "classifier": type(self.classifier).__name__})
        return decision

