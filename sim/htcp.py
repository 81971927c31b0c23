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
