"""Tool selection at the chokepoint: each model turn is offered a few tools, chosen and recorded.

Why: ``Agent(tool_selection=ToolSelection(...))`` (``tether.tools.selection``) keeps a catalog of
hundreds of tools out of every request. This module is the runtime's side of it: a turn shaper
(``Selector``, ``tether.runtime.chokepoint.shaper``) that shows each turn its offer through
``TurnSeat.show_tools``, and the executor that holds calls to it; with selection off none of it
is loaded and a step costs what it did.

Decisions:

- **What a turn is offered.** Before each model turn (not the tool-less wrap-up) the recipe's
  index ranks the catalog for a query made of the task and what the turn adds (the latest tool
  results and notes, the last few thousand characters). Offered: the ``always`` tools, then the
  ``k`` best-ranked others, minus what the policy denies outright. The offer is journaled as a
  ``tools.selected`` event (the ranked tools' scores, the tools the policy hid, a ranker error)
  and, as without selection, as the ``tools`` of the ``model.request``.
- **What "the policy denies" means: a deny that no arguments could change.** Each candidate is
  put to the policy with the session's live subject and context and no arguments, watching
  every door to them (``tether.runtime.context.probing``): a DENY that never opened one hides the
  tool; one that read them depends on the call, so the tool is offered and each call is decided at
  the gate as always. The probe can only hide tools, never grant a call. It is journaled only
  through its outcome (``denied``); a policy that counts its evaluations sees one per candidate
  per turn.
- **A call outside the offer is a call to an unknown tool.** The model is told exactly what it
  is told of a tool that does not exist, listing only what this turn offered: a hidden tool's
  name never reaches it, the policy is not asked, nothing runs. A fallback the policy degrades
  a call to is the policy's choice and is not held to the offer.
- **A branch is offered like a turn; a validated plan is decided, not offered.** A search's
  branch call (``tether.runtime.strategy.branching``) gets a selection of its own, ranked for the
  task and the branch's messages and journaled with its key, and the branch's calls are held to it
  (a branch's calls came before any turn's offer, and were refused every one). A step of a
  plan the strategy validated (``planned_`` calls: LLM+P's steps, LATS's chosen path) is held
  to no offer: the offer limits what the model is shown, and a plan is not the model's choice
  (its actions come from a domain that names its tools; a LATS path's were offered to their
  branch). The gate decides each step as it decides every call, so nothing the policy denies
  runs.
- **A ranker that fails offers the ``always`` tools only.** One that raises, or returns anything
  but ``(name, finite score)`` pairs naming catalog tools, is not trusted in part: the turn gets
  the ``always`` tools (still minus denials) and the error is journaled; the run goes on.
- **Reproducible.** The open turn's offer, and each branch call's, is read back from the
  journal when a session resumes, so a call is judged against the turn (or branch) it was made
  in; a model's call cannot pass for a planned step (a strategy's prefixes are never a model's
  ids: ``tether.runtime.accounting.answer_calls``); ranking is deterministic, so a resume or
  a rerun ranks as the recorded run did, and rerun reports an offer that would differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument
from tether.models.base import estimate_tools_tokens
from tether.runtime.chokepoint.assembly import RunContext
from tether.runtime.chokepoint.executor import Rejected, ToolExecutor, unknown_tool
from tether.runtime.chokepoint.gate import PolicyGate
from tether.runtime.chokepoint.shaper import Offered, TurnSeat
from tether.runtime.context.probing import denied_outright
from tether.tools.registry import ToolRegistry
from tether.tools.selection import ToolIndex, ToolSelection
from tether.types import (
    BRANCH_CALL_PREFIX,
    PLANNED_CALL_PREFIX,
    TOOL_CHOICES,
    Message,
    ToolCall,
)
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.runtime.record.state import SessionState

QUERY_CHARS = 4_000  # of what the turn adds, the last this many characters join the query
SELECTED = EventType.TOOLS_SELECTED


class Offer:
    """What the open turn was offered, and what each branch call was (by its key): one per
    activation, shared by the Environment (which sets them) and the executor (which holds
    calls to them)."""

    __slots__ = ("branches", "names")

    def __init__(self, names: Sequence[str],
                 branches: dict[str, tuple[str, ...]] | None = None) -> None:
        self.names: tuple[str, ...] = tuple(names)
        self.branches: dict[str, tuple[str, ...]] = branches or {}

    def held_to(self, call_id: str) -> tuple[str, ...] | None:
        """The tools a call is held to: its branch's offer (``branch_<key>_<i>``), none for a
        step of a plan the strategy validated (``planned_``: decided at the gate), else the
        open turn's."""
        if call_id.startswith(PLANNED_CALL_PREFIX):
            return None
        if call_id.startswith(BRANCH_CALL_PREFIX):
            key = call_id[len(BRANCH_CALL_PREFIX):].rpartition("_")[0]
            return self.branches.get(key, ())
        return self.names


def recorded_offer(journal: Journal) -> Offer:
    """The offers journaled: the last model request's (none yet: nothing) and each branch
    call's."""
    names: Sequence[str] = ()
    branches: dict[str, tuple[str, ...]] = {}
    for event in journal.events():
        if event.type == EventType.MODEL_REQUEST:
            names = event.data.get("tools", ())
        elif event.type == EventType.BRANCH_REQUEST:
            branches[event.data["key"]] = tuple(event.data.get("tools", ()))
    return Offer(names, branches)


