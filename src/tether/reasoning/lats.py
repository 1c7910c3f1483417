"""LATS: a Monte-Carlo tree search over model and tool steps; side effects only on the chosen path.

Why: a greedy agent (ReAct) commits to the model's first idea at every step; when that idea is
wrong, the run is. Language Agent Tree Search (Zhou et al., 2023) keeps a tree of partial
trajectories instead: it *selects* a node by UCT, *expands* it with n candidate next steps sampled
from that node's own context, *evaluates* each with a value function (the model's self-evaluation
or a grader), *backpropagates* the values to the root, and *reflects* on failed answers so later
expansions avoid the mistake — until an answer is judged right or the search runs out.

Decision: every call goes through the chokepoint. Each candidate, evaluation and reflection is a
branch call (``Handle.ask_branch``): budgeted like any model call, journaled under its node's key,
never in the session's conversation. A candidate's calls run with ``Handle.call_branch``: those
without side effects through the gate, those with side effects only *simulated* (proposed, not
run). Only the path finally chosen runs its side effects, for real, in order, each through the
gate with ``Handle.call_planned`` — an abandoned branch never causes one. The shared budget holds
over every branch; when it refuses a branch call the search stops there and the best trajectory
found is used. The tree is journaled (``strategy.note`` ``lats.node`` per node, ``lats.tree`` at
the end: each node's parent, action, value and visits; ``tether audit show`` draws it). The search
is deterministic given the model's answers, so a resumed run re-walks it from the journal (no call
asked or run again, no note written twice) and a rerun reproduces it.

With ``rollout_depth`` > 0 the search also *simulates*, as Zhou et al. do: from the best new child
it keeps expanding the best-valued child, up to that many steps or an answer, so an iteration can
reach an answer the tree's value alone would have taken many iterations to find (every node on the
way is in the tree, valued and journaled like any other). At 0 a new node is valued where it
stands. Not in this version: a snapshot/restore an environment could declare to explore side
effects (they are simulated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.errors import InvalidArgument, RunError
from tether.reasoning.graders import CallRecord
from tether.reasoning.lats_values import (
    GraderValue,
    Judgement,
    SelfEvaluation,
    Trajectory,
    ValueFunction,
)
from tether.runtime.strategy.branching import BranchRefused
from tether.runtime.strategy.handle import Handle
from tether.runtime.strategy.planned import Note, PlannedCalls
from tether.types import Message, ModelResponse

__all__ = ["LATS", "GraderValue", "Judgement", "SelfEvaluation", "Trajectory", "ValueFunction"]

REFLECT_NOTE = ("That answer was judged wrong ({why}). In two sentences: what went wrong, and "
                "what should be done differently? Do not answer the task.")
REFLECTIONS_NOTE = ("Reflections on earlier failed attempts at this task — do not repeat the "
                    "mistakes:\n{reflections}")
OTHERS_NOTE = ("Other candidates already proposed for this step: {others}. Propose a different "
               "next step.")
FINISH_NOTE = ("[tether] The search chose a path; its side-effecting steps ran for real (results "
               "above). The path's answer was: {answer}\nGive the user the final answer, "
               "without tools.")
FAILED_NOTE = ("[tether] The search chose a path, but its step {call} did not succeed "
               "({status}: {content}); the steps after it did not run. Tell the user plainly "
               "what was done and what was not, without tools.")
UNSOLVED_NOTE = ("[tether] The search ended ({why}) without a path that can be carried out. The "
                 "most promising one:\n{path}\nNone of its side-effecting steps ran. Tell the "
                 "user plainly what is known and what was not done, without tools.")
UNVERIFIED_NOTE = ("[tether] The search ended ({why}) without an answer judged right. The best "
                   "one found, not verified: {answer}\nIt was judged {value:.2f} (an answer "
                   "judged right needs {solved_at}): {judgement}. Tell the user plainly that "
                   "this answer is not verified, and what is known, without tools.")
PLANNED_REASON = "lats: chosen path {node}, side effect {index}/{count}"
FINISH_STEPS = 2  # steps the search leaves for finishing: a model turn needs one more held back


@dataclass(eq=False, slots=True)
class _Node:
    """One node of a run's tree (per run, never on the recipe)."""

    id: str
    parent: _Node | None
    messages: tuple[Message, ...]  # the branch context after the session's opening
    action: str
    calls: tuple[CallRecord, ...] = ()  # every call on the path, in order
    effects: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # side effects proposed on the path
    answer: str | None = None  # set on a terminal node
    value: float = 0.0
    why: str = ""
    visits: int = 0
    total: float = 0.0
    children: list[_Node] = field(default_factory=list)
    expanded: bool = False
    key: str = ""  # the branch call that proposed it

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    @property
    def q(self) -> float:
        return self.total / self.visits if self.visits else 0.0


