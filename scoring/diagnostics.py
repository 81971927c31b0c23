"""Why an estimate is what it is: per-flow diagnostics (ESTIMATORS.md §7 "Explanations").

An estimate far above the flow's achieved rate or the path's capacity must be explainable from the
report. Per flow (replay scans many flows' events at once for the first two):

* ``ack_compression_share`` — the share of ACK intervals (between events) under 100 µs. BE's sample
  ``d_k/Δt_k`` over such an interval is a burst rate, not the path's; the original Westwood's paired
  Tustin filter weighs it by the next, ms-long interval (§2), so a few percent of them inflate BE many
  times (the bundled sample: ~39 Mbit/s paired on a 10 Mbit/s path, ~2.5 unpaired).
* ``largest_samples`` — BE's three largest raw samples, each with its interval, its bytes and the cause
  (:func:`burst_cause`): ``ack_compression`` (interval under 100 µs), ``stretch_ack`` (more than two
  segments delivered at once), else ``burst``. Equal rates list the later interval first: a fixed rule,
  because which of two equal samples a sort puts first depends on numpy's version and on the SIMD sort it
  picks for the CPU.
* ``dispersion_capacity_bps`` — the bottleneck's capacity from packet dispersion: the path's
  ``capacity_bps`` (``ackreplay.path.dispersion``, ESTIMATORS.md §9: the packet-pair dispersion mode above
  the average dispersion rate, pathrate's method, from data seen after the bottleneck or from the ACKs of
  data queued back to back), set by replay; ``dispersion_from`` says which (``data``/``acks``). Not the
  median of all inter-ACK rates: that is the flow's own rate, not the path's (3.0 Mbit/s on the bundled
  sample, whose bottleneck is 10 Mbit/s).
* ``ack_timing_seen_at`` (off the sender only) — where the ACK timing above was seen: at the receiver the
  ACKs leave evenly spaced and the bunching that inflates BE happens after, on the return path, so the
  share is the capture point's, not the sender's; ``not_reproducible`` — the estimators that
  depend on the ACKs' timing at the sender (``Estimator.depends_on_sender_ack_timing``), each with why.
* ``loss_classes`` — for CRB and NewBR, how each loss was classified (``congestion`` or ``random``), and,
  when the capture's metadata labels the losses (``loss_truth``: episode → ``random``/``congestion``),
  how many they got right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ackreplay.scoring.ranking import NOT_REPRODUCIBLE

COMPRESSED_S = 100e-6  # an ACK interval under this is ACK compression
CLASSIFIERS = ("crb", "newbr")  # estimators that classify each loss


def burst_cause(dt: float, d: int, mss: int) -> str:
    if dt < COMPRESSED_S:
        return "ack_compression"
    if d > 2 * mss:
        return "stretch_ack"
    return "burst"


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


def seen_at(vantage: str | None) -> str:
    """Where a flow's ACK timing was seen, for the why lines: nothing at the sender (the timing the estimators
    read); off it, that this is the capture point's share and not the sender's, which the return path after the
    capture point changes unseen."""
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
