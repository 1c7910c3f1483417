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

from collections.abc import Callable, Sequence
from typing import Any

from tether.errors import WrongType
from tether.evals.distributed import run_elsewhere
from tether.evals.perturb import Perturbation
from tether.evals.plan import Plan, Progress, agent_source, run_plan
from tether.evals.plan import load_reference as load_reference
from tether.evals.report import Report
from tether.evals.tasks import Task
from tether.store.base import Store
from tether.store.opening import open_store


def evaluate(agent: Any, tasks: Sequence[Task], *, k: int = 8,
             perturbations: Sequence[str | Perturbation] = ("canonical",), seed: int = 0,
             name: str = "eval", suite: str = "suite", store: Store | str | None = None,
             concurrency: int = 8, workers: int = 1, dask: Any = None,
             progress: Progress | None = None) -> Report:
    """Evaluate ``agent`` on ``tasks``: ``k`` trials of each under each perturbation, graded,
    journaled in ``store`` (default: the agent's, else in memory), reported as pass^k.

    Args:
        agent: The agent under test: an ``Agent``, a factory of one, or a ``module:function``
            reference (what workers in other processes import).
        tasks: The tasks, each run ``k`` times under each perturbation.
        k: Trials per task and perturbation.
        perturbations: Their names (``"canonical"``, ``"paraphrase"``, ...) or objects.
        seed: Seeds every perturbation's randomness: the same seed, the same trials.
        name: The evaluation's name, in each trial's metadata.
        suite: The suite's name, likewise.
        store: Where the trials are journaled. Default: the agent's store, else in memory.
        concurrency: Trials run at once.
        workers: Forked worker processes to run trials in (1: this process).
        dask: Run trials on Dask instead (the ``dask`` extra).
        progress: Called as ``progress(trials done, trials in all)``.

    Returns:
        The ``Report``: pass^k and pass@k, by perturbation and overall.
    """
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
    """``evaluate``, awaited on the caller's event loop: the same arguments, the same
    ``Report``."""
    from tether.runtime.lifecycle.agent import Agent

    plan = Plan.of(tasks, k=k, perturbations_=perturbations, seed=seed, evaluation=name,
                   suite=suite)
    opened = _store(store, agent)
    try:
        if isinstance(agent, Agent):  # bound to the store once, not once per trial
            agent = agent.with_store(opened)
        agent_for = agent_source(agent)
        if workers > 1 or dask is not None:
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