@dataclass(frozen=True, slots=True)
class LATS:
    """A strategy: a tree search over model and tool steps, with side effects only on the chosen
    path: ``Agent(reasoning=LATS(value=GraderValue(contains("77")), n=3))``.

    Args:
        value: Values each candidate node in 0..1: ``SelfEvaluation()`` (the model's own
            judgement) or ``GraderValue(grader)`` (a grader of ``tether.evals``).
        n: Candidate next steps per expansion.
        max_iterations: Select-expand-evaluate rounds at most.
        max_depth: Steps a path may take from the root.
        exploration: UCT's exploration constant.
        solved_at: A terminal node valued at least this ends the search; only such a path's
            side effects run.
        reflection_tokens: The output cap of a reflection on a failed answer.
        rollout_depth: Steps a rollout goes past a newly expanded node toward an answer (0:
            none).
    """

    value: ValueFunction = field(default_factory=SelfEvaluation)
    n: int = 3
    max_iterations: int = 10
    max_depth: int = 6
    exploration: float = 1.0
    solved_at: float = 0.9
    reflection_tokens: int = 192
    rollout_depth: int = 0

    def __post_init__(self) -> None:
        for name in ("n", "max_iterations", "max_depth", "reflection_tokens"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise InvalidArgument(f"{name} must be a whole number >= 1")
        if type(self.rollout_depth) is not int or self.rollout_depth < 0:
            raise InvalidArgument("rollout_depth must be a whole number >= 0")
        if not 0 < self.solved_at <= 1 or self.exploration < 0:
            raise InvalidArgument("solved_at must be in (0, 1] and exploration >= 0")

    async def run(self, handle: Handle) -> str:
        search = _Search(self, handle)
        chosen = await search.run()
        if chosen.answer is not None and chosen.value >= self.solved_at:
            return await _finish(handle, chosen)
        if chosen.answer is not None and not chosen.effects:  # an answer judged wrong: said so
            return (await handle.ask_model(note=UNVERIFIED_NOTE.format(
                why=search.stopped or "unsolved", answer=chosen.answer, value=chosen.value,
                solved_at=self.solved_at, judgement=chosen.why or "no reason given"),
                tool_choice="none")).text
        return (await handle.ask_model(note=UNSOLVED_NOTE.format(
            why=search.stopped or "unsolved", path=_transcript(chosen)), tool_choice="none")).text


class _Search:
    """One run's tree and the state of its search."""

    def __init__(self, lats: LATS, handle: Handle) -> None:
        self.lats, self.handle = lats, handle
        notes = [e for e in handle.history() if isinstance(e, Note)]
        # what an earlier activation journaled (a pause, a crash): the re-walk writes it once,
        # and a call it answered needs no room (it is answered from the journal)
        self.journaled = {str(n.data.get("id")) for n in notes if n.kind == "lats.node"} | {
            f"{n.data.get('id')}.r" for n in notes if n.kind == "lats.reflection"}
        self.answered = {str(n.data.get("key")) for n in notes if n.kind == "lats.node"} | {
            f"{n.data.get('id')}.r" for n in notes if n.kind == "lats.reflection"}
        self.tree = next((n.data for n in notes if n.kind == "lats.tree"), None)
        self.root = _Node("n0", None, (), "start")
        self.nodes = [self.root]
        self.reflections: list[str] = []
        self.stopped = ""

    async def run(self) -> _Node:
        solved: _Node | None = None
        try:
            for _ in range(self.lats.max_iterations):
                node = self._select()
                if node is None:
                    self.stopped = "the tree is fully explored"
                    break
                if node.answer is not None or node.depth >= self.lats.max_depth:
                    node.expanded = True
                    self._backpropagate(node, node.value)
                    continue
                solved = await self._expand(node) or await self._rollout(node)
                if solved is not None:
                    break
            else:
                self.stopped = f"{self.lats.max_iterations} iterations"
        except BranchRefused as refused:
            self.stopped = f"the budget: {refused}"
        except _Spent as spent:
            self.stopped = str(spent)
        chosen = solved or self._best()
        if self.tree is not None:  # resumed after the search: the path it chose stands
            return next((n for n in self.nodes if n.id == self.tree["chosen"]), chosen)
        self.handle.record("lats.tree", {
            "chosen": chosen.id, "solved": solved is not None,
            "stopped": "" if solved else self.stopped,
            "nodes": [{"id": n.id, "parent": n.parent.id if n.parent else None,
                       "action": n.action, "value": round(n.value, 3),
                       "visits": n.visits, "q": round(n.q, 3),
                       "terminal": n.answer is not None} for n in self.nodes]})
        return chosen

    def _select(self) -> _Node | None:
        """Descend from the root by UCT to a node not expanded yet (or a terminal one)."""
        node = self.root
        while node.expanded:
            open_children = [c for c in node.children if not _exhausted(c)]
            if not open_children:  # (only the root: a node chosen had an open child)
                return None
            node = max(open_children, key=lambda c: self._uct(node, c))
        return node

    def _uct(self, parent: _Node, child: _Node) -> float:
        if not child.visits:
            return math.inf
        return child.q + self.lats.exploration * math.sqrt(math.log(parent.visits) / child.visits)

    async def _expand(self, node: _Node) -> _Node | None:
        """n candidates from the node's context, each valued; a solved terminal one, if any."""
        node.expanded = True
        actions: list[str] = []
        solved: _Node | None = None
        head = (Message.user(REFLECTIONS_NOTE.format(reflections="\n".join(
            f"{i}. {r}" for i, r in enumerate(self.reflections, 1)))),) \
            if self.reflections else ()
        for i in range(1, self.lats.n + 1):
            tail = (Message.user(OTHERS_NOTE.format(others="; ".join(actions))),) \
                if actions else ()
            key = f"{node.id}.s{i}"
            self._check_room(key)
            answer = await self.handle.ask_branch((*head, *node.messages, *tail), key=key)
            action = _action(answer)
            if action in actions:
                continue  # the same step again: nothing new to explore
            actions.append(action)
            child = await self._child(node, answer, action, key)
            judged = await self.lats.value.judge(self.handle, self.handle.task, Trajectory(
                child.id, child.messages, child.calls, child.answer))
            child.value, child.why = judged.value, judged.why
            self._journal(child)
            self._backpropagate(child, child.value)
            if child.answer is not None:
                child.expanded = True
                if child.value >= self.lats.solved_at:
                    solved = solved or child
                    break
                self._check_room(f"{child.id}.r")
                await self._reflect(child)
        return solved

    async def _rollout(self, node: _Node) -> _Node | None:
        """Simulation: from ``node``'s best child, expand the best-valued open child again and
        again, up to ``rollout_depth`` steps or an answer; a solved terminal node, if reached."""
        for _ in range(self.lats.rollout_depth):
            open_children = [c for c in node.children
                             if c.answer is None and c.depth < self.lats.max_depth]
            if not open_children:
                return None
            node = max(open_children, key=lambda c: (c.value, -int(c.id[1:])))
            solved = await self._expand(node)
            if solved is not None:
                return solved
        return None

    async def _child(self, node: _Node, answer: ModelResponse, action: str, key: str) -> _Node:
        child_id = f"n{len(self.nodes)}"
        said = Message.assistant(answer.text, answer.tool_calls)
        if not answer.tool_calls:
            child = _Node(child_id, node, (*node.messages, said), action, node.calls,
                          node.effects, answer=answer.text)
        else:
            results = await self.handle.call_branch(answer.tool_calls)
            records = tuple(CallRecord(c.name, c.arguments if isinstance(c.arguments, Mapping)
                                       else {}, "ok" if r.status == "simulated" else r.status,
                                       r.content)
                            for c, r in zip(answer.tool_calls, results, strict=True))
            effects = tuple((c.name, c.arguments) for c, r in zip(answer.tool_calls, results,
                                                                  strict=True)
                            if r.status == "simulated" and isinstance(c.arguments, Mapping))
            seen = tuple(Message.tool(r.call_id, r.name, r.content) for r in results)
            child = _Node(child_id, node, (*node.messages, said, *seen), action,
                          node.calls + records, node.effects + effects)
        child.key = key
        node.children.append(child)
        self.nodes.append(child)
        return child

    async def _reflect(self, child: _Node) -> None:
        """A failed answer: the model says, in a tool-less branch call, what to do instead."""
        said = await self.handle.ask_branch(
            (*child.messages, Message.user(REFLECT_NOTE.format(why=child.why or "no reason"))),
            key=f"{child.id}.r", tools=False, max_output_tokens=self.lats.reflection_tokens)
        self.reflections.append(" ".join(said.text.split()))
        if f"{child.id}.r" not in self.journaled:
            self.handle.record("lats.reflection", {"id": child.id, "text": said.text})
            self.journaled.add(f"{child.id}.r")

    def _check_room(self, key: str) -> None:
        """Keep what finishing needs: the steps for one model turn, and a tool call per side
        effect the best path so far would run (a call journaled already costs nothing)."""
        if self.tree is not None or key in self.answered or _before_answered(key, self.answered):
            return
        left = self.handle.remaining_budget()
        if left.get("steps") is not None and left["steps"] <= FINISH_STEPS:
            raise _Spent(f"the budget: {left['steps']} steps left are kept to finish")
        if left.get("tool_calls") is not None and left["tool_calls"] < len(self._best().effects):
            raise _Spent("the budget: the tool calls left are kept for the chosen path")

    def _backpropagate(self, node: _Node | None, value: float) -> None:
        while node is not None:
            node.visits += 1
            node.total += value
            node = node.parent

    def _journal(self, node: _Node) -> None:
        if node.id in self.journaled:  # resumed: written before the pause or the crash
            return
        self.journaled.add(node.id)
        assert node.parent is not None
        self.handle.record("lats.node", {
            "id": node.id, "parent": node.parent.id, "key": node.key, "action": node.action,
            "value": round(node.value, 3), "why": node.why[:200],
            "terminal": node.answer is not None,
            "simulated": [name for name, _ in node.effects[len(node.parent.effects):]]})

    def _best(self) -> _Node:
        """The best trajectory found: the best-valued answer, else the most promising node."""
        answers = [n for n in self.nodes if n.answer is not None]
        pool = answers or self.nodes
        return max(pool, key=lambda n: (n.value, n.q, -int(n.id[1:])))


def _before_answered(key: str, answered: set[str]) -> bool:
    """Whether candidate ``key`` (``n3.s1``) came before one journaled (``n3.s2``): asked then
    too, candidates being asked in order (one that repeated an earlier left no node)."""
    node, _, index = key.rpartition(".s")
    return index.isdigit() and any(
        k.startswith(f"{node}.s") and k[len(node) + 2:].isdigit()
        and int(k[len(node) + 2:]) > int(index) for k in answered)


class _Spent(RunError):
    """What the budget has left is kept for finishing: the search ends here."""


def _transcript(node: _Node) -> str:
    """A path's steps and what each observed, in a few lines."""
    lines, at = [], node
    while at.parent is not None:
        lines.append(f"- {at.action}")
        at = at.parent
    observed = [f"  saw: {' '.join(m.content.split())[:160]}" for m in node.messages
                if m.role == "tool"]
    return "\n".join([*reversed(lines), *observed]) or "(no step was taken)"


def _exhausted(node: _Node) -> bool:
    return node.expanded and (node.answer is not None or not node.children
                              or all(_exhausted(c) for c in node.children))


def _action(answer: ModelResponse) -> str:
    """A candidate's step in a line: its calls, or its answer."""
    if answer.tool_calls:
        return "; ".join(f"{c.name}({_args(c.arguments)})" for c in answer.tool_calls)
    return "answer: " + " ".join(answer.text.split())[:120]


def _args(arguments: Any) -> str:
    if not isinstance(arguments, Mapping):
        return str(arguments)[:60]
    return ", ".join(f"{k}={v!r}" for k, v in sorted(arguments.items()))[:100]


async def _finish(handle: Handle, chosen: _Node) -> str:
    """Run the chosen path's side effects for real, in order, through the gate; then answer."""
    if not chosen.effects:
        if not any(isinstance(e, Note) and e.kind == "lats.answered" for e in handle.history()):
            handle.record("lats.answered", {"node": chosen.id})
            return chosen.answer or ""
        # run again after answering (a repair of the answer's form): the path stands, and the
        # model answers — handing back the journaled branch answer would repair nothing
        return (await handle.ask_model(note=FINISH_NOTE.format(answer=chosen.answer or "(none)"),
                                       tool_choice="none")).text
    done = [e for e in handle.history()
            if isinstance(e, PlannedCalls) and e.reason.startswith("lats: chosen path")]
    count = len(chosen.effects)
    left = handle.remaining_budget().get("tool_calls")
    if left is not None and left < count - len(done):  # all of the path's side effects or none
        return (await handle.ask_model(note=UNSOLVED_NOTE.format(
            why=f"the path needs {count - len(done)} tool calls for its side effects and the "
            f"budget has {left} left", path=_transcript(chosen)), tool_choice="none")).text
    for index, (name, arguments) in enumerate(chosen.effects, start=1):
        if index <= len(done):  # resumed: this one is journaled with its result
            (result,) = done[index - 1].results
        else:
            (result,) = await handle.call_planned(
                [(name, arguments)],
                reason=PLANNED_REASON.format(node=chosen.id, index=index, count=count))
        if result is None or result.status != "ok":
            note = FAILED_NOTE.format(call=f"{name}({_args(arguments)})",
                                      status=result.status if result else "unknown",
                                      content=result.content if result else "")
            return (await handle.ask_model(note=note, tool_choice="none")).text
    return (await handle.ask_model(note=FINISH_NOTE.format(answer=chosen.answer or "(none)"),
                                   tool_choice="none")).text