class OfferedExecutor(ToolExecutor):
    """A ToolExecutor that resolves only tools the call's turn (or branch) was offered."""

    __slots__ = ("_admitted", "offer")

    def __init__(self, registry: ToolRegistry, max_result_chars: int, offer: Offer) -> None:
        super().__init__(registry, max_result_chars)
        self.offer = offer
        self._admitted: set[str] = set()  # calls resolved once: a degrade re-resolves them

    def resolve(self, call: ToolCall) -> tuple[Any, dict[str, Any]]:
        if call.id not in self._admitted:
            names = self.offer.held_to(call.id)
            if names is not None and call.name not in names:
                raise Rejected(unknown_tool(call, names))
            self._admitted.add(call.id)
        return super().resolve(call)


def ranking(index: ToolIndex, query: str, limit: int,
            catalog: ToolRegistry) -> list[tuple[str, float]]:
    """The index's ranking, checked: ValueError unless it is (catalog name, finite score)
    pairs."""
    ranked = index.rank(query, limit)
    if isinstance(ranked, str | bytes) or not isinstance(ranked, Sequence):
        raise InvalidArgument(f"the ranker returned {type(ranked).__name__}, not a sequence of "
                              "(tool name, score) pairs")
    checked = []
    for item in ranked:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise InvalidArgument(f"the ranker returned {item!r}, not a (tool name, score) pair")
        name, score = item
        if not isinstance(name, str) or catalog.get(name) is None:
            raise InvalidArgument(f"the ranker named {name!r}, which is not a tool of this agent")
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(
                score):
            raise InvalidArgument(f"the ranker scored {name!r} {score!r}, not a finite number")
        checked.append((name, float(score)))
    return checked


class Selector:
    """The turn shaper of a recipe with ``tool_selection``: each turn (and branch call) offered
    the tools selected for it."""

    __slots__ = ("_catalog", "_gate", "_index", "_journal", "_offer", "_selection", "_state")

    def __init__(self, selection: ToolSelection, index: ToolIndex, catalog: ToolRegistry,
                 run: RunContext, gate: PolicyGate, offer: Offer) -> None:
        self._selection, self._index, self._catalog = selection, index, catalog
        self._gate, self._offer = gate, offer
        self._journal: Journal = run.journal
        self._state: SessionState = run.state

    async def before_turn(self, seat: TurnSeat, final: bool, note: str | None,
                          tool_choice: str | None) -> None:
        if final:  # the wrap-up is sent no tools
            return
        seat.skip_unresolved("the strategy did not run this call")  # (results: the query)
        self._select(seat, self._query(note), tool_choice)

    def _query(self, note: str | None) -> str:
        state = self._state
        added = [m.content for m in state.outbox() if m.role != "system"]
        if note:
            added.append(note)
        return state.task + "\n" + "\n".join(added)[-QUERY_CHARS:]

    def branch_tools(self, seat: TurnSeat, key: str, messages: Sequence[Message],
                     forced: str | None) -> Offered:
        """A branch call is offered a selection of its own, as a turn is: ranked for the task
        and the branch's own messages, journaled (``tools.selected`` with its ``branch`` key),
        and the branch's calls are held to it."""
        query = self._state.task + "\n" + "\n".join(
            m.content for m in messages if m.role != "system")[-QUERY_CHARS:]
        chosen = self._choose(query, forced, {"branch": key})
        self._offer.branches[key] = chosen
        specs = tuple(self._catalog.get(n).spec for n in chosen)  # type: ignore[union-attr]
        return specs, estimate_tools_tokens(specs)

    def _select(self, seat: TurnSeat, query: str, forced: str | None) -> None:
        """Choose this turn's offer and show it to the turn."""
        before = set(self._offer.names)
        chosen = self._choose(query, forced)
        self._offer.names = chosen
        specs = tuple(self._catalog.get(n).spec for n in chosen)  # type: ignore[union-attr]
        # a provider's count of the last input covered the last offer, not tools new to this one
        seat.show_tools(specs, estimate_tools_tokens(s for s in specs if s.name not in before))

    def _choose(self, query: str, forced: str | None,
                where: dict[str, Any] | None = None) -> tuple[str, ...]:
        """An offer, journaled: the ``always`` tools, a tool the strategy forces the call to
        make (``forced``), then the best-ranked others — each unless the policy denies it
        outright."""
        selection, catalog = self._selection, self._catalog
        names: list[str] = []
        denied: list[str] = []
        record: dict[str, Any] = {"step": self._state.tally.steps + 1, **(where or {})}

        def offer(name: str) -> bool:
            if name in names or name in denied:
                return False
            if denied_outright(self._gate, catalog.get(name)):
                denied.append(name)
                return False
            names.append(name)
            return True

        for name in selection.always:
            offer(name)
        if forced is not None and forced not in TOOL_CHOICES and catalog.get(forced) is not None:
            offer(forced)
        scores: dict[str, float] = {}
        try:
            ranked = ranking(self._index, query, len(catalog), catalog)
        except Exception as exc:  # a broken ranker: the always tools only
            record["error"] = f"{type(exc).__name__}: {exc}"
            ranked = []
        for name, score in ranked:
            if len(scores) >= selection.k:
                break
            if name not in selection.always and offer(name):
                scores[name] = round(score, 4)
        record["scores"] = scores
        record["denied"] = denied
        self._journal.append(SELECTED, record)
        return tuple(names)


def offered_executor(catalog: ToolRegistry, max_result_chars: int,
                     journal: Journal) -> OfferedExecutor:
    """The executor of a session whose recipe selects tools, holding calls to the offers
    journaled so far (its ``offer``, shared with the session's ``Selector``)."""
    return OfferedExecutor(catalog, max_result_chars, recorded_offer(journal))
