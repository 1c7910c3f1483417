"""Trials in other processes: forked workers and a Dask LocalCluster (2 worker processes, on
loopback) give the report local execution gives, and a worker killed mid-trial still yields a
complete report in which no trial is counted twice."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tether.evals import evaluate
from tether.evals.grades import stored_grades
from tether.evals.report import Report
from tether.evals.tasks import Task, load_suite
from tether.evals.trials import stored_trials

HERE = Path(__file__).parent
AGENT = f"{HERE / 'eval_app.py'}:make_agent"
KILLER = f"{HERE / 'eval_app.py'}:make_killer_agent"
PERTURB = ["canonical", "paraphrase", "order_shuffled", "tool_faults"]


def tasks() -> tuple[Task, ...]:
    return load_suite(HERE / "evals" / "arith.yaml").tasks


def outcome(report: Report) -> Any:
    """What must agree between executions: every trial's grade, and the estimates."""
    return ({(r.key, r.passed, r.grade.why) for r in report.records},
            {name: (s.pass_hat, s.pass_at, s.passed) for name, s in report.slices.items()})


def test_forked_workers_give_the_local_report(tmp_path: Path) -> None:
    local = evaluate(AGENT, tasks(), k=3, perturbations=PERTURB, seed=3, name="w")
    spread = evaluate(AGENT, tasks(), k=3, perturbations=PERTURB, seed=3, name="w",
                      store=f"sqlite:///{tmp_path / 'w.db'}", workers=2)
    assert outcome(spread) == outcome(local)


def test_dask_local_cluster_gives_the_local_report(tmp_path: Path) -> None:
    local = evaluate(AGENT, tasks(), k=3, perturbations=PERTURB, seed=3, name="d")
    on_dask = evaluate(AGENT, tasks(), k=3, perturbations=PERTURB, seed=3, name="d",
                       store=f"sqlite:///{tmp_path / 'd.db'}", dask="local", workers=2)
    assert outcome(on_dask) == outcome(local)


def test_a_worker_killed_mid_trial_still_yields_a_complete_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "killed"
    monkeypatch.setenv("TETHER_TEST_KILL_MARKER", str(marker))
    url = f"sqlite:///{tmp_path / 'k.db'}"
    report = evaluate(KILLER, tasks(), k=2, perturbations=["canonical"], seed=1, name="k",
                      store=url, dask="local", workers=2)
    assert int(marker.read_text()) != os.getpid()  # a worker process died inside a trial
    assert len(report.records) == 3 * 2 and all(r.passed for r in report.records)
    redone = [r for r in report.records if r.attempt > 1]
    assert redone and all(r.key.task == "mul-2-21" for r in redone)
    from tether.store.opening import open_store

    store = open_store(url)
    try:
        stored = stored_trials(store, "k")
        assert len(stored) == 6  # every trial once, the dead attempt not counted
        dead = f"{redone[0].key.id}.1"
        assert store.read(dead) and stored_grades(store, "k")[redone[0].key.id].attempt > 1
    finally:
        store.close()
