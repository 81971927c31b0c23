"""H-TCP in the loop (Leith & Shorten, PFLDnet 2004; Linux ``tcp_htcp.c``): growth α(Δ) from the time since the
last congestion event, and the adaptive backoff β that the replay decides with (``htcp_backoff`` of
ackreplay.estimators.controls.htcp), streamed one ACK and one loss event at a time.

- β at a loss event: RTTmin/RTTmax clamped to [beta_min, beta_max]; beta_min at the first loss event (no
  epoch before to compare) and when the epoch's throughput (bytes acknowledged since the last loss event over
  the time since) differs from the one before by more than ``throughput_ratio``. RTTmin: the smallest smoothed
  RTT; RTTmax: the largest smoothed RTT since the last loss event, restarted from RTTmin at the first ACK
  outside recovery after it, growing by at most ``max_rtt_step`` an ACK. ssthresh = max(β·cwnd, 2) (Linux
  ``htcp_recalc_ssthresh`` multiplies cwnd).
- Growth (Leith & Shorten §2; Linux ``htcp_alpha_update``): Δ = time since the last congestion event,
  α(Δ) = 1 for Δ ≤ Δ_L = 1 s, else 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)²; scaled by RTTmin/100 ms (the scale
  clamped to [0.1, 2], Linux ``use_rtt_scaling``) but never below 1; α = 2(1 − β)·α(Δ) with the last β; then
  ``cwnd += α·acked/cwnd``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH
from ackreplay.sim.layout import ALG, CWND

# fs[f, ALG + k] of H-TCP
H_MINRTT, H_MAXRTT, H_FRESH, H_EPOCH_T, H_EPOCH_B = ALG, ALG + 1, ALG + 2, ALG + 3, ALG + 4
H_PREV_THR, H_LAST_CONG, H_BETA, H_OPEN = ALG + 5, ALG + 6, ALG + 7, ALG + 8
DELTA_L = 1.0  # s, Leith & Shorten's Δ_L (Linux: HZ)
RTT_REF = 0.1  # s, Linux use_rtt_scaling's reference RTT


@njit(cache=True, nogil=True, inline="always")
def htcp_ack(fs: np.ndarray, f: int, now: float, srtt: float, acked_bytes: float, in_recovery: bool,
             beta_min: float, max_rtt_step: float) -> None:
    """An ACK: the epoch's bytes, RTTmin and (outside recovery) RTTmax. The first ACK opens the clock."""
    if fs[f, H_OPEN] == 0.0:
        fs[f, H_OPEN] = 1.0
        fs[f, H_EPOCH_T] = now
        fs[f, H_LAST_CONG] = now
        fs[f, H_BETA] = beta_min
        fs[f, H_MINRTT] = np.inf
        fs[f, H_PREV_THR] = np.nan
        return
    fs[f, H_EPOCH_B] += acked_bytes
    if srtt <= 0.0:
        return
    fs[f, H_MINRTT] = min(fs[f, H_MINRTT], srtt)
    if not in_recovery:
        if fs[f, H_FRESH] == 0.0 or fs[f, H_MAXRTT] < fs[f, H_MINRTT]:
            fs[f, H_MAXRTT] = fs[f, H_MINRTT]
            fs[f, H_FRESH] = 1.0
        if srtt > fs[f, H_MAXRTT]:
            fs[f, H_MAXRTT] = min(srtt, fs[f, H_MAXRTT] + max_rtt_step)


@njit(cache=True, nogil=True, inline="always")
def htcp_increment(fs: np.ndarray, f: int, acked: float, now: float) -> float:
    """The congestion-avoidance increment of cwnd for ``acked`` newly acknowledged segments."""
    delta = now - fs[f, H_LAST_CONG] if fs[f, H_OPEN] != 0.0 else 0.0
    factor = 1.0
    if delta > DELTA_L:
        d = delta - DELTA_L
        factor = 1.0 + 10.0 * d + (d / 2.0) ** 2
    rttmin = fs[f, H_MINRTT]
    if np.isfinite(rttmin) and rttmin > 0.0:
        factor = max(factor * min(max(rttmin / RTT_REF, 0.1), 2.0), 1.0)
    beta = fs[f, H_BETA] if fs[f, H_OPEN] != 0.0 else 0.5
    return 2.0 * (1.0 - beta) * factor * acked / fs[f, CWND]


@njit(cache=True, nogil=True, inline="always")
def htcp_ssthresh(fs: np.ndarray, f: int, now: float, beta_min: float, beta_max: float, throughput_ratio: float
                  ) -> float:
    """A loss event: β (the replay's rule), a new epoch, Δ restarted; the ssthresh (segments)."""
    if fs[f, H_OPEN] == 0.0:  # a loss before any ACK
        return max(fs[f, CWND] * beta_min, MIN_SSTHRESH)
    span = now - fs[f, H_EPOCH_T]
    thr = fs[f, H_EPOCH_B] / span if span > 0.0 else np.nan
    prev = fs[f, H_PREV_THR]
    rmin, rmax = fs[f, H_MINRTT], fs[f, H_MAXRTT]
    if not np.isfinite(rmin) or rmax <= 0.0:
        beta = beta_min  # no smoothed RTT yet
    elif np.isnan(prev) or np.isnan(thr) or prev <= 0.0:
        beta = beta_min  # the first loss event: no epoch before to compare
    elif abs(thr - prev) > throughput_ratio * prev:
        beta = beta_min  # the epoch's throughput changed
    else:
        beta = min(max(rmin / rmax, beta_min), beta_max)
    fs[f, H_BETA] = beta
    fs[f, H_PREV_THR] = thr
    fs[f, H_EPOCH_T] = now
    fs[f, H_EPOCH_B] = 0.0
    fs[f, H_FRESH] = 0.0
    fs[f, H_LAST_CONG] = now
    return max(fs[f, CWND] * beta, MIN_SSTHRESH)


