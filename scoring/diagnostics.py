"""Why an estimate is what it is: per-flow diagnostics (docs/estimators.md §7 "Explanations").

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
  ``capacity_bps`` (``ackreplay.path.dispersion``, docs/path.md §9: the packet-pair dispersion mode above
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
