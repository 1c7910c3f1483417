"""LLM+P: the model writes a PDDL problem, a real planner solves it, the plan runs through the gate.

Why: Liu et al. (2023) showed that a model translating a task into a planning problem, with a
classical planner doing the search, solves far more Blocksworld tasks than the model planning
alone (85.3% against 63.7%). Here the translation is the model's only job; Fast Downward plans,
an independent validator checks the plan against the same domain and problem, and only then do
the plan's actions run — each as a tool call through ``Handle.call_planned``, so policy,
approvals, budgets, the effect ledger and the journal hold for the planner's actions exactly as
for a model's.

Decision: the problem turn offers no tool and is capped (``problem_tokens``); a problem that
does not parse, names the wrong domain, has no plan, or whose plan does not validate gets the
reason back as a note the model can act on, at most ``max_problems`` times per plan. Each step's
arguments come from the validated plan (journaled as ``strategy.note`` ``plan`` with the
problem, the actions and the validation) — never from anything the model writes after it. A step
that fails or is refused stops the plan; the model is told what happened and writes a new
problem from the world as it now is (``max_replans``); an action the policy refused is never
planned again: the planner and the validator read the domain and problem with that grounded
action made impossible (``planner.forbid``), so the next plan goes around it when another plan
exists (and a plan that still names it, from a planner that ignores the guard, is sent back).
On resume the strategy continues from its journaled plan (``Handle.history``), so a step whose
result is journaled never runs again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tether.errors import InvalidArgument
from tether.reasoning.pddl import Domain
from tether.reasoning.planner import (
    FastDownward,
    PlanAction,
    Planner,
    PlanningError,
    PyVal,
    Validator,
    forbid,
    problem_text,
    solve_and_validate,
)
from tether.runtime.strategy.handle import Handle
from tether.runtime.strategy.planned import Entry, Note, PlannedCalls

PROBLEM_NOTE = ("Plan this with a classical planner. Write a PDDL problem for the domain below: "
                "the :objects, the :init facts that hold now, and the :goal the task asks for. "
                "Reply with the problem only, starting (define (problem NAME) (:domain {name}).\n"
                "\n{pddl}")
RETRY_NOTE = "That problem cannot be used: {why}. Write the corrected problem only."
REPLAN_NOTE = ("Step {index} of the plan, {action}, {status}: {content}\nThe steps before it "
               "ran. Write a new PDDL problem for domain {name}, from the world as it is now, "
               "to the same goal. Reply with the problem only.")
REFUSED_NOTE = (" The policy refused {actions}: the planner is told, and plans around them if it "
                "can; describe the world as it is.")
DONE_NOTE = ("[tether] The plan ran: all {steps} steps succeeded. Tell the user the outcome in "
             "a sentence or two, without tools.")
FAILED_NOTE = ("[tether] The task could not be planned or carried out: {why}. Tell the user "
               "plainly what was done and what was not, without tools.")


@dataclass(frozen=True, slots=True)
class _Progress:
    """Where a run stands, read off the strategy's journaled notes and planned calls."""

    plan: tuple[PlanAction, ...] | None = None  # the plan being run (None: none yet)
    plans: int = 0  # plans made so far
    done: int = 0  # steps of the current plan that ran and succeeded
    failed: PlannedCalls | None = None  # the step that stopped the current plan
    refused: frozenset[PlanAction] = frozenset()  # actions the policy refused
    ended: str | None = None  # "done" or the reason the strategy gave up


def _progress(history: Sequence[Entry]) -> _Progress:
    plan: tuple[PlanAction, ...] | None = None
    plans = done = 0
    failed: PlannedCalls | None = None
    refused: set[PlanAction] = set()
    ended: str | None = None
    for entry in history:
        if isinstance(entry, Note) and entry.kind == "plan":
            plan = tuple(PlanAction(a[0], tuple(a[1:])) for a in entry.data["actions"])
            plans, done, failed = plans + 1, 0, None
        elif isinstance(entry, Note) and entry.kind in ("plan.done", "plan.abandoned"):
            ended = "done" if entry.kind == "plan.done" else str(entry.data.get("why", ""))
        elif isinstance(entry, PlannedCalls) and plan is not None and failed is None:
            result = entry.results[0]
            if result is not None and result.status == "ok":
                done += 1
            else:
                failed = entry
                if result is not None and result.status == "denied":
                    refused.add(plan[done])
    return _Progress(plan, plans, done, failed, frozenset(refused), ended)