# ns-3.37's TcpHtcp (src/internet/model/tcp-htcp.cc), the variant a flow with ``ns3`` set runs. It departs from
# Leith & Shorten and Linux above in four ways, each followed here:
# - α is never scaled by the RTT, and it is added in *bytes* per ACK: CongestionAvoidance adds
#   ⌊max(1, (MSS² + cwnd·α)/cwnd)⌋ = ⌊max(1, MSS²/cwnd + α)⌋ bytes once per ACK (cwnd in bytes), so α(Δ) adds
#   α/MSS of a segment an ACK where H-TCP adds α segments a window;
# - RTTmin and RTTmax are the smoothed RTT's least and largest within the epoch (``m_lastRtt`` at every
#   PktsAcked, recovery's ACKs included; both reset at each loss event), β = RTTmin/RTTmax unclamped;
# - β adapts only when the epoch's throughput rose by less than ``⌊diff/last⌋ ≤ ThroughputRatio`` (an integer
#   division: any rise under 100 %), the throughput counting only the bytes acknowledged in CA_OPEN over the time
#   since the last loss event (``m_lastCon``, from the simulation's time 0); else β = DefaultBackoff 0.5, and at
#   the first loss event (no throughput before);
# - ssthresh = max(2, β·BytesInFlight): the window the stack hands it (``sim.sender.loss_window``).
H3_DATA, H3_LAST_THR, H3_LAST_CON, H3_BETA = H_EPOCH_B, H_PREV_THR, H_LAST_CONG, H_BETA


@njit(cache=True, nogil=True, inline="always")
def htcp_ns3_ack(fs: np.ndarray, f: int, srtt: float, acked_bytes: float, in_recovery: bool) -> None:
    """ns-3 ``TcpHtcp::PktsAcked`` on one ACK: the bytes acknowledged in CA_OPEN, the epoch's least and largest
    smoothed RTT."""
    if not in_recovery:
        fs[f, H3_DATA] += acked_bytes
    if srtt <= 0.0:
        return
    if fs[f, H_FRESH] == 0.0:
        fs[f, H_MINRTT] = srtt
        fs[f, H_MAXRTT] = srtt
        fs[f, H_FRESH] = 1.0
    else:
        fs[f, H_MINRTT] = min(fs[f, H_MINRTT], srtt)
        fs[f, H_MAXRTT] = max(fs[f, H_MAXRTT], srtt)


@njit(cache=True, nogil=True, inline="always")
def htcp_ns3_increment(fs: np.ndarray, f: int, now: float, mss: float) -> float:
    """ns-3 ``TcpHtcp::CongestionAvoidance`` (once an ACK; ``UpdateAlpha`` at ``now``): the cwnd increment in
    segments, ⌊max(1, MSS²/cwnd + α)⌋ bytes with α = max(1, 2(1 − β)·α(Δ)) of the last β."""
    delta = now - fs[f, H3_LAST_CON]
    factor = 1.0
    if delta > DELTA_L:
        d = delta - DELTA_L
        factor = 1.0 + 10.0 * d + 0.25 * d * d
    alpha = max(2.0 * (1.0 - fs[f, H3_BETA]) * factor, 1.0)
    adder = np.floor(max(mss / fs[f, CWND] + alpha, 1.0))  # MSS²/cwnd with cwnd in bytes is MSS/cwnd in segments
    return adder / mss


@njit(cache=True, nogil=True, inline="always")
def htcp_ns3_ssthresh(fs: np.ndarray, f: int, now: float, window: float, mss: float, default_beta: float,
                      throughput_ratio: float) -> float:
    """ns-3 ``TcpHtcp::GetSsThresh``: β (``UpdateBeta``), a new epoch; the ssthresh (segments) of ``window``."""
    span = now - fs[f, H3_LAST_CON]
    thr = np.floor(fs[f, H3_DATA] / span) if span > 0.0 else 0.0  # (m_throughput is a uint32_t)
    last = fs[f, H3_LAST_THR]
    beta = default_beta
    if thr > last > 0.0 and np.floor((thr - last) / last) <= throughput_ratio and fs[f, H_FRESH] != 0.0:
        beta = fs[f, H_MINRTT] / fs[f, H_MAXRTT]
    fs[f, H3_BETA] = beta
    fs[f, H3_LAST_THR] = thr
    fs[f, H3_LAST_CON] = now
    fs[f, H3_DATA] = 0.0
    fs[f, H_FRESH] = 0.0
    return max(np.floor(window * mss * beta) / mss, MIN_SSTHRESH)
