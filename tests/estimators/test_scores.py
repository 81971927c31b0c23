"""Convergence time (ESTIMATORS.md §5): the compiled run search against the definition, case by case."""

from __future__ import annotations

import numpy as np
import pytest

from estimators.scores import CONVERGENCE_HOLD, TOLERANCE, convergence


def by_definition(t, est, ref, start):
    """Time from ``start`` to the first event of the first stretch within ±10 % of the reference that
    lasts CONVERGENCE_HOLD s (each value holding until the next event), written as a plain loop."""
    run_start = None
    for k in range(len(t)):
        inside = ref[k] > 0 and abs(est[k] - ref[k]) <= TOLERANCE * ref[k] and t[k] >= start
        if inside:
            if run_start is None:
                run_start = t[k]
            nxt = t[k + 1] if k + 1 < len(t) else t[k]
            if nxt - run_start >= CONVERGENCE_HOLD:
                return run_start - start
        else:
            run_start = None
    return None


def test_converges_once_a_stretch_within_tolerance_lasts_the_hold():
    t = np.arange(0.0, 5.0, 0.25)
    ref = np.full(len(t), 100.0)
    est = np.where(t < 1.0, 50.0, 105.0)  # within 10 % from t = 1.0
    assert convergence(t, est, ref, 0.0) == pytest.approx(1.0)
    assert convergence(t, est, ref, 0.5) == pytest.approx(0.5)


def test_a_stretch_broken_before_the_hold_does_not_count():
    t = np.arange(0.0, 6.0, 0.25)
    ref = np.full(len(t), 100.0)
    est = np.full(len(t), 100.0)
    est[(t >= 0.75) & (t < 1.0)] = 200.0  # inside for 0.75 s, out once, then inside for good
    assert convergence(t, est, ref, 0.0) == pytest.approx(1.0)


def test_a_value_holds_until_the_next_event():
    """Two events inside at 0 and 0.5 s, then outside from 1.0 s: the stretch lasted 1.0 s."""
    t = np.array([0.0, 0.5, 1.0, 1.5])
    ref = np.full(4, 100.0)
    assert convergence(t, np.array([100.0, 100.0, 300.0, 300.0]), ref, 0.0) == 0.0
    assert convergence(t, np.array([100.0, 300.0, 300.0, 300.0]), ref, 0.0) is None


def test_never_converges_without_a_long_enough_stretch_or_a_reference():
    t = np.arange(0.0, 3.0, 0.25)
    assert convergence(t, np.where(np.arange(len(t)) % 3 == 0, 300.0, 100.0), np.full(len(t), 100.0), 0.0) is None
    assert convergence(t, np.full(len(t), 100.0), np.zeros(len(t)), 0.0) is None
    assert convergence(t, np.full(len(t), np.nan), np.full(len(t), 100.0), 0.0) is None
    assert convergence(t[:0], t[:0], t[:0], 0.0) is None


@pytest.mark.parametrize("seed", range(20))
def test_random_series_agree_with_the_definition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    t = np.cumsum(rng.exponential(0.05, n))
    ref = np.where(rng.random(n) < 0.01, 0.0, 100.0)
    est = 100.0 * (1 + rng.normal(0, rng.uniform(0.03, 0.1), n))
    est[rng.random(n) < 0.01] = np.nan
    start = float(t[int(rng.integers(0, max(1, n // 2)))])
    got, want = convergence(t, est, ref, start), by_definition(t, est, ref, start)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == pytest.approx(want, abs=0)
