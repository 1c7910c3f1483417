"""``evaluate``: every task × perturbation × repetition as a trial, run with bounded concurrency.

Why: the evaluation is a plan of trials with deterministic ids, and executing it is a separate
concern — in one event loop (the default: trials are mostly waiting on models), in worker
processes, or on a Dask cluster (``tether.evals.distributed``). Each executor runs the same
``TrialRunner``, which skips a trial the store already has a grade for, so an interrupted
evaluation resumes where it stopped and a retried worker never counts a trial twice.

The agent is given as an Agent, a factory (called with the trial's environment when it takes an
argument, else with none) or a ``"module:function"`` reference to one; the workers and Dask need a
reference or a picklable factory, and a store every process can reach (SQLite or PostgreSQL).
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
from tether.evals.report import Report
from tether.evals.tasks import Task, check_tasks
from tether.evals.trials import AgentSource, TrialRecord, TrialRunner
from tether.store.base import Store, open_store

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


def evaluate(agent: Any, tasks: Sequence[Task], *, k: int = 8,
             perturbations: Sequence[str | Perturbation] = ("canonical",), seed: int = 0,
             name: str = "eval", suite: str = "suite", store: Store | str | None = None,
             concurrency: int = 8, workers: int = 1, dask: Any = None,
             progress: Progress | None = None) -> Report:
    """Evaluate ``agent`` on ``tasks``: ``k`` trials of each under each perturbation, graded,
    journaled in ``store`` (default: the agent's, else in memory), reported as pass^k."""
    from tether.runtime.lifecycle.sync import run_sync

    result: Report = run_sync(aevaluate(
        agent, tasks, k=k, perturbations=perturbations, seed=seed, name=name, suite=suite,
        store=store, concurrency=concurrency, workers=workers, dask=dask, progress=progress))
    return result


async def aevaluate(agent: Any, tasks: Sequence[Task], *, k: int = 8,
                    perturbations: Sequence[str | Perturbation] = ("canonical",),
                    seed: int = 0, name: str = "eval", suite: str = "suite",
                    store: Store | str | None = None, concurrency: int = 8, workers: int = 1,
                    dask: Any = None, progress: Progress | None = None) -> Report:
    from tether.runtime.lifecycle.agent import Agent

    plan = Plan.of(tasks, k=k, perturbations_=perturbations, seed=seed, evaluation=name,
                   suite=suite)
    opened = _store(store, agent)
    try:
        if isinstance(agent, Agent):  # bound to the store once, not once per trial
            agent = agent.with_store(opened)
        agent_for = agent_source(agent)
        if workers > 1 or dask is not None:
            from tether.evals.distributed import run_elsewhere

            records = await run_elsewhere(plan, agent, opened, workers=workers, dask=dask,
                                          concurrency=concurrency, progress=progress)
        else:
            records = await run_plan(plan, plan.keys, agent_for, opened,
                                     concurrency=concurrency, progress=progress)
    finally:
        if isinstance(store, str):  # opened here from a URL: closed here
            opened.close()
    return Report.of(name, records, seed=seed, order=list(plan.perturbations))


def _store(store: Store | str | None, agent: Any) -> Store:
    if isinstance(store, str):
        return open_store(store)
    if store is not None:
        return store
    own = getattr(agent, "journal_store", None)
    if own is not None:
        found: Store = own
        return found
    from tether.store.memory import MemoryStore

    return MemoryStore()


def pass_at_k_with_perturbations(session_factory: Callable[[str], Any], task: Task, *,
                                 k: int = 8,
                                 perturbations: Sequence[str | Perturbation] = (
                                     "canonical", "paraphrase", "irrelevant_context"),
                                 seed: int = 0) -> Report:
    """One task, ``k`` trials under each prompt perturbation, each trial a session made by
    ``session_factory(prompt)`` (e.g. ``lambda prompt: agent.session(prompt)``). Only the prompt
    can be perturbed here — tools and models belong to an Agent: use ``evaluate`` for those.
    The sessions made keep the factory's agent and budget."""
    import dataclasses

    from tether.runtime.lifecycle.agent import Agent
    from tether.runtime.lifecycle.sync import run_sync

    probe = session_factory(task.prompt)
    agent = getattr(probe, "agent", None)
    if not isinstance(agent, Agent):
        raise WrongType("session_factory must return a tether Session (agent.session(prompt))")
    agent = dataclasses.replace(agent, budget=probe.budget)
    result: Report = run_sync(aevaluate(agent, [task], k=k, perturbations=perturbations,
                                        seed=seed, name=f"pass-at-k-{task.id}"))
    return result
