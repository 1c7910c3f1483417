"""Running an evaluation's trials in other processes: local worker processes or a Dask cluster.

Why: a large evaluation is CPU-bound in the harness and the scripted or local models, and one
event loop uses one core. Decision: the plan is cut into chunks of trials; each chunk runs in a
worker with its own event loop and its own connection to the shared store, through the same
``TrialRunner`` as a local run, and returns its records. A chunk that dies with its worker (Dask
retries it elsewhere) finds the trials it had graded already in the store and runs the rest, the
interrupted one as a new attempt — so a killed worker costs time, never a double count.

Local workers are forked, so the plan and the agent reach them without pickling. Dask pickles
the plan (with cloudpickle) and needs the agent as a ``"module:function"`` reference or a
picklable factory. Both need a store every worker can open by URL: SQLite on one machine,
PostgreSQL across machines.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tether.errors import InvalidArgument, MissingExtra, WrongType, install_command
from tether.evals.plan import Plan, Progress, agent_source, run_plan
from tether.evals.trials import TrialRecord
from tether.store.base import Store
from tether.store.opening import open_store

_forked: dict[str, Any] = {}  # a forked worker's inheritance: its plan, agent and store URL


def _chunks(size: int, workers: int) -> list[range]:
    step = max(1, math.ceil(size / (workers * 4)))
    return [range(i, min(size, i + step)) for i in range(0, size, step)]


def _shared_url(store: Store) -> str:
    url = getattr(store, "url", "")
    if not url or url.startswith("memory:"):
        raise InvalidArgument("trials in other processes need a store they can all open: pass "
                         "store='sqlite:///evals.db' (one machine) or a postgresql:// URL")
    return str(url)


def run_chunk(plan: Plan, agent: Any, url: str, indices: Sequence[int],
              concurrency: int) -> list[TrialRecord]:
    """Run some of ``plan``'s trials here, in a fresh event loop, on a store opened by URL."""
    store = open_store(url)
    try:
        keys = [plan.keys[i] for i in indices]
        return asyncio.run(run_plan(plan, keys, agent_source(agent), store,
                                    concurrency=concurrency))
    finally:
        store.close()


def _forked_chunk(indices: Sequence[int]) -> list[TrialRecord]:
    return run_chunk(_forked["plan"], _forked["agent"], _forked["url"], indices,
                     _forked["concurrency"])


def _inherit(plan: Plan, agent: Any, url: str, concurrency: int) -> None:
    _forked.update(plan=plan, agent=agent, url=url, concurrency=concurrency)


async def run_elsewhere(plan: Plan, agent: Any, store: Store, *, workers: int, dask: Any,
                        concurrency: int, progress: Progress | None) -> list[TrialRecord]:
    url = _shared_url(store)
    if dask is not None:
        return await asyncio.to_thread(_on_dask, plan, agent, url, dask, workers, concurrency,
                                       progress)
    return await asyncio.to_thread(_on_processes, plan, agent, url, workers, concurrency,
                                   progress)


def _on_processes(plan: Plan, agent: Any, url: str, workers: int, concurrency: int,
                  progress: Progress | None) -> list[TrialRecord]:
    context = multiprocessing.get_context("fork")
    records: list[TrialRecord] = []
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_inherit,
                             initargs=(plan, agent, url, concurrency)) as pool:
        for chunk in pool.map(_forked_chunk, _chunks(len(plan.keys), workers)):
            records += chunk
            if progress is not None:
                progress(len(records), len(plan.keys))
    return records


def _held(plan: Plan) -> Plan:
    """The plan as a task's result, not scattered data: when a worker dies holding the only copy,
    the scheduler computes it again (scattered data is lost with it, and the chunks waiting for
    it are cancelled: "already forgotten")."""
    return plan


def _on_dask(plan: Plan, agent: Any, url: str, dask: Any, workers: int, concurrency: int,
             progress: Progress | None) -> list[TrialRecord]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise MissingExtra("running on Dask needs the dask extra: "
                          f"{install_command('dask')}") from None
    from tether.runtime.lifecycle.agent import Agent

    if isinstance(agent, Agent):
        raise WrongType("on Dask, give the agent as a 'module:function' reference (or a "
                        "picklable factory): an Agent holds its store's connection")
    cluster = None
    if isinstance(dask, Client):
        client = dask
    elif dask == "local":
        cluster = LocalCluster(n_workers=max(2, workers), threads_per_worker=1,
                               processes=True, host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    elif isinstance(dask, str):
        client = Client(dask)
    else:
        raise WrongType("dask must be 'local', a scheduler address such as "
                        "'tcp://127.0.0.1:8786', or a distributed.Client")
    try:
        if cluster is not None:  # a loaded machine starts the second worker late
            client.wait_for_workers(max(2, workers))
        size = len(client.scheduler_info()["workers"]) or 1
        shared = client.submit(_held, plan, pure=False)
        futures = [client.submit(run_chunk, shared, agent, url, list(chunk), concurrency,
                                 pure=False)
                   for chunk in _chunks(len(plan.keys), size)]
        records: list[TrialRecord] = []
        for future in as_completed(futures):
            records += future.result()
            if progress is not None:
                progress(len(records), len(plan.keys))
        return records
    finally:
        if client is not dask:
            client.close()
        if cluster is not None:
            cluster.close()
