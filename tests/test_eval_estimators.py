"""pass^k and pass@k: hand-computed values, edge cases, and invariants over any counts."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.evals.estimators import curves, estimates, pass_at_k, pass_hat_k


def test_hand_computed_values() -> None:
    # 8 trials, 6 passed: pass^2 = C(6,2)/C(8,2) = 15/28; pass@2 = 1 - C(2,2)/C(8,2) = 27/28
    assert pass_hat_k(8, 6, 2) == pytest.approx(15 / 28)
    assert pass_at_k(8, 6, 2) == pytest.approx(27 / 28)
    assert pass_hat_k(8, 6, 1) == pytest.approx(6 / 8)
    assert pass_hat_k(8, 6, 7) == 0.0  # fewer passes than k: no k-subset all passes
    assert pass_hat_k(10, 9, 9) == pytest.approx(1 / 10)


def test_edges() -> None:
    assert pass_hat_k(8, 0, 1) == 0.0 and pass_at_k(8, 0, 8) == 0.0
    assert pass_hat_k(8, 8, 8) == 1.0 and pass_at_k(8, 8, 1) == 1.0
    assert pass_hat_k(8, 4, 8) == 0.0  # k = n: all n must have passed
    assert pass_at_k(8, 1, 8) == 1.0  # k = n: one pass among all n is enough
    with pytest.raises(ValueError, match="at least k trials"):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError, match="between 0 and n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 0)


def test_agreement_is_not_correctness() -> None:
    """Eight identical wrong answers agree perfectly and score zero."""
    hat, at = curves([(8, 0)])
    assert hat[8].value == 0.0 and at[8].value == 0.0


def test_curves_average_over_tasks_and_intervals_bracket_the_mean() -> None:
    hat, at = curves([(4, 4), (4, 2), (4, 0)], seed=3)
    assert hat[1].value == pytest.approx((1 + 0.5 + 0) / 3)
    assert hat[2].value == pytest.approx((1 + 1 / 6 + 0) / 3)
    for e in [*hat.values(), *at.values()]:
        assert e.low <= e.value <= e.high
    assert hat[1].low < hat[1].high  # tasks differ: the interval has width
    assert curves([(4, 4), (4, 2), (4, 0)], seed=3) == (hat, at)  # seeded: reproducible


def test_one_task_has_no_spread_and_no_tasks_is_an_error() -> None:
    (only,) = estimates([[0.25]])
    assert (only.value, only.low, only.high) == (0.25, 0.25, 0.25)
    with pytest.raises(ValueError, match="no tasks"):
        estimates([[]])


counts = st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))


@given(counts)
def test_invariants(nc: tuple[int, int]) -> None:
    n, c = nc
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert hats[0] == pytest.approx(c / n) == pytest.approx(ats[0])
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(hats))  # falls with k
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(ats))  # rises with k
    assert all(0 <= h <= a + 1e-12 <= 1 + 1e-12 for h, a in zip(hats, ats, strict=True))
