"""The scoring's one-flow forms, which only the tests call: replay scores many flows at once (the compiled
kernels of ``ackreplay.scoring`` run flow after flow by ``ackreplay.replay.batch_kernels``); these run the same
kernels on one flow, or state a rule in numpy where that is the oracle, so that the tests can hold the kernels
to the definitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ackreplay.estimators.inputs import FlowInputs
from ackreplay.kernels import finite_or_none
from ackreplay.replay.batch_kernels import diagnostics_scan
from ackreplay.replay.results import BatchDiagnostics, sample_columns
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE
from ackreplay.scoring.references import achieved_into
from ackreplay.scoring.scores import (
    CONVERGENCE_HOLD,
    RELATIVE_SCORES,
    SCRATCH_ROWS,
    TOLERANCE,
    level_relative_scores,
    relative_array,
    weighted_median_in_place,
)

#: BE's largest samples listed per flow (replay's ``LARGEST_SAMPLES``).
LARGEST = 3


def time_weights(t: np.ndarray, start: float, end: float) -> np.ndarray:
    """Weight of each event: how long its value holds inside [start, end]."""
    if len(t) == 0:
        return np.empty(0)
    nxt = np.append(t[1:], t[-1])
    np.clip(nxt, start, end, out=nxt)
    return np.subtract(nxt, np.clip(t, start, end), out=nxt)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The smallest value whose cumulative weight (values ascending) reaches half the total weight."""
    v = np.array(values, np.float64)
    return float(weighted_median_in_place(v, np.array(weights, np.float64), len(v)))


def relative_scores(t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray, start: float
                    ) -> dict[str, float | None]:
    """Relative errors, over/under shares and convergence of ``est`` against ``ref`` (§5)."""
    f64 = np.float64
    vals = relative_array(np.asarray(t, f64), np.asarray(est, f64), np.asarray(ref, f64), np.asarray(w, f64),
                          float(start), TOLERANCE, CONVERGENCE_HOLD)
    return _relative_dict(vals)


def _relative_dict(vals: np.ndarray) -> dict[str, float | None]:
    """:func:`relative_array`'s values by name (None = none)."""
    return {k: finite_or_none(float(v)) for k, v in zip(RELATIVE_SCORES, vals, strict=True)}


def convergence(t: np.ndarray, est: np.ndarray, ref: np.ndarray, start: float) -> float | None:
    """Time from ``start`` to first enter, and stay for ``CONVERGENCE_HOLD`` s, within ±10 % of the reference."""
    return relative_scores(t, est, ref, np.zeros(len(t)), start)["convergence_s"]


def series_scores(t: np.ndarray, est: np.ndarray, ref: np.ndarray, start: float, end: float,
                  truth: np.ndarray | None, w: np.ndarray | None = None,
                  buf: np.ndarray | None = None) -> dict[str, Any]:
    """Every §5 score over time of one estimate (bytes/s in, bits/s out). ``w`` (the time weights) and
    ``buf`` (scratch, ``SCRATCH_ROWS × len(t)``) may be passed to share them between estimates of one flow."""
    t = np.asarray(t, np.float64)
    est = np.asarray(est, np.float64)
    w = time_weights(t, start, end) if w is None else w
    buf = np.empty((SCRATCH_ROWS, len(t)), np.float64) if buf is None else buf
    f64 = np.float64
    vals = level_relative_scores(t, est, np.asarray(ref, f64), np.asarray(w, f64), float(start), TOLERANCE,
                                 CONVERGENCE_HOLD, buf)
    mean, median, cov = vals[:3]
    out: dict[str, Any] = {"mean_bps": finite_or_none(8 * mean), "median_bps": finite_or_none(8 * median),
                           "cov": finite_or_none(cov)}
    out.update(_relative_dict(vals[3:]))
    if truth is not None:
        for k, v in relative_scores(t, est, truth, w, start).items():
            out[f"{k}_truth"] = v
    return out


def decision_scores(ratios: Sequence[float | None], newreno_ratios: Sequence[float | None],
                    closer: Sequence[bool | None], suffix: str = "") -> dict[str, Any]:
    """The §5 decision scores of one flow's loss events, as numpy expressions (the oracle of replay's
    compiled decision scores)."""
    r = np.array([x for x in ratios if x is not None], float)
    nr = np.array([x for x in newreno_ratios if x is not None], float)
    c = [x for x in closer if x is not None]
    out = {
        f"ssthresh_over_ideal_mean{suffix}": finite_or_none(float(r.mean())) if len(r) else None,
        f"ssthresh_over_ideal_median{suffix}": finite_or_none(float(np.median(r))) if len(r) else None,
        f"newreno_over_ideal_median{suffix}": finite_or_none(float(np.median(nr))) if len(nr) else None,
        f"closer_than_newreno_share{suffix}": float(np.mean(c)) if c else None,
    }
    if not suffix:
        out["decisions"] = len(r)
    return out


def achieved_rate(t: np.ndarray, acked: np.ndarray, window: float) -> np.ndarray:
    """``achieved_into`` of one flow: bytes/s at every event, NaN at the first."""
    out = np.full(len(t), np.nan)
    if len(t) >= 2:
        achieved_into(np.asarray(t, np.float64), np.asarray(acked).astype(np.int64, copy=False), float(window), out)
    return out


def one_flow_diagnostics(inp: FlowInputs, vantage: str) -> dict[str, Any]:
    """The §7 explanations replay reads from one flow's events (all but ``loss_classes``): its batch scan
    (``diagnostics_scan``) and its diagnostics columns (``BatchDiagnostics``) on a batch of this one flow."""
    n = len(inp.t)
    off = np.array([0, n], np.int64)
    t, d = np.asarray(inp.t, np.float64), np.asarray(inp.d, np.int64)
    compressed, top = diagnostics_scan(off, t, d, LARGEST)
    return BatchDiagnostics([vantage], np.array([n], np.int64), compressed, sample_columns(t, d, off, top),
                            np.array([inp.mss], np.int64)).of(0)


def aggregate(per_flow: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The capture aggregate of per-flow score dicts, the form the batched ``replay.capture.capture_aggregate``
    is checked against: mean of every numeric score over flows (None where no flow has it), plus the number of
    flows (and, when any flow labels the estimator not reproducible from its vantage,
    ``not_reproducible_flows``: how many)."""
    # every score name in first-seen order with its numeric values in flow order: one pass over the flows'
    # entries (each name's list then averaged)
    values: dict[str, list[Any]] = {}
    for s in per_flow:
        for k, v in s.items():
            got = values.get(k)
            if got is None:
                got = values[k] = []
            if isinstance(v, (int, float)):
                got.append(v)
    values.pop("parameters", None)
    out: dict[str, Any] = {"flows": len(per_flow)}
    if values.pop("error", None) is not None:  # a plugin that failed on some flows (estimators.plugins)
        out["failed_flows"] = sum(1 for s in per_flow if s.get("error"))
    if values.pop(NOT_REPRODUCIBLE, None) is not None:  # a label, not a score: how many flows carry it
        out[f"{NOT_REPRODUCIBLE}_flows"] = sum(1 for s in per_flow if NOT_REPRODUCIBLE in s)
    for k, vals in values.items():
        out[k] = float(np.mean(vals)) if vals else None
    return out
