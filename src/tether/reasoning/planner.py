"""The symbolic side of LLM+P: a real planner solves the problem, an independent validator checks.

Why: a model asked to plan directly gets long-horizon plans wrong in ways it cannot see (LLM+P,
Liu et al. 2023: on Blocksworld a classical planner solved 85.3% against 63.7% for a model
planning alone). The model's job shrinks to translating the task into a PDDL problem for a fixed
domain; Fast Downward (through ``unified-planning`` and ``up-fast-downward``, Apache-2.0) finds a
plan, and ``pddl-pyvalidator`` — a separate implementation of PDDL semantics — simulates it
against the same domain and problem before any action runs. A planner bug, or a plan that does
not reach the goal, stops there.

Decision: both are protocols (``Planner``, ``Validator``) so a test or an operator can put
another behind the seam (pyperplan is GPL: it can only ever be an optional extra). Every
problem the model wrote that cannot be used comes back as ``PlanningError`` with words the model
can act on (the parser's line and column, "no plan exists", a wrong domain name). The heavy
imports happen on first use, each solve in a fresh unified-planning environment, in a worker
thread so the event loop is never blocked. pddl-pyvalidator reads problems through
unified-planning's process-wide default environment, which is not safe to use from two threads at
once (concurrent sessions crashed in it), so one plan-and-validate runs at a time per process
(``_ONE_AT_A_TIME``, a lock: it holds no data). A validator that raises is a plan not validated.
An action the policy refused is planned around, not merely refused again: ``forbid`` hands the
planner and the validator the domain and problem with that grounded action made impossible (a
static fact and a negative precondition), so the planner finds another plan when one exists —
and, having only added preconditions, never one the original domain would not allow.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tether.errors import MissingExtra, RunError, install_command

_ONE_AT_A_TIME = threading.Lock()
MISSING = (f"LLM+P needs the planning extra: {install_command('planning')} (unified-planning, "
           "up-fast-downward, pddl-pyvalidator)")


@dataclass(frozen=True, slots=True)
class PlanAction:
    """One grounded action of a plan: ``(stack a b)`` is ``PlanAction("stack", ("a", "b"))``."""

    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.name, *self.args))})"


@dataclass(frozen=True, slots=True)
class Validation:
    """The validator's verdict on a plan: valid or not, and its report."""

    valid: bool
    status: str
    report: str


class PlanningError(RunError):
    """The problem cannot be planned for; the message is written for the model to fix it."""


class PlannerMissing(MissingExtra, RuntimeError):
    """The planning extra is not installed; a ``RuntimeError`` too, as it was before it joined
    the tree, so a caller's ``except RuntimeError`` still catches it."""


class Planner(Protocol):
    def solve(self, domain: str, problem: str) -> tuple[PlanAction, ...]: ...


class Validator(Protocol):
    def validate(self, domain: str, problem: str,
                 plan: tuple[PlanAction, ...]) -> Validation: ...


def domain_name(pddl: str) -> str:
    found = re.search(r"\(\s*domain\s+([^\s()]+)", pddl, re.I)
    return found.group(1).lower() if found else ""


def problem_text(said: str) -> str:
    """The first balanced ``(define (problem ...) ...)`` in what the model said (fences and
    prose around it are ignored); PlanningError when there is none."""
    start = re.search(r"\(\s*define\s*\(\s*problem\b", said, re.I)
    if start is None:
        raise PlanningError("no PDDL problem found: reply with one problem, starting "
                            "'(define (problem NAME) (:domain DOMAIN)' and nothing else")
    return said[start.start():_close(said, start.start())]


@dataclass(frozen=True, slots=True)
class FastDownward:
    """Fast Downward through unified-planning; ``timeout`` seconds per solve."""

    timeout: float = 20.0

    def solve(self, domain: str, problem: str) -> tuple[PlanAction, ...]:
        try:
            from unified_planning.engines import PlanGenerationResultStatus as Status
            from unified_planning.environment import Environment
            from unified_planning.io import PDDLReader
        except ImportError as exc:
            raise PlannerMissing(MISSING) from exc
        wanted, named = domain_name(domain), _problem_domain(problem)
        if named != wanted:
            raise PlanningError(f"the problem names domain {named or '(none)'!r}; it must be "
                                f"(:domain {wanted})")
        env = Environment()
        env.credits_stream = None
        try:
            parsed = PDDLReader(environment=env).parse_problem_string(domain, problem)
        except Exception as exc:  # the parser's words: what and where
            raise PlanningError(f"the PDDL problem does not parse: {_one_line(exc)}. Use only "
                                "the domain's predicates, with their arity, on declared "
                                "objects") from None
        try:
            with env.factory.OneshotPlanner(name="fast-downward") as engine:
                result: Any = engine.solve(parsed, timeout=self.timeout)
        except Exception as exc:  # e.g. a feature of the problem the engine does not support
            raise PlanningError(f"the planner could not take this problem: {_one_line(exc)}")\
                from None
        if result.status in (Status.UNSOLVABLE_PROVEN, Status.UNSOLVABLE_INCOMPLETELY):
            raise PlanningError("the planner proved no plan reaches the goal from the initial "
                                "state: check that :init describes the state as it is (every "
                                "fact the actions need) and that :goal is what was asked")
        if result.plan is None:
            raise PlanningError(f"the planner found no plan ({result.status.name.lower()})")
        return tuple(PlanAction(a.action.name, tuple(str(p) for p in a.actual_parameters))
                     for a in result.plan.actions)


