"""The report of an evaluation: pass^k and pass@k per perturbation, run metrics, failing trials.

Why: one object that is the same whether it was built from the trials as they finished or from
the store's journals afterwards (``tether eval report``) — it is a function of trial records only.
Its JSON form has a versioned, stable schema (``SCHEMA``) for CI and other tools; ``regressions``
compares it with an earlier report's JSON so CI can fail when reliability drops.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import InvalidArgument
from tether.evals.estimators import Estimate, curves
from tether.evals.html import render
from tether.evals.trials import TrialRecord
from tether.journal.views.metrics import RunMetrics

SCHEMA = "tether.eval.report/1"
ALL = "all"  # the row over every perturbation together


@dataclass(frozen=True, slots=True)
class Slice:
    """The figures of one perturbation (or of ``ALL``)."""

    name: str
    tasks: int
    trials: int
    passed: int
    pass_hat: Mapping[int, Estimate]  # pass^k by k
    pass_at: Mapping[int, Estimate]  # pass@k by k
    metrics: RunMetrics

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "trials": self.trials, "passed": self.passed,
                "pass_hat_k": {str(k): e.to_dict() for k, e in self.pass_hat.items()},
                "pass_at_k": {str(k): e.to_dict() for k, e in self.pass_at.items()},
                "metrics": self.metrics.to_dict()}


def _slice(name: str, records: Sequence[TrialRecord], seed: int) -> Slice:
    by_task: dict[tuple[str, str], list[bool]] = {}
    for r in records:
        by_task.setdefault((r.key.task, r.key.perturbation), []).append(r.passed)
    counts = [(len(v), sum(v)) for v in by_task.values()]
    hat, at = curves(counts, seed=seed)
    return Slice(name, len({r.key.task for r in records}), len(records),
                 sum(r.passed for r in records), hat, at,
                 RunMetrics.of(r.facts for r in records))


@dataclass(frozen=True, slots=True)
class Report:
    """An evaluation's result: every graded trial (``records``) and, by perturbation and for all
    of them together, pass^k and pass@k (``slices``). Rebuilt from the store alone by
    ``stored_trials``."""
    evaluation: str
    seed: int
    records: tuple[TrialRecord, ...]
    slices: Mapping[str, Slice]  # by perturbation, in the order given, then ALL

    @classmethod
    def of(cls, evaluation: str, records: Iterable[TrialRecord], *, seed: int = 0,
           order: Sequence[str] = ()) -> Report:
        records = tuple(sorted(records, key=lambda r: (r.key.task, r.key.perturbation,
                                                       r.key.repetition)))
        if not records:
            raise InvalidArgument(f"no graded trials of evaluation {evaluation!r}")
        names = list(order)
        for r in records:
            if r.key.perturbation not in names:
                names.append(r.key.perturbation)
        slices = {name: _slice(name, [r for r in records if r.key.perturbation == name], seed)
                  for name in names if any(r.key.perturbation == name for r in records)}
        if len(slices) > 1:
            slices[ALL] = _slice(ALL, records, seed)
        return cls(evaluation, seed, records, slices)

    @property
    def k(self) -> int:
        return max((max(s.pass_hat, default=0) for s in self.slices.values()), default=0)

    def pass_hat_k(self, k: int, perturbation: str = "canonical") -> Estimate:
        return self.slices[perturbation].pass_hat[k]

    def failing(self) -> list[TrialRecord]:
        return [r for r in self.records if not r.passed]

    def summary(self) -> str:
        lines = [f"evaluation {self.evaluation!r}: {len(self.records)} trials, seed {self.seed}"]
        ks = range(1, self.k + 1)
        header = f"  {'perturbation':<20} {'tasks':>5} {'trials':>6}  " + "  ".join(
            f"{'pass^' + str(k):>7}" for k in ks) + f"  {'pass@' + str(self.k):>7}"
        lines.append(header)
        for name, s in self.slices.items():
            row = f"  {name:<20} {s.tasks:>5} {s.trials:>6}  " + "  ".join(
                f"{s.pass_hat[k].value:>7.3f}" if k in s.pass_hat else f"{'-':>7}" for k in ks)
            at_k = s.pass_at.get(self.k)
            lines.append(row + (f"  {at_k.value:>7.3f}" if at_k else f"  {'-':>7}"))
        lines.append("  95% intervals (bootstrap over tasks):")
        for name, s in self.slices.items():
            if s.pass_hat:
                top = max(s.pass_hat)
                lines.append(f"    {name:<20} pass^1 {s.pass_hat[1]}   pass^{top} "
                             f"{s.pass_hat[top]}   pass@{top} {s.pass_at[top]}")
        overall = self.slices[ALL if ALL in self.slices else next(iter(self.slices))]
        lines.append("  run metrics:")
        lines += [f"    {name:<44} {value}" for name, value in overall.metrics.table()]
        failing = self.failing()
        if failing:
            lines.append(f"  failing trials ({len(failing)}; open one with "
                         "`tether audit show ID`):")
            for r in failing[:10]:
                lines.append(f"    {r.key.task} [{r.key.perturbation} #{r.key.repetition}] "
                             f"{r.session_id}: {r.grade.why[:100]}")
            if len(failing) > 10:
                lines.append(f"    ... and {len(failing) - 10} more (in the JSON report)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "evaluation": self.evaluation, "seed": self.seed,
                "k": self.k,
                "perturbations": {name: s.to_dict() for name, s in self.slices.items()},
                "trials": [r.to_dict() for r in self.records]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    def write_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(render(self, ALL), encoding="utf-8")
        return path


def regressions(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Where ``current`` (a report's JSON) has a pass^k below the lower end of ``baseline``'s
    interval, for every perturbation and k both have; each as a sentence."""
    if baseline.get("schema") != SCHEMA:
        raise InvalidArgument(f"the baseline is not a {SCHEMA} report (schema "
                              f"{baseline.get('schema')!r})")
    found = []
    for name, old in baseline["perturbations"].items():
        new = current["perturbations"].get(name)
        if new is None:
            continue
        for k, was in old["pass_hat_k"].items():
            now = new["pass_hat_k"].get(k)
            if now is not None and now["value"] < was["low"]:
                found.append(f"{name}: pass^{k} {now['value']:.3f} is below the baseline's "
                             f"interval [{was['low']:.3f}, {was['high']:.3f}]")
    return found
