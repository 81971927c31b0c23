"""H-TCP — a backoff that adapts to the queueing delay, unless the throughput moved (docs/controls.md §8 ``htcp``).

Leith & Shorten, "H-TCP: TCP for high-speed and long-distance networks", PFLDnet 2004 §3 (adaptive
backoff): at a congestion event ``cwnd ← β·cwnd`` with ``β = RTTmin/RTTmax`` clamped to [0.5, 0.8] — the
factor that just drains the queue the flow built, keeping the link busy — but ``β = 0.5`` whenever the
throughput achieved in the last congestion epoch differs by more than 20 % from the one before (a
change in the network: fall back to standard TCP's halving, so that flows converge to fairness).

Linux ``net/ipv4/tcp_htcp.c`` (BETA_MIN 1<<6 = 0.5, BETA_MAX 102/128 ≈ 0.8, both ``<< 7``)::

    htcp_beta_update: if (!between(5 * maxB, 4 * old_maxB, 6 * old_maxB)) → beta = BETA_MIN
                      else beta = clamp((minRTT << 7) / maxRTT, BETA_MIN, BETA_MAX)
    htcp_recalc_ssthresh: return max((tcp_snd_cwnd(tp) * ca->beta) >> 7, 2U);
    measure_rtt: minRTT = min(minRTT, srtt); in TCP_CA_Open only:
                 if (maxRTT < srtt && srtt <= maxRTT + msecs_to_jiffies(20)) maxRTT = srtt;

State, as §8 restates it and this module carries it through the flow's ACK events and loss events in one
pass (:func:`htcp_backoff`):

- RTTmin: the smallest smoothed RTT so far (RFC 6298 ``srtt``, as Linux and ns-3 time it);
- RTTmax: the largest smoothed RTT since the previous loss event, from RTTmin, growing by at most
  ``max_rtt_step`` (20 ms) per ACK and only outside recovery (ACKs after a loss event's first
  retransmission up to its end do not move it); it restarts at the first ACK outside recovery after a
  loss event — until then (two losses with no ACK outside recovery between them) the previous one stands;
- epoch throughput: bytes acknowledged between two loss events over the time between them (the first
  epoch runs from the flow's first ACK); at the first loss event there is no epoch before it to compare
  with, and β = 0.5 (Linux: ``old_maxB`` is 0 and ``modeswitch`` unset then; ns-3: ``m_lastThroughput`` 0).

Then ``ssthresh = max(β·w, 2)`` segments, real-valued (§1.3), ``w`` the real sender's flight at the loss.
Where Linux differs (not followed, §8 is the reference): its throughput is a smoothed per-RTT maximum
(``maxB``), not bytes over the epoch; it ignores a smoothed RTT more than 20 ms above RTTmax instead of
taking it 20 ms at a time, and fades RTTmax towards RTTmin at a loss instead of restarting it; it keeps
β = 0.5 for one more loss after a throughput switch (``modeswitch``) and when RTTmin ≤ 10 ms. ns-3
``TcpHtcp`` differs more (see ``testbed/ns3/README.md``): it resets RTTmin at every loss (its RTTmin/RTTmax
are the smoothed RTT's within the epoch), its β is not clamped, ``diff / m_lastThroughput``
is an integer division so the adaptive β applies only when the throughput rose (any drop falls back to
0.5), and it multiplies the bytes in flight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import LossContext
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH, LossBased
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit

#: Why β took its value at a loss event (the decision's note).
ADAPTIVE, FIRST_LOSS, THROUGHPUT_CHANGED, NO_RTT = 0, 1, 2, 3
REASONS = {ADAPTIVE: "RTTmin/RTTmax", FIRST_LOSS: "first loss: no epoch before to compare",
           THROUGHPUT_CHANGED: "epoch throughput changed", NO_RTT: "no smoothed RTT yet"}


@njit(cache=True, nogil=True)
def htcp_backoff(t: np.ndarray, srtt: np.ndarray, acked: np.ndarray, event: np.ndarray, start: np.ndarray,
                 end: np.ndarray, beta_min: float, beta_max: float, max_rtt_step: float, throughput_ratio: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """β at every loss event, in one pass over the ACK events and the loss events (Leith & Shorten §3;
    Linux ``htcp_beta_update``/``measure_rtt`` as §8 restates them). ``event``: each loss event's decision
    ACK event (−1: none, then β is NaN and the state carries over); ``start``/``end``: its first
    retransmission and the end of its recovery (NaN: the capture ends first), s. Returns β, why (``REASONS``),
    RTTmin, RTTmax and the epoch throughput (bytes/s) at each loss event."""
    m = len(event)
    beta = np.full(m, np.nan)
    why = np.full(m, NO_RTT, np.int64)
    rmin_out = np.full(m, np.nan)
    rmax_out = np.full(m, np.nan)
    thr_out = np.full(m, np.nan)
    rttmin = np.inf
    rttmax = np.nan  # none before the first ACK outside recovery
    fresh = False  # whether RTTmax was restarted since the latest loss event
    k = 0  # next ACK event to take in
    epoch_t = t[0] if len(t) else 0.0
    epoch_bytes = 0.0
    prev_thr = np.nan
    decided = 0  # loss events decided so far
    last = -1  # the latest decided loss event (whose recovery the ACKs after it may be in)
    for i in range(m):
        e = event[i]
        if e < 0:
            continue
        while k <= e:
            if k > 0:  # the first ACK only opens the clock (§1.1)
                epoch_bytes += acked[k]
            s = srtt[k]
            if not np.isnan(s):
                if s < rttmin:
                    rttmin = s
                in_recovery = last >= 0 and t[k] > start[last] and (np.isnan(end[last]) or t[k] <= end[last])
                if not in_recovery:
                    if not fresh or rttmax < rttmin:  # restart from RTTmin at the epoch's first ACK outside recovery
                        rttmax = rttmin
                        fresh = True
                    if s > rttmax:
                        rttmax = min(s, rttmax + max_rtt_step)
            k += 1
        span = start[i] - epoch_t
        thr = epoch_bytes / span if span > 0 else np.nan
        thr_out[i] = thr
        rmin_out[i] = rttmin if np.isfinite(rttmin) else np.nan
        rmax_out[i] = rttmax
        if not np.isfinite(rttmin) or np.isnan(rttmax):
            why[i] = NO_RTT
            beta[i] = beta_min
        elif decided == 0 or np.isnan(prev_thr) or np.isnan(thr) or prev_thr <= 0:
            why[i] = FIRST_LOSS
            beta[i] = beta_min
        elif abs(thr - prev_thr) > throughput_ratio * prev_thr:
            why[i] = THROUGHPUT_CHANGED
            beta[i] = beta_min
        else:
            why[i] = ADAPTIVE
            beta[i] = min(max(rttmin / rttmax, beta_min), beta_max)
        prev_thr = thr
        epoch_t = start[i]
        epoch_bytes = 0.0
        fresh = False  # (until an ACK outside recovery restarts it, the previous epoch's RTTmax stands)
        decided += 1
        last = i
    return beta, why, rmin_out, rmax_out, thr_out


@register
class Htcp(LossBased):
    """H-TCP: ssthresh = β·w, β = RTTmin/RTTmax in [0.5, 0.8], 0.5 when the epoch throughput moved >20 %."""

    name = "htcp"
    title = "H-TCP (decisions only)"
    citation = ("D. Leith, R. Shorten, \"H-TCP: TCP for high-speed and long-distance networks\", Proc. PFLDnet "
                f"2004, §3; Linux net/ipv4/tcp_htcp.c; {refs.BUFFER_STUDY}, §II")
    doc = refs.doc("controls", "htcp")
    PARAMS = (
        Param("beta_min", float, 0.5, "smallest backoff β (and β after a throughput change or at the first loss)",
              minimum=0.0, maximum=1.0, exclusive_minimum=True, source="Linux tcp_htcp.c BETA_MIN 64/128; "
              "Leith & Shorten §3; ns-3 DefaultBackoff"),
        Param("beta_max", float, 0.8, "largest backoff β (Linux's fixed point makes it 102/128 = 0.797)",
              minimum=0.0, maximum=1.0, exclusive_minimum=True, alternatives=(("linux", 102 / 128),),
              source="Leith & Shorten §3; Linux tcp_htcp.c BETA_MAX 102 (<< 7)"),
        Param("throughput_ratio", float, 0.2,
              "β falls back to beta_min when the last epoch's throughput differs by more than this share from "
              "the one before", minimum=0.0, maximum=100.0,
              source="Leith & Shorten §3; Linux between(5·maxB, 4·old_maxB, 6·old_maxB); ns-3 ThroughputRatio"),
        Param("max_rtt_step", float, 0.02, "RTTmax grows by at most this much per ACK", unit="s", minimum=0.0,
              maximum=10.0, source="Linux tcp_htcp.c measure_rtt msecs_to_jiffies(20)"),
    )
    ORDERED = (("beta_min", "beta_max", False),)

    def ssthresh(self, inputs: FlowInputs, contexts: Sequence[LossContext], w: np.ndarray,
                 timeout: np.ndarray) -> tuple[np.ndarray, list[str]]:
        p = self.params
        nan = math.nan
        beta, why, rmin, rmax, thr = htcp_backoff(
            inputs.t, inputs.srtt, inputs.acked, np.array([c.event for c in contexts], np.int64),
            np.array([c.start_t for c in contexts], np.float64),
            np.array([nan if c.end_t is None else c.end_t for c in contexts], np.float64),
            p["beta_min"], p["beta_max"], p["max_rtt_step"], p["throughput_ratio"])
        ss = np.where(np.isnan(w), np.nan, np.maximum(beta * w, MIN_SSTHRESH))
        notes = []
        for b, r, lo, hi, th in zip(beta.tolist(), why.tolist(), rmin.tolist(), rmax.tolist(), thr.tolist(),
                                    strict=True):
            if math.isnan(b):
                notes.append("")
                continue
            rtts = "" if math.isnan(hi) else f"; RTTmin {lo * 1e3:.1f} ms, RTTmax {hi * 1e3:.1f} ms"
            rate = "" if math.isnan(th) else f"; epoch {th * 8e-6:.3f} Mbit/s"
            notes.append(f"β = {b:.3f} ({REASONS[r]}){rtts}{rate}")
        return ss, notes