@dataclass(frozen=True, slots=True)
class PyVal:
    """pddl-pyvalidator: simulates the plan step by step and checks the goal."""

    def validate(self, domain: str, problem: str,
                 plan: tuple[PlanAction, ...]) -> Validation:
        try:
            from pyval import PDDLValidator
        except ImportError as exc:
            raise PlannerMissing(MISSING) from exc
        with tempfile.TemporaryDirectory(prefix="tether-plan-") as tmp:
            paths = [Path(tmp, name) for name in ("domain.pddl", "problem.pddl", "plan.txt")]
            for path, text in zip(paths, (domain, problem, "\n".join(map(str, plan))),
                                  strict=True):
                path.write_text(text + "\n", encoding="utf-8")
            try:
                result = PDDLValidator().validate(*(str(p) for p in paths))
            except Exception as exc:  # it could not check the plan: not validated
                return Validation(False, "VALIDATOR_ERROR", _one_line(exc))
        return Validation(bool(result.is_valid), str(result.status), result.report()[:4000])


async def solve_and_validate(planner: Planner, validator: Validator, domain: str,
                             problem: str) -> tuple[tuple[PlanAction, ...], Validation]:
    """Plan, then validate, off the event loop."""
    def work() -> tuple[tuple[PlanAction, ...], Validation]:
        with _ONE_AT_A_TIME:
            plan = planner.solve(domain, problem)
            return plan, validator.validate(domain, problem, plan)

    return await asyncio.to_thread(work)


def forbid(domain: str, problem: str, refused: Iterable[PlanAction]) -> tuple[str, str]:
    """The domain and problem with each ``refused`` grounded action made impossible: a static
    fact ``(tether-refused-NAME args...)`` in the problem's :init, and ``(not (tether-refused-NAME
    ?params...))`` added to that action's precondition. The planner then finds another plan if
    one exists, and a plan valid here is valid in the original (only preconditions were added).
    A refused action naming an object the problem does not declare cannot occur: it is left
    out. Unchanged when nothing is refused."""
    declared = _objects(_section(problem, ":objects") or "") | _objects(
        _section(domain, ":constants") or "")
    by_name: dict[str, list[PlanAction]] = {}
    for action in refused:
        if all(a.lower() in declared for a in action.args):
            by_name.setdefault(action.name.lower(), []).append(action)
    if not by_name:
        return domain, problem
    predicates = []
    for name in by_name:
        found = re.search(rf"\(:action\s+{re.escape(name)}\s", domain, re.I)
        if found is None:
            continue
        block_end = _close(domain, found.start())
        block = domain[found.start():block_end]
        params = _section(block, ":parameters") or ""
        variables = " ".join(re.findall(r"\?[^\s()]+", params))
        guard = f"(not (tether-refused-{name} {variables}))".replace(" )", ")")
        pre = re.search(r":precondition\s*\(", block, re.I)
        if pre is None:
            at = block.lower().index(":parameters")
            at = _close(block, block.index("(", at)) if params else at
            block = f"{block[:at]} :precondition {guard}{block[at:]}"
        else:
            start = pre.end() - 1
            end = _close(block, start)
            block = f"{block[:start]}(and {guard} {block[start:end]}){block[end:]}"
        domain = domain[:found.start()] + block + domain[block_end:]
        predicates.append(f"(tether-refused-{name} {params.strip()[1:-1].strip()})"
                          .replace(" )", ")"))
    domain = _insert(domain, ":predicates", " ".join(predicates))
    if re.search(r"\(\s*:requirements\b", domain, re.I):
        domain = _insert(domain, ":requirements", ":negative-preconditions")
    else:
        head = re.search(r"\(\s*domain\s+[^\s()]+\s*\)", domain, re.I)
        if head is None:
            raise PlanningError("the domain has no (domain NAME) header")
        domain = (f"{domain[:head.end()]} (:requirements :negative-preconditions)"
                  f"{domain[head.end():]}")
    facts = " ".join(f"(tether-refused-{a.name.lower()} {' '.join(a.args)})".replace(" )", ")")
                     for actions in by_name.values() for a in actions)
    return domain, _insert(problem, ":init", facts)


def _close(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise PlanningError("the PDDL problem is cut off: its parentheses never close (count "
                        "them: every '(' needs its ')')")


def _section(text: str, key: str) -> str | None:
    """The s-expression that follows ``key`` (``:parameters (...)``) or, for a section such as
    ``(:objects ...)``, its body; None when there is none."""
    found = re.search(rf"\(\s*{re.escape(key)}\b", text, re.I)
    if found is not None:  # a section: (:objects a b - t)
        return text[found.end():_close(text, found.start()) - 1]
    found = re.search(rf"{re.escape(key)}\s*\(", text, re.I)
    return None if found is None else text[found.end() - 1:_close(text, found.end() - 1)]


def _objects(section: str) -> set[str]:
    """The names a (:objects ...) or (:constants ...) body declares (types left out)."""
    words = section.split()
    return {w.lower() for i, w in enumerate(words)
            if w != "-" and (i == 0 or words[i - 1] != "-")}


def _insert(text: str, section: str, what: str) -> str:
    """``what`` added at the start of ``(section ...)``."""
    found = re.search(rf"\(\s*{re.escape(section)}\b", text, re.I)
    if found is None:
        raise PlanningError(f"the PDDL has no ({section} ...) section")
    return f"{text[:found.end()]} {what}{text[found.end():]}"


def _problem_domain(problem: str) -> str:
    found = re.search(r"\(\s*:domain\s+([^\s()]+)", problem, re.I)
    return found.group(1).lower() if found else ""


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
