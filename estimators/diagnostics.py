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
* ``dispersion_capacity_bps`` — the capacity seen in back-to-back packet dispersion: the median rate of
  consecutive full-size data segments (``bytes / gap``) where the capture sees data after the
  bottleneck (receiver side, mid-path), else of ACKs each delivering at least one MSS (``d/Δt``; the
  bottleneck spaces the ACKs as it spaced the data). The median over a busy flow is the bottleneck's
  rate; a flow that never fills the path reads low.
* ``loss_classes`` — for CRB and NewBR, how each loss was classified (``congestion`` or ``random``), and,
  when the capture's metadata labels the losses (``loss_truth``: episode → ``random``/``congestion``),
  how many they got right.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numba import njit

from ackreplay.estimators.inputs import FlowInputs

COMPRESSED_S = 100e-6  # an ACK interval under this is ACK compression
CLASSIFIERS = ("crb", "newbr")  # estimators that classify each loss


def _cause(dt: float, d: int, mss: int) -> str:
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
    """The intervals of the ``k`` largest rates, largest first (the selection is linear, not a sort of the
    whole flow; equal rates are taken as ``np.argpartition`` takes them and listed the later first)."""
    if len(idx) > k:
        sel = np.argpartition(rate, len(rate) - k)[len(rate) - k:]
        idx, rate = idx[sel], rate[sel]
    return idx[np.argsort(rate, kind="stable")[::-1][:k]]


@njit(cache=True, nogil=True)
def _pair_rates(t: np.ndarray, size: np.ndarray, mss: int, both: bool) -> np.ndarray:
    """``size[i+1]/(t[i+1] − t[i])`` over the consecutive pairs with a positive gap whose later member (and
    the earlier, with ``both``) carries at least one MSS, in order."""
    n = len(t) - 1
    out = np.empty(max(n, 0))
    m = 0
    for i in range(max(n, 0)):
        gap = t[i + 1] - t[i]
        if size[i + 1] >= mss and (not both or size[i] >= mss) and gap > 0.0:
            out[m] = size[i + 1] / gap
            m += 1
    return out[:m]


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
                    "bytes": d, "cause": _cause(dt, d, inp.mss)})
    return out


def dispersion_capacity_bps(inp: FlowInputs, data_after_bottleneck: bool) -> float | None:
    """Median packet-pair rate (see the module docstring), bits/s."""
    t, size = (inp.seg_t, inp.seg_len) if data_after_bottleneck else (inp.t, inp.d)
    if len(t) < 3:
        return None
    rates = _pair_rates(t, size, inp.mss, data_after_bottleneck)
    # (the rates are this call's own: the median may reorder them rather than copy them)
    return float(8 * np.median(rates, overwrite_input=True)) if len(rates) else None


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
    capacity = dispersion_capacity_bps(inp, data_after_bottleneck=vantage in ("receiver", "mid_path"))
    return {
        "ack_compression_share": compressed / (n - 1) if n > 1 else None,
        "largest_samples": _described(inp, top),
        "dispersion_capacity_bps": None if capacity is None or not math.isfinite(capacity) else capacity,
        "dispersion_from": "data" if vantage in ("receiver", "mid_path") else "acks",
    }


def flow_diagnostics(inp: FlowInputs, vantage: str, decisions: Sequence[Mapping[str, Any]],
                     loss_truth: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Every §7 explanation of one flow (JSON-ready)."""
    return {**series_diagnostics(inp, vantage), "loss_classes": loss_classes(decisions, loss_truth)}


def explain(diag: Mapping[str, Any], scores: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Footnotes for a flow's score table: why BE (and estimates above the dispersion capacity) read high."""
    lines: list[str] = []
    cap = diag.get("dispersion_capacity_bps")
    share = diag.get("ack_compression_share")
    if share is not None:
        top = diag.get("largest_samples") or []
        big = ", ".join(f"{s['bps'] / 1e6:.0f} Mbit/s over {s['interval_us']:.0f} µs ({s['cause'].replace('_', ' ')})"
                        for s in top)
        lines.append(f"ACK intervals under 100 µs: {100 * share:.1f} %; BE's largest samples: {big or 'none'}")
    if cap is not None:
        above = [n for n, s in scores.items() if (s.get("mean_bps") or 0) > 1.5 * cap]
        tail = f"; mean above 1.5× it: {', '.join(above)}" if above else ""
        lines.append(f"capacity from packet dispersion ({diag.get('dispersion_from')}): {cap / 1e6:.3f} Mbit/s{tail}")
    for name, c in (diag.get("loss_classes") or {}).items():
        text = f"{name} classified {c['congestion']} losses as congestion, {c['random']} as random"
        if c.get("correct_share") is not None:
            text += f" ({100 * c['correct_share']:.0f} % right of {c['labelled']} labelled)"
        lines.append(text)
    return lines