@dataclass(frozen=True, slots=True)
class LLMP:
    """A strategy: the model writes a PDDL problem, a classical planner solves it, a validator
    checks the plan, and its actions run as governed tool calls:
    ``Agent(reasoning=LLMP(blocksworld()), tools=world.tools())`` (the ``planning`` extra).

    Args:
        domain: The PDDL domain the model writes problems for (``tether.reasoning.pddl``).
        planner: Solves the problem. Default: Fast Downward.
        validator: Checks the plan against the same domain and problem. Default:
            pddl-pyvalidator.
        max_problems: Problems the model may write per plan (each failure's reason goes back to
            it).
        max_replans: New plans after a step fails or is refused, written from the world as it
            then is.
        problem_tokens: The output cap of the turn that writes the problem.
    """

    domain: Domain
    planner: Planner = field(default_factory=FastDownward)
    validator: Validator = field(default_factory=PyVal)
    max_problems: int = 3
    max_replans: int = 2
    problem_tokens: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_problems", "problem_tokens"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 1:
                raise InvalidArgument(f"{name} must be a whole number >= 1")
        if type(self.max_replans) is not int or self.max_replans < 0:
            raise InvalidArgument("max_replans must be a whole number >= 0")

    async def run(self, handle: Handle) -> str:
        progress = _progress(handle.history())
        while progress.ended is None:
            if progress.plan is None or progress.failed is not None:
                if progress.plans > self.max_replans:
                    why = f"the plan failed {progress.plans} times"
                    handle.record("plan.abandoned", {"why": why})
                    return await _final(handle, FAILED_NOTE.format(why=why))
                note = self._first_note(progress)
                if not await self._plan(handle, note, progress):
                    why = f"no usable problem after {self.max_problems} tries"
                    handle.record("plan.abandoned", {"why": why})
                    return await _final(handle, FAILED_NOTE.format(why=why))
            elif progress.done == len(progress.plan):
                handle.record("plan.done", {"steps": progress.done})
            else:
                await self._step(handle, progress)
            progress = _progress(handle.history())
        if progress.ended == "done":
            assert progress.plan is not None
            return await _final(handle, DONE_NOTE.format(steps=len(progress.plan)))
        return await _final(handle, FAILED_NOTE.format(why=progress.ended))

    def _first_note(self, progress: _Progress) -> str:
        domain = self.domain
        if progress.failed is None:
            return PROBLEM_NOTE.format(name=domain.name, pddl=domain.pddl.strip())
        assert progress.plan is not None
        result = progress.failed.results[0]
        note = REPLAN_NOTE.format(
            index=progress.done + 1, action=progress.plan[progress.done], name=domain.name,
            status="was not run: it waits for a person" if result is None
            else f"ended {result.status}", content=result.content if result else "")
        if progress.refused:
            note += REFUSED_NOTE.format(actions=", ".join(sorted(map(str, progress.refused))))
        return note

    async def _plan(self, handle: Handle, note: str, progress: _Progress) -> bool:
        """Ask for a problem, plan, validate and journal the plan; False when every try
        failed. Nothing runs here."""
        for attempt in range(1, self.max_problems + 1):
            said = (await handle.ask_model(note=note, tool_choice="none",
                                           max_output_tokens=self.problem_tokens)).text
            try:
                problem = problem_text(said)
                # the refused actions are made impossible in what the planner and the validator
                # read, so the plan goes around them when another way exists
                plan, validation = await solve_and_validate(
                    self.planner, self.validator,
                    *forbid(self.domain.pddl, problem, progress.refused))
                if not validation.valid:
                    raise PlanningError(f"the planner's plan does not validate "
                                        f"({validation.status}); describe the task again")
                needs = sorted(str(a) for a in set(plan) & progress.refused)
                if needs:
                    raise PlanningError(f"its plan needs {', '.join(needs)}, which the policy "
                                        "refuses; describe the world so another way is found")
                for action in plan:
                    self.domain.call_for(action)  # every step maps onto a tool
            except (PlanningError, ValueError) as exc:
                handle.record("problem.invalid", {"attempt": attempt, "why": str(exc)})
                note = RETRY_NOTE.format(why=exc)
                continue
            handle.record("plan", {
                "plan": progress.plans + 1, "domain": self.domain.name, "problem": problem,
                "actions": [[a.name, *a.args] for a in plan],
                "validation": {"valid": validation.valid, "status": validation.status,
                               "validator": type(self.validator).__name__},
                "planner": type(self.planner).__name__,
                "refused": sorted(map(str, progress.refused))})
            return True
        return False

    async def _step(self, handle: Handle, progress: _Progress) -> None:
        """Run the next step of the journaled plan through the gate."""
        plan = progress.plan
        assert plan is not None
        index = progress.done
        action = plan[index]
        await handle.call_planned([self.domain.call_for(action)],
                                  reason=f"plan {progress.plans} step {index + 1}/{len(plan)}: "
                                         f"{action}")


async def _final(handle: Handle, note: str) -> str:
    return (await handle.ask_model(note=note, tool_choice="none")).text
