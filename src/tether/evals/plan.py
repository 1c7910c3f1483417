"""An evaluation's plan of trials, and running it in this process: what every executor shares.

Why a module of its own: ``evaluate`` (``tether.evals.runner``) runs a plan here or hands it to
other processes (``tether.evals.distributed``), and every worker runs its chunk with the same
``run_plan``. Kept in ``runner.py``, the plan would make the runner and its distributed executor
import each other; here both stand on it. Decision: a plan's trial ids are deterministic, so any
executor that runs a chunk of ``plan.keys`` finds what the store already graded and skips it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import InvalidArgument, WrongType
from tether.evals.keys import TrialKey
from tether.evals.perturb import Perturbation, perturbations
from tether.evals.tasks import Task, check_tasks
from tether.evals.trials import AgentSource, TrialRecord, TrialRunner
from tether.store.base import Store

Progress = Callable[[int, int], None]  # (trials done, trials in all)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to run: the trials' keys, in order, with their tasks and perturbations by name."""

    evaluation: str
    tasks: Mapping[str, Task]
    perturbations: Mapping[str, Perturbation]  # in the order given
    keys: tuple[TrialKey, ...]

    @classmethod
    def of(cls, tasks: Sequence[Task], *, k: int, perturbations_: Sequence[Any], seed: int,
           evaluation: str, suite: str) -> Plan:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidArgument(f"k must be a whole number >= 1, got {k!r}")
        checked = check_tasks(tasks)
        chosen = perturbations(perturbations_)
        keys = tuple(TrialKey(evaluation, suite, t.id, p.name, rep, seed)
                     for t in checked for p in chosen for rep in range(k))
        return cls(evaluation, {t.id: t for t in checked}, {p.name: p for p in chosen}, keys)


def agent_source(agent: Any) -> AgentSource:
    """An Agent, a factory or a ``module:function`` reference, as (environment) -> Agent."""
    from tether.runtime.lifecycle.agent import Agent

    if isinstance(agent, Agent):
        return lambda _environment: agent
    if isinstance(agent, str):
        agent = load_reference(agent)
    if not callable(agent):
        raise WrongType(f"agent {agent!r} is neither a tether Agent, a factory, nor a "
                        "'module:function' reference to one")
    try:
        takes = len(inspect.signature(agent).parameters)
    except (TypeError, ValueError):
        takes = 0
    factory = agent
    return (lambda environment: factory(environment)) if takes else (lambda _e: factory())


def load_reference(reference: str) -> Any:
    """The factory (or Agent) a ``module:function`` or ``file.py:function`` reference names."""
    from tether.references import BadReference, import_object

    try:
        return import_object(reference, "a function returning the Agent to evaluate")
    except BadReference as exc:
        raise InvalidArgument(str(exc)) from None


async def run_plan(plan: Plan, keys: Sequence[TrialKey], agent_for: AgentSource, store: Store,
                   *, concurrency: int = 8, progress: Progress | None = None
                   ) -> list[TrialRecord]:
    """Run ``keys`` of ``plan`` in this event loop, at most ``concurrency`` at once; the grades
    are written before it returns (or raises)."""
    if concurrency < 1:
        raise InvalidArgument("concurrency must be >= 1")
    runner = TrialRunner(store, plan.evaluation, agent_for)
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(key: TrialKey) -> TrialRecord:
        nonlocal done
        async with gate:
            record = await runner.run(key, plan.tasks[key.task],
                                      plan.perturbations[key.perturbation])
        done += 1
        if progress is not None:
            progress(done, len(keys))
        return record

    try:
        return list(await asyncio.gather(*(one(key) for key in keys)))
    finally:
        await runner.close()
