"""Westwood+ as Linux implements it (``net/ipv4/tcp_westwood.c``), for comparison with deployed stacks.

docs/estimators.md §3 "Westwood+"; Grieco & Mascolo 2004 (cited in Möller et al. 2007). Tumbling windows in Linux's
order: on each ACK, if ``t − window_start > max(rtt_latest, 50 ms)`` close the window — sample
``bk/Δ``, two cascaded EWMAs with a = 7/8 (``bw_ns_est`` then ``bw_est``; the first sample seeds
both — as in Linux, any sample while both are still 0 seeds them, so an empty first window does not
pin the estimate at 0) — then add the ACK's ``d`` to ``bk``. No window closes before the first RTT sample.
Loss: ``ssthresh = max(bw_est·RTTmin/mss, 2)`` with Linux's own RTTmin (reset to the next sample after
a timeout); Linux sets ``cwnd = ssthresh`` when recovery ends. ``floor_half`` never lets ssthresh go
below NewReno's flight/2 (the fix proposed in Möller et al. 2007 §IV).
"""

from __future__ import annotations

import math

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import FAST_RETRANSMIT, Batched, Columns, Decision, LossContext, value_at
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True)
def westwood_into(t: np.ndarray, d: np.ndarray, rtt: np.ndarray, min_window: float, gain: float, out: np.ndarray
                  ) -> None:
    """Westwood+ of one flow written into ``out`` (NaN before the first window closes)."""
    n = len(t)
    if n == 0:
        return
    out[0] = np.nan
    start = t[0]
    bk = 0
    rtt_latest = np.nan
    have = False
    bw_ns = 0.0
    bw = 0.0
    for k in range(1, n):
        if not np.isnan(rtt[k]):
            rtt_latest = rtt[k]
        delta = t[k] - start
        if not np.isnan(rtt_latest) and delta > max(rtt_latest, min_window):
            sample = bk / delta
            if bw_ns == 0.0 and bw == 0.0:  # Linux: an empty filter (both 0) is seeded by the sample
                bw_ns = sample
                bw = sample
                have = True
            else:
                bw_ns = gain * bw_ns + (1.0 - gain) * sample
                bw = gain * bw + (1.0 - gain) * bw_ns
            bk = 0
            start = t[k]
        bk += d[k]
        out[k] = bw if have else np.nan


@njit(cache=True, nogil=True)
def westwood_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, rtt: np.ndarray, min_window: float,
                   gain: float) -> np.ndarray:
    """:func:`westwood_into` on every flow of a batch (``offsets``), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        westwood_into(t[lo:hi], d[lo:hi], rtt[lo:hi], min_window, gain, out[lo:hi])
    return out


@register
class WestwoodPlus(Batched):
    """Linux Westwood+: per-RTT tumbling windows, two cascaded 7/8 EWMAs (tcp_westwood.c)."""

    name = "westwood_plus"
    cost = 0.3
    title = "Westwood+ (Linux)"
    citation = f"Linux net/ipv4/tcp_westwood.c; {refs.GRIECO_2004}; {refs.MOLLER_2007}, §IV (floor_half)"
    doc = refs.doc("estimators", "westwood_plus")
    PARAMS = (
        Param("min_window", float, 0.05, "shortest sampling window (TCP_WESTWOOD_RTT_MIN = HZ/20)", unit="s",
              minimum=0.0, maximum=10.0, source="tcp_westwood.c"),
        Param("gain", float, 0.875, "EWMA weight of the previous value (7/8 in Linux)", minimum=0.0,
              maximum=1.0, exclusive_minimum=True, source="tcp_westwood.c westwood_do_filter"),
        Param("floor_half", bool, False, "never set ssthresh below NewReno's flight/2",
              source="Möller et al. 2007 §IV"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        return westwood_batch(offsets, cols.t, cols.d, cols.rtt_any, self.params["min_window"], self.params["gain"])

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        e = value_at(estimate, ctx.event)
        rttmin = linux_rttmin(inputs, ctx)
        if e is None or math.isnan(rttmin):
            return Decision(e, None, None)
        ss = max(e * rttmin / ctx.mss, 2.0)
        if self.params["floor_half"]:
            ss = max(ss, ctx.flight / 2 / ctx.mss)
        if ctx.kind == FAST_RETRANSMIT:
            return Decision(e, ss, ss, "cwnd = ssthresh when recovery ends", ctx.end_t)
        return Decision(e, ss, 1.0)


def linux_rttmin(inputs: FlowInputs, ctx: LossContext) -> float:
    """Linux's w->rtt_min at the decision: min of RTT samples since the last timeout's reset (a running
    minimum carried from one loss event to the next, not a scan of the flow per event)."""
    if ctx.event < 0:
        return math.nan
    # CA_EVENT_LOSS: reset_rtt_min, the next sample restarts it
    return inputs.rtt_min_since(ctx.event, ctx.last_timeout_t)
