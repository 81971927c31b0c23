"""Why an estimate is what it is: per-flow diagnostics (ESTIMATORS.md §7 "Explanations").

An estimate far above the flow's achieved rate or the path's capacity must be explainable from the
report. Per flow:

* ``ack_compression_share`` — the share of ACK intervals (between events) under 100 µs. BE's sample
  ``d_k/Δt_k`` over such an interval is a burst rate, not the path's; the original Westwood's paired
  Tustin filter weighs it by the next, ms-long interval (§2), so a few percent of them inflate BE many
  times (the bundled sample: ~39 Mbit/s paired on a 10 Mbit/s path, ~2.5 unpaired).
* ``largest_samples`` — BE's three largest raw samples, each with its interval, its bytes and the cause:
  ``ack_compression`` (interval under 100 µs), ``stretch_ack`` (more than two segments delivered at
  once), else ``burst``.
* ``dispersion_capacity_bps`` — the bottleneck's capacity from packet dispersion: the path's
  ``capacity_bps`` (``path.inference``, ESTIMATORS.md §9: the packet-pair dispersion mode above the
  average dispersion rate, pathrate's method, from data seen after the bottleneck or from the ACKs of data
  queued back to back), set by replay; ``dispersion_from`` says which (``data``/``acks``). It used to be the
  median of all inter-ACK rates — the flow's own rate, not the path's (3.0 Mbit/s on the bundled sample,
  whose bottleneck is 10 Mbit/s).
* ``ack_timing_seen_at`` (off the sender only) — where the ACK timing above was seen: at the receiver the
  ACKs leave evenly spaced and the bunching that inflates BE happens after, on the return path, so the
  share is the capture point's, not the sender's (issue #27); ``not_reproducible`` — the estimators that
  depend on the ACKs' timing at the sender (``Estimator.depends_on_sender_ack_timing``), each with why.
* ``loss_classes`` — for CRB and NewBR, how each loss was classified (``congestion`` or ``random``), and,
  when the capture's metadata labels the losses (``loss_truth``: episode → ``random``/``congestion``),
  how many they got right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numba import njit

from ackreplay.estimators.inputs import FlowInputs
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE

COMPRESSED_S = 100e-6  # an ACK interval under this is ACK compression
CLASSIFIERS = ("crb", "newbr")  # estimators that classify each loss


def burst_cause(dt: float, d: int, mss: int) -> str:
    if dt < COMPRESSED_S:
        return "ack_compression"
    if d > 2 * mss:
        return "stretch_ack"
    return "burst"


@njit(cache=True, nogil=True)
def _event_scan(t: np.ndarray, d: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """One pass over the ACK intervals: how many are under ``COMPRESSED_S``, and the BE samples ``d/Δt``
    with Δt > 0 and d > 0 — the interval index ``i`` (``t[i]..t[i+1]``, bytes ``d[i+1]``) and the rate, in
    order. (Before: the same through eight numpy arrays of the flow's length.)"""
    n = max(len(t) - 1, 0)
    idx = np.empty(n, np.int64)
    rate = np.empty(n)
    compressed = 0
    m = 0
    for i in range(n):
        dt = t[i + 1] - t[i]
        if dt < COMPRESSED_S:
            compressed += 1
        dd = d[i + 1]
        if dt > 0.0 and dd > 0:
            idx[m] = i
            rate[m] = dd / dt
            m += 1
    return compressed, idx[:m], rate[:m]


def _top(idx: np.ndarray, rate: np.ndarray, k: int) -> np.ndarray:
    """The intervals of the ``k`` largest rates, largest first, equal rates the later interval first.

    The selection is linear (not a sort of the whole flow): the k-th largest rate found by
    ``np.argpartition``, then every interval at or above it ordered by (rate, interval) descending. Which of
    equal rates ``np.argpartition`` or a plain sort puts first depends on numpy's version and on the SIMD
    sort it picks for the CPU (x86-simd-sort on AVX-512), so ties are broken by the interval index, never
    left to the sort (issue #21: the order of two equal samples differed between machines)."""
    if len(idx) > k:
        kth = rate[np.argpartition(rate, len(rate) - k)[len(rate) - k]]
        keep = rate >= kth
        idx, rate = idx[keep], rate[keep]
    return idx[np.lexsort((-idx, -rate))[:k]]


def largest_samples(inp: FlowInputs, k: int = 3) -> list[dict[str, Any]]:
    """BE's ``k`` largest raw samples d/Δt with where they came from."""
    if len(inp.t) < 2:
        return []
    _, idx, rate = _event_scan(inp.t, inp.d)
    return _described(inp, _top(idx, rate, k))


def _described(inp: FlowInputs, top: np.ndarray) -> list[dict[str, Any]]:
    out = []
    for i in top:
        dt = float(inp.t[i + 1] - inp.t[i])
        d = int(inp.d[i + 1])
        out.append({"t_rel": float(inp.t[i + 1]), "bps": 8 * (d / dt), "interval_us": dt * 1e6,
                    "bytes": d, "cause": burst_cause(dt, d, inp.mss)})
    return out


def loss_classes(decisions: Sequence[Mapping[str, Any]], loss_truth: Mapping[int, str] | None
                 ) -> dict[str, dict[str, Any]]:
    """Per classifier: its class of every loss event (by episode), the counts, and — with labels — the
    share it got right."""
    out: dict[str, dict[str, Any]] = {}
    for name in CLASSIFIERS:
        rows = [r for r in decisions if r["estimator"] == name]
        if not rows:
            continue
        classes = {int(r["episode"]): ("random" if r["note"] == "random loss" else
                                       "congestion" if r["note"] == "congestion loss" else None) for r in rows}
        entry: dict[str, Any] = {
            "per_episode": {str(e): c for e, c in classes.items()},
            "congestion": sum(c == "congestion" for c in classes.values()),
            "random": sum(c == "random" for c in classes.values()),
        }
        if loss_truth:
            judged = [(classes.get(e), t) for e, t in loss_truth.items() if classes.get(e) is not None]
            entry["labelled"] = len(judged)
            entry["correct_share"] = (sum(c == t for c, t in judged) / len(judged)) if judged else None
        out[name] = entry
    return out


def series_diagnostics(inp: FlowInputs, vantage: str) -> dict[str, Any]:
    """The §7 explanations read from the flow's events alone (every one but ``loss_classes``)."""
    n = len(inp.t)
    compressed, idx, rate = _event_scan(inp.t, inp.d) if n > 1 else (0, np.empty(0, np.int64), np.empty(0))
    top = _top(idx, rate, 3)
    del idx, rate
    return {
        "ack_compression_share": compressed / (n - 1) if n > 1 else None,
        "largest_samples": _described(inp, top),
        "dispersion_capacity_bps": None,  # the path's capacity, set by replay (``path.inference``)
        "dispersion_from": "data" if vantage == "receiver" else "acks",
    }


def flow_diagnostics(inp: FlowInputs, vantage: str, decisions: Sequence[Mapping[str, Any]],
                     loss_truth: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Every §7 explanation of one flow (JSON-ready)."""
    return {**series_diagnostics(inp, vantage), "loss_classes": loss_classes(decisions, loss_truth)}


def seen_at(vantage: str | None) -> str:
    """Where a flow's ACK timing was seen, for the why lines: nothing at the sender (the timing the estimators
    read); off it, that this is the capture point's share and not the sender's, which the return path after the
    capture point changes unseen (issue #27)."""
    if vantage is None or vantage == "sender":
        return ""
    where = {"receiver": "the receiver", "mid_path": "the tap"}.get(vantage, "the capture point")
    return (f" as the ACKs passed {where} (not the sender's share: the return path after {where} bunches ACKs "
            "unseen here)")


def explain(diag: Mapping[str, Any], scores: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Footnotes for a flow's score table: why BE (and estimates above the path's capacity) read high."""
    lines: list[str] = []
    cap = diag.get("dispersion_capacity_bps")
    share = diag.get("ack_compression_share")
    if share is not None:
        top = diag.get("largest_samples") or []
        big = ", ".join(f"{s['bps'] / 1e6:.0f} Mbit/s over {s['interval_us']:.0f} µs ({s['cause'].replace('_', ' ')})"
                        for s in top)
        lines.append(f"ACK intervals under 100 µs{seen_at(diag.get('ack_timing_seen_at'))}: {100 * share:.1f} %; "
                     f"BE's largest samples: {big or 'none'}")
    if cap is not None:
        above = [n for n, s in scores.items() if (s.get("mean_bps") or 0) > 1.5 * cap]
        tail = f"; mean above 1.5× it: {', '.join(above)}" if above else ""
        lines.append(f"capacity from the packet-pair dispersion mode ({diag.get('dispersion_from')}): "
                     f"{cap / 1e6:.3f} Mbit/s{tail}")
    lines += [f"{name}: {why}" for name, why in (diag.get(NOT_REPRODUCIBLE) or {}).items()]
    for name, c in (diag.get("loss_classes") or {}).items():
        text = f"{name} classified {c['congestion']} losses as congestion, {c['random']} as random"
        if c.get("correct_share") is not None:
            text += f" ({100 * c['correct_share']:.0f} % right of {c['labelled']} labelled)"
        lines.append(text)
    return lines
