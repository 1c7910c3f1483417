"""Estimators: pass^k (every one of k tries succeeds) and pass@k (at least one does).

Why: "right once" and "right every time" are different promises. With n trials of a task of
which c passed, the unbiased estimators are pass^k = C(c, k) / C(n, k) — the chance that k trials
drawn without replacement all pass, as tau-bench defines it — and pass@k = 1 - C(n-c, k) / C(n, k).
Both are averaged over tasks, and the uncertainty that matters is the one over tasks (a suite is
a sample of the work), so intervals come from resampling tasks with replacement (a seeded
percentile bootstrap). Exact integer arithmetic: no float comb overflow at large n.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import comb

from tether.errors import InvalidArgument

BOOTSTRAP_SAMPLES = 1000
CONFIDENCE = 0.95


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise InvalidArgument(f"correct trials c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise InvalidArgument(f"k={k} must be between 1 and the number of trials n={n}; run at "
                              "least k trials per task")


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: the chance that k of its n trials, drawn without replacement, all
    passed."""
    _check(n, c, k)
    return float(Fraction(comb(c, k), comb(n, k)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of one task: the chance that at least one of k drawn trials passed."""
    _check(n, c, k)
    return float(1 - Fraction(comb(n - c, k), comb(n, k)))


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean over tasks with its bootstrap interval (low, high) at ``CONFIDENCE``."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def estimates(columns: Sequence[Sequence[float]], *, seed: int = 0,
              samples: int = BOOTSTRAP_SAMPLES) -> list[Estimate]:
    """For each column of per-task values (all over the same tasks), its mean and a percentile
    bootstrap interval; every column is resampled with the same draws of tasks.

    Tasks whose values agree in every column are interchangeable (with k trials each there are
    at most k + 1 kinds), so a resample is drawn as how many tasks of each kind it holds: the
    same distribution as drawing tasks one by one, at a cost that does not grow with the
    number of columns."""
    n = len(columns[0]) if columns else 0
    if n == 0:
        raise InvalidArgument("no tasks to estimate over")
    means = [sum(column) / n for column in columns]
    if n == 1:
        return [Estimate(m, m, m) for m in means]
    kinds: dict[tuple[float, ...], int] = {}
    for row in zip(*columns, strict=True):
        kinds[row] = kinds.get(row, 0) + 1
    rows = list(kinds)
    weights = list(itertools.accumulate(kinds.values()))
    rng = random.Random(seed)
    drawn: list[list[float]] = [[] for _ in columns]
    for _ in range(samples):
        held = Counter(rng.choices(range(len(rows)), cum_weights=weights, k=n))
        for j, out in enumerate(drawn):
            out.append(sum(rows[i][j] * c for i, c in held.items()) / n)
    tail = (1 - CONFIDENCE) / 2
    result = []
    for mean, values in zip(means, drawn, strict=True):
        values.sort()
        low = values[int(tail * (samples - 1))]
        high = values[round((1 - tail) * (samples - 1))]
        result.append(Estimate(mean, min(low, mean), max(high, mean)))
    return result


def curves(counts: Sequence[tuple[int, int]], *, seed: int = 0
           ) -> tuple[dict[int, Estimate], dict[int, Estimate]]:
    """pass^k and pass@k for every k from 1 to the smallest n, over tasks given as (n, c)."""
    if not counts:
        return {}, {}
    ks = range(1, min(n for n, _ in counts) + 1)
    columns = [[pass_hat_k(n, c, k) for n, c in counts] for k in ks]
    columns += [[pass_at_k(n, c, k) for n, c in counts] for k in ks]
    found = estimates(columns, seed=seed)
    return dict(zip(ks, found[:len(ks)], strict=True)), dict(zip(ks, found[len(ks):],
                                                                 strict=True))
