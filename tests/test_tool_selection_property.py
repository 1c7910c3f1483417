"""Invariants of the offer, for any catalog, ``always`` set, policy and task (hypothesis), and
the BM25 ranker's own rules."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from test_tool_selection import CATALOG, Named
from tether import Agent, Decision, Effect, ReAct, ScriptedModel
from tether.policy import Action, Context, Resource, Subject
from tether.tools.selection import BM25, ToolSelection, words
from tether.types import ModelRequest, ToolSpec

VOCABULARY = ("weather", "email", "send", "file", "delete", "refund", "calendar", "event",
              "inventory", "warehouse", "order", "customer", "paris", "item")
NAMES = [t.name for t in CATALOG]


class Split:
    """Denies ``outright`` whatever the call; denies ``by_amount`` only for large amounts."""

    def __init__(self, outright: frozenset[str], by_amount: frozenset[str]) -> None:
        self.outright, self.by_amount = outright, by_amount

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool in self.outright:
            return Decision(Effect.DENY, "no", "split")
        if action.tool in self.by_amount and action.arguments.get("amount", 0) > 100:
            return Decision(Effect.DENY, "too much", "split")
        return Decision(Effect.ALLOW, "ok", "split")


def first_offer(selection: ToolSelection, policy: Any, task: str) -> list[str]:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "done"

    agent = Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=CATALOG,
                  policy=policy, tool_selection=selection)
    agent.run(task)
    return [s.name for s in seen[0].tools]


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 12), always=st.lists(st.sampled_from(NAMES), max_size=4, unique=True),
       outright=st.frozensets(st.sampled_from(NAMES)),
       by_amount=st.frozensets(st.sampled_from(NAMES)),
       task=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6).map(" ".join))
def test_the_offer_keeps_its_invariants(k: int, always: list[str], outright: frozenset[str],
                                        by_amount: frozenset[str], task: str) -> None:
    policy = Split(outright, by_amount - outright)
    selection = ToolSelection(k=k, always=tuple(always))
    offer = first_offer(selection, policy, task)
    assert len(offer) == len(set(offer)) <= k + len(always)
    assert set(offer) <= set(NAMES)
    assert not set(offer) & outright  # never a tool denied whatever the call
    kept = [n for n in always if n not in outright]
    assert offer[:len(kept)] == kept  # the always tools first, unless denied outright
    ranked = [n for n, _ in BM25().index([t.spec for t in CATALOG]).rank(task, len(NAMES))
              if n not in always and n not in outright][:k]
    assert offer[len(kept):] == ranked  # then the best-ranked, a denial making room
    assert first_offer(selection, policy, task) == offer  # deterministic


def test_words_split_names_fold_suffixes_and_drop_stop_words() -> None:
    assert words("readFile read_file read-file") == ["read", "file"] * 3
    assert words("Send the emails to my contacts") == ["send", "email", "contact"]
    assert words("listing queries URLs HTTPServer") == ["list", "query", "url", "http",
                                                        "server"]
    assert words("") == []


def test_ties_keep_catalog_order_and_unmatched_tools_are_left_out() -> None:
    specs = [Named(n, "Manage a thing.").spec for n in ("thing_two", "thing_one")]
    specs.append(ToolSpec("other", "Unrelated.", {}))
    index = BM25().index(specs)
    assert [n for n, _ in index.rank("thing", 10)] == ["thing_two", "thing_one"]
    assert index.rank("thing", 1) == index.rank("thing", 10)[:1]
    assert index.rank("nothing matches here", 10) == []
    assert BM25().index([]).rank("anything", 5) == []


def test_names_and_parameters_are_searched() -> None:
    specs = [ToolSpec("lookup", "Find a record.", {"properties": {"invoice_number": {
                 "type": "string", "description": "As printed on the bill."}}}),
             ToolSpec("paint", "Paint a wall.", {})]
    index = BM25().index(specs)
    assert index.rank("the invoice on the bill", 5)[0][0] == "lookup"
    assert index.rank("lookup", 5)[0][0] == "lookup"
