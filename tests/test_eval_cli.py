"""``tether eval run|report`` and ``tether metrics``: the report from a run and from the store
alone agree, CI gates on a baseline, and bad input is a usage error that runs nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.cli import main

HERE = Path(__file__).parent
SUITE = str(HERE / "evals" / "arith.yaml")
AGENT = f"{HERE / 'eval_app.py'}:make_agent"


def run(*argv: str) -> int:
    return main(list(argv))


def test_run_then_report_from_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    store = f"sqlite:///{tmp_path / 'evals.db'}"
    code = run("eval", "run", SUITE, "--agent", AGENT, "-k", "3", "--perturb",
               "canonical,paraphrase", "--seed", "7", "--store", store, "--out",
               str(tmp_path / "run"), "--no-progress")
    assert code == 0
    printed = capsys.readouterr().out
    assert "pass^3" in printed and "canonical" in printed and "paraphrase" in printed
    first = json.loads((tmp_path / "run" / "report.json").read_text())
    assert (tmp_path / "run" / "report.html").read_text().startswith("<!doctype html>")
    assert run("eval", "report", "--name", "arith", "--store", store, "--out",
               str(tmp_path / "again")) == 0
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert again == first
    # a second run of the same evaluation finds every trial graded and runs none again
    assert run("eval", "run", SUITE, "--agent", AGENT, "-k", "3", "--perturb",
               "canonical,paraphrase", "--seed", "7", "--store", store, "--no-progress",
               "--out", str(tmp_path / "third")) == 0
    assert json.loads((tmp_path / "third" / "report.json").read_text()) == first


def test_baseline_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'evals.db'}"
    assert run("eval", "run", SUITE, "--agent", AGENT, "-k", "2", "--store", store,
               "--out", str(tmp_path), "--no-progress") == 0
    baseline = tmp_path / "report.json"
    assert run("eval", "report", "--name", "arith", "--store", store, "--baseline",
               str(baseline)) == 0
    raised = json.loads(baseline.read_text())
    for k in raised["perturbations"]["canonical"]["pass_hat_k"].values():
        k["low"] = 1.5  # an impossible bar: every pass^k is below it
    higher = tmp_path / "higher.json"
    higher.write_text(json.dumps(raised))
    capsys.readouterr()
    assert run("eval", "report", "--name", "arith", "--store", store, "--baseline",
               str(higher)) == 1
    assert "regression: canonical: pass^1" in capsys.readouterr().out


def test_usage_errors_run_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'evals.db'}"
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - prompt: x\n    expectd: 1\n")
    assert run("eval", "run", str(bad), "--agent", AGENT, "--store", store) == 2
    assert "line 3" in capsys.readouterr().err
    assert run("eval", "run", SUITE, "--agent", "nowhere_at_all:agent", "--store", store) == 2
    assert run("eval", "run", SUITE, "--agent", AGENT, "--perturb", "canonical,nope",
               "--store", store, "--no-progress") == 2
    assert "unknown perturbation" in capsys.readouterr().err
    assert run("eval", "run", SUITE, "--agent", AGENT, "--baseline",
               str(tmp_path / "none.json"), "--store", store) == 2
    assert run("eval", "report", "--name", "never-ran", "--store", store) == 2


def test_metrics_for_any_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'evals.db'}"
    assert run("eval", "run", SUITE, "--agent", AGENT, "-k", "2", "--store", store,
               "--no-progress") == 0
    capsys.readouterr()
    assert run("metrics", "--store", store, "--since", "1h", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sessions"] == 6  # the trials; the grade records are not runs
    assert data["completion_rate"] == 1.0
    assert run("metrics", "--store", store, "--agent", "someone-else") == 0
    assert "sessions (ended / unfinished)" in capsys.readouterr().out
    assert run("metrics", "--store", f"sqlite:///{tmp_path / 'missing.db'}") == 2


def test_a_trial_and_its_grade_open_with_audit_show(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from tether.store.sqlite import SQLiteStore

    store = f"sqlite:///{tmp_path / 'evals.db'}"
    assert run("eval", "run", SUITE, "--agent", AGENT, "-k", "1", "--store", store,
               "--no-progress") == 0
    opened = SQLiteStore(str(tmp_path / "evals.db"))
    ids = [i.session_id for i in opened.sessions()]
    opened.close()
    trial = next(i for i in ids if i.endswith(".1"))
    book = next(i for i in ids if "-grades-" in i)
    capsys.readouterr()
    assert run("audit", "show", trial, "--store", store) == 0
    shown = capsys.readouterr().out
    assert '"evaluation": "arith"' in shown and "chain: verified" in shown
    assert run("audit", "show", book, "--store", store) == 0
    assert f"graded {trial} " in capsys.readouterr().out
    assert run("audit", "verify", "--store", store) == 0
