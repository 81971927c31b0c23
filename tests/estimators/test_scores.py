"""Scores (ESTIMATORS.md §5): the compiled convergence search against the definition, case by case, and the
compiled one-pass scores against the numpy expressions they replaced, by value."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.kernels import finite_or_none
from ackreplay.scoring.scores import CONVERGENCE_HOLD, RELATIVE_SCORES, TOLERANCE
from tests.estimators.per_flow_scores import convergence, series_scores, time_weights, weighted_median
from tests.valuecompare import differences


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


# ---- the compiled scores against the numpy expressions they replaced (issue #11), within the documents' bound.
# The kernels sum in numpy's pairwise order and agree with numpy 2.x to the last bit; numpy 1.26 (the oldest
# version pyproject.toml allows) sums in another order and differs in the last bits (issue #21), so the
# comparison is by value (tests/valuecompare.py): a changed formula still moves a score far beyond it.


def numpy_weighted_median(values, weights):
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    return float(v[np.searchsorted(cum, cum[-1] / 2)])


def numpy_series_scores(t, est, ref, start, end):
    """The §5 scores as the numpy code before the compiled kernels computed them."""
    w = time_weights(t, start, end)
    ok = (w > 0) & ~np.isnan(est)
    out = {"mean_bps": None, "median_bps": None, "cov": None}
    if ok.any() and w[ok].sum() > 0:
        e, ww = est[ok], w[ok]
        mean = float((ww * e).sum() / ww.sum())
        out["mean_bps"] = finite_or_none(8 * mean)
        out["median_bps"] = finite_or_none(8 * numpy_weighted_median(e, ww))
        var = float((ww * (e - mean) ** 2).sum() / ww.sum())
        out["cov"] = finite_or_none(np.sqrt(var) / mean) if mean > 0 else None
    ok = (w > 0) & ~np.isnan(est) & ~np.isnan(ref) & (ref > 0)
    rel_out = dict.fromkeys(RELATIVE_SCORES)
    if ok.any() and w[ok].sum() > 0:
        ww, e, r = w[ok], est[ok], ref[ok]
        rel = (e - r) / r
        total = ww.sum()
        rel_out["mean_signed_rel_error"] = finite_or_none(float((ww * rel).sum() / total))
        rel_out["mean_abs_rel_error"] = finite_or_none(float((ww * np.abs(rel)).sum() / total))
        mean_r = float((ww * r).sum() / total)
        rel_out["nrmse"] = finite_or_none(float(np.sqrt(float((ww * (e - r) ** 2).sum() / total))) / mean_r)
        rel_out["over_share"] = finite_or_none(float(ww[rel > TOLERANCE].sum() / total))
        rel_out["under_share"] = finite_or_none(float(ww[rel < -TOLERANCE].sum() / total))
    rel_out["convergence_s"] = by_definition(t, est, ref, start)
    out.update(rel_out)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_compiled_scores_equal_the_numpy_expressions(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 9, 130, 1000, 50_000]))
    t = np.cumsum(rng.exponential(0.001, n)) * rng.choice([1, 1000])
    t[rng.random(n) < 0.05] = t[0]  # repeated times: zero weights
    t = np.sort(t)
    ref = rng.uniform(1e5, 1e7, n)
    ref[rng.random(n) < 0.1] = rng.choice([0.0, np.nan])
    est = ref * rng.choice([rng.uniform(0.85, 1.15, n), rng.lognormal(0, 1, n)])
    est[rng.random(n) < 0.05] = np.nan
    if seed % 5 == 0:  # heavy ties: a handful of distinct values
        est = np.round(est / 1e6) * 1e6
    start, end = float(t[0] + (t[-1] - t[0]) * 0.1), float(t[-1])
    got = series_scores(t, est, ref, start, end, None)
    want = numpy_series_scores(t, est, ref, start, end)
    diffs = list(differences(want, got))  # None stays None, floats within relative 1e-9
    assert not diffs, "\n".join(map(str, diffs))


@pytest.mark.parametrize("seed", range(200))
def test_weighted_median_by_selection_is_the_sorted_definition(seed):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 400))
    v = rng.choice([rng.standard_normal(n), rng.integers(0, 5, n).astype(float)])
    w = rng.choice([rng.uniform(0.1, 1, n), np.ones(n), rng.exponential(1, n)])
    assert weighted_median(v, w) == numpy_weighted_median(v, w)


def test_decisions_count_every_event_with_an_ssthresh_even_without_an_ideal():
    """Corrected §5 (issue #10): ``decisions`` counts the loss events at which the estimator set an
    ssthresh, whether or not an ideal exists there (after a silence longer than W the achieved rate, and so
    the ideal, is 0); the ratios use only the events that have an ideal."""
    from tests.naive_estimators import decision_scores_of

    def row(ss, ideal, nr=4.0):
        return {"ssthresh_segments": ss, "ideal_segments": ideal, "newreno_ssthresh_segments": nr,
                "ideal_truth_segments": None}

    rows = [row(10.0, 0.0), row(8.0, 10.0), row(None, 10.0), row(12.0, None)]
    s = decision_scores_of(rows, with_truth=True)
    assert s["decisions"] == 3
    assert s["ssthresh_over_ideal_median"] == pytest.approx(0.8)
    assert s["closer_than_newreno_share"] == 1.0
    assert s["ssthresh_over_ideal_median_truth"] is None and "decisions_truth" not in s


def test_aggregate_means_every_numeric_score_over_the_flows_that_have_it():
    """Names in first-seen order, the mean over the flows with a number (bools count as numbers, as they
    always did; None and missing do not), None where no flow has one; parameters are not a score."""
    from tests.estimators.per_flow_scores import aggregate

    per_flow = [
        {"a": 1.0, "b": None, "parameters": {"x": 1}},
        {"c": 4, "a": 3.0, "b": None},
        {"a": None, "c": True, "d": "text"},
    ]
    out = aggregate(per_flow)
    assert list(out) == ["flows", "a", "b", "c", "d"]
    assert out == {"flows": 3, "a": 2.0, "b": None, "c": 2.5, "d": None}
    assert aggregate([]) == {"flows": 0}
