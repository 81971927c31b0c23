"""The congestion controls in the loop: how each grows its window on ACKs and what ssthresh it sets at a loss.

Growth is per ACK on the segments it newly acknowledged (``acked``), in slow start ``cwnd += acked`` up to
ssthresh (RFC 5681 §3.1, Linux ``tcp_slow_start``), then each control's congestion avoidance. The decreases are
the replay's own (ackreplay.estimators.controls: ``cubic_ssthresh``, ``scalable_ssthresh``,
``highspeed_decrease``, ``bic_ssthresh``, and H-TCP's β of ``htcp_backoff`` streamed in ``sim/htcp.py``),
applied to the window the control multiplies: cwnd for BIC, CUBIC and H-TCP; for NewReno, STCP and HSTCP the
stack's (``sim.sender.loss_window``: Linux's cwnd by default, ns-3's bytes in flight with ns-3's settings).
Westwood+ keeps the bandwidth estimate of ``westwood_plus.py`` (Linux ``tcp_westwood.c``) one ACK at a time.

``per_ack`` (``SimConfig.ns3_ack_counting``): ns-3.37's counting instead of Linux's byte counting — in slow
start one segment per ACK (not per segment acknowledged; ns-3's ``TcpNewReno::SlowStart``, which every
control but CUBIC uses), and NewReno's, Westwood+'s and H-TCP's congestion avoidance once per ACK; and ns-3's
window at a loss (its bytes in flight, ``loss_window``). ``ap[f, P_NS3]`` (the ``ns3`` growth parameter, set by
ns-3's settings ``NS3_PARAMS``): H-TCP and CUBIC by ns-3.37's own rules, which are not Linux's (``sim/htcp.py``,
``_cubic_ns3_avoid``).

Parameters per flow in ``ap`` (a row per flow), state in ``fs[f, ALG:]``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.estimators.controls.bic import bic_ssthresh
from ackreplay.estimators.controls.cubic import cubic_ssthresh
from ackreplay.estimators.controls.hstcp import highspeed_decrease
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH
from ackreplay.estimators.controls.stcp import scalable_ssthresh
from ackreplay.sim.htcp import htcp_increment, htcp_ns3_increment, htcp_ns3_ssthresh, htcp_ssthresh
from ackreplay.sim.layout import (
    ALG,
    BBR,
    BIC,
    CUBIC,
    CWND,
    HSTCP,
    HTCP,
    NEWRENO,
    RTT_LATEST,
    RTT_MIN,
    SSTHRESH,
    STCP,
    WESTWOOD,
)

# fs[f, ALG + k] of CUBIC and BIC
W_MAX, EPOCH, K_CUBIC, ORIGIN, W_EST = ALG, ALG + 1, ALG + 2, ALG + 3, ALG + 4
CNT_NS3 = W_EST  # ns-3's CUBIC (no W_est): the ACKed segments not yet turned into growth (m_cWndCnt)
# of Westwood+
BW_START, BK, BW_NS, BW = ALG, ALG + 1, ALG + 2, ALG + 3
# CUBIC's C (RFC 9438 §4.2: 0.4 segments/s³); the most ACKed segments per segment of growth before the first
# loss (Linux tcp_cubic.c ``bictcp_update``: ``ca->cnt`` at most 20 while ``last_max_cwnd`` is 0, "increase cwnd 5%
# per RTT"; ns-3's ``CntClamp``); ap columns
CUBIC_C, CNT_CLAMP = 0.4, 20.0
P_BETA, P_LOW, P_HIGH, P_HDEC, P_AI, P_FAST, P_WIN, P_GAIN, P_SMOOTH, P_FLOOR = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
P_HYSTART = 10  # CUBIC's HyStart on (sim/hystart.py)
P_NS3 = 11  # H-TCP and CUBIC as ns-3.37's TcpHtcp and TcpCubic run them (NS3_PARAMS of sim/model.py)
N_AP = 12
# … of H-TCP: beta_min, beta_max, throughput_ratio, max_rtt_step
P_BETA_MIN, P_BETA_MAX, P_THR_RATIO, P_RTT_STEP = P_LOW, P_HIGH, P_HDEC, P_WIN
# HSTCP's growth: the windows of RFC 3649's table (Appendix B) as Linux tcp_highspeed.c (hstcp_aimd_vals) and
# ns-3 (TcpHighSpeed::TableLookupA) look them up: a(w) = k + 1 for the first row k with w ≤ HSTCP_ROWS[k]
HSTCP_ROWS = np.array([
    38, 118, 221, 347, 495, 663, 851, 1058, 1284, 1529, 1793, 2076, 2378, 2699, 3039, 3399, 3778, 4177, 4596,
    5036, 5497, 5979, 6483, 7009, 7558, 8130, 8726, 9346, 9991, 10661, 11358, 12082, 12834, 13614, 14424, 15265,
    16137, 17042, 17981, 18955, 19965, 21013, 22101, 23230, 24402, 25618, 26881, 28193, 29557, 30975, 32450,
    33986, 35586, 37253, 38992, 40808, 42707, 44694, 46776, 48961, 51258, 53667, 56230, 58932, 61799, 64851,
    68113, 71617, 75401, 79517, 84035, 89053, 94717], np.float64)
# BIC's growth (Linux tcp_bic.c): max_increment 16, BICTCP_B 4; smooth_part (Linux 20, ns-3 5) in ap[P_SMOOTH]
BIC_MAX_INC, BIC_B = 16.0, 4.0


@njit(cache=True, nogil=True, inline="always")
def westwood_ack(fs: np.ndarray, ap: np.ndarray, f: int, now: float, delivered_bytes: float) -> None:
    """Westwood+'s estimate on one ACK: ``westwood_into`` of estimators/bandwidth/westwood_plus.py, streamed."""
    rtt = fs[f, RTT_LATEST]
    delta = now - fs[f, BW_START]
    if rtt > 0.0 and delta > max(rtt, ap[f, P_WIN]):
        sample = fs[f, BK] / delta
        gain = ap[f, P_GAIN]
        if fs[f, BW_NS] == 0.0 and fs[f, BW] == 0.0:
            fs[f, BW_NS] = sample
            fs[f, BW] = sample
        else:
            fs[f, BW_NS] = gain * fs[f, BW_NS] + (1.0 - gain) * sample
            fs[f, BW] = gain * fs[f, BW] + (1.0 - gain) * fs[f, BW_NS]
        fs[f, BK] = 0.0
        fs[f, BW_START] = now
    fs[f, BK] += delivered_bytes


@njit(cache=True, nogil=True, inline="always")
def _cubic_avoid(fs: np.ndarray, ap: np.ndarray, f: int, acked: float, now: float) -> float:
    """RFC 9438 §4.2–4.3: the cwnd increment for ``acked`` segments (cubic target one RTT ahead, Reno-friendly
    W_est with α = 3(1 − β)/(1 + β)); before the first loss (W_max 0: none yet, or cleared by a timeout) at least
    1/:data:`CNT_CLAMP` segment per segment acknowledged, 5 % a round, as Linux's ``bictcp_update`` clamps
    ``cnt`` while ``last_max_cwnd`` is 0 — the growth after HyStart ended slow start, where the cubic from its
    origin alone (K = 0) adds C·t³, a fraction of a segment in the first second."""
    cwnd = fs[f, CWND]
    beta = ap[f, P_BETA]
    if fs[f, EPOCH] < 0.0:
        fs[f, EPOCH] = now
        if cwnd < fs[f, W_MAX]:
            fs[f, K_CUBIC] = ((fs[f, W_MAX] - cwnd) / CUBIC_C) ** (1.0 / 3.0)
            fs[f, ORIGIN] = fs[f, W_MAX]
        else:
            fs[f, K_CUBIC] = 0.0
            fs[f, ORIGIN] = cwnd
        fs[f, W_EST] = cwnd
    rtt = fs[f, RTT_MIN] if fs[f, RTT_MIN] > 0.0 else 0.0
    t = now - fs[f, EPOCH] + rtt
    off = t - fs[f, K_CUBIC]  # (cubed by two products: numba's ``** 3`` multiplies, Python's calls pow, an ulp apart)
    target = fs[f, ORIGIN] + CUBIC_C * (off * off * off)
    if fs[f, W_MAX] == 0.0:
        target = max(target, cwnd * (1.0 + 1.0 / CNT_CLAMP))
    target = min(max(target, cwnd), 1.5 * cwnd)
    fs[f, W_EST] += 3.0 * (1.0 - beta) / (1.0 + beta) * acked / cwnd
    target = max(target, fs[f, W_EST])
    return (target - cwnd) / cwnd * acked


@njit(cache=True, nogil=True, inline="always")
def _cubic_ns3_avoid(fs: np.ndarray, f: int, acked: float, now: float) -> float:
    """ns-3.37 ``TcpCubic::IncreaseWindow``/``Update`` in congestion avoidance: no Reno-friendly region, and
    whole numbers — the target ⌊C·|t − K|³⌋ segments from the origin, ``cnt`` = ⌊w/(target − w)⌋ of the
    whole-segment window w (100·w at or above the target; at most ``CntClamp`` 20 before the first loss; at
    least 2), one segment more once the ACKed segments counted (``m_cWndCnt``, never reset) reach ``cnt``, the
    count then less ``cnt``. t = now + delay_min − the epoch's start (RTTmin here)."""
    w = np.floor(fs[f, CWND] + 1e-9)
    if fs[f, EPOCH] < 0.0:
        fs[f, EPOCH] = now
        if fs[f, W_MAX] <= w:
            fs[f, K_CUBIC] = 0.0
            fs[f, ORIGIN] = w
        else:
            fs[f, K_CUBIC] = ((fs[f, W_MAX] - w) / CUBIC_C) ** (1.0 / 3.0)
            fs[f, ORIGIN] = fs[f, W_MAX]
    t = now + max(fs[f, RTT_MIN], 0.0) - fs[f, EPOCH]
    off = abs(t - fs[f, K_CUBIC])
    delta = np.floor(CUBIC_C * (off * off * off))
    target = fs[f, ORIGIN] - delta if t < fs[f, K_CUBIC] else fs[f, ORIGIN] + delta
    cnt = np.floor(w / (target - w)) if target > w else 100.0 * w
    if fs[f, W_MAX] == 0.0:
        cnt = min(cnt, CNT_CLAMP)
    cnt = max(cnt, 2.0)
    fs[f, CNT_NS3] += acked
    if fs[f, CNT_NS3] >= cnt:
        fs[f, CNT_NS3] -= cnt
        return 1.0
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def _bic_avoid(fs: np.ndarray, ap: np.ndarray, f: int, acked: float) -> float:
    """Linux tcp_bic.c ``bictcp_update``: binary search towards W_max (a 1/BICTCP_B of the distance each RTT),
    capped at max_increment per RTT, then max probing; standard growth at or below low_window."""
    cwnd = fs[f, CWND]
    if cwnd <= ap[f, P_LOW]:
        return acked / cwnd
    w_max = fs[f, W_MAX]
    smooth = ap[f, P_SMOOTH]
    if cwnd < w_max:
        dist = (w_max - cwnd) / BIC_B
        if dist > BIC_MAX_INC:
            per_rtt = BIC_MAX_INC
        elif dist <= 1.0:
            per_rtt = BIC_B / smooth
        else:
            per_rtt = dist
    elif cwnd < w_max + BIC_B:
        per_rtt = BIC_B / smooth
    elif cwnd < w_max + BIC_MAX_INC * (BIC_B - 1.0):
        per_rtt = (cwnd - w_max) / (BIC_B - 1.0)
    else:
        per_rtt = BIC_MAX_INC
    return per_rtt * acked / cwnd


@njit(cache=True, nogil=True, inline="always")
def avoid_increment(alg: int, fs: np.ndarray, ap: np.ndarray, f: int, acked: float, now: float, mss: float
                    ) -> float:
    """The congestion-avoidance increment of cwnd (segments) for ``acked`` newly acknowledged segments
    (``ap[f, P_NS3]``: H-TCP and CUBIC as ns-3.37 runs them)."""
    cwnd = fs[f, CWND]
    if alg == CUBIC:
        return _cubic_ns3_avoid(fs, f, acked, now) if ap[f, P_NS3] > 0.0 else _cubic_avoid(fs, ap, f, acked, now)
    if alg == BIC:
        return _bic_avoid(fs, ap, f, acked)
    if alg == STCP:  # Kelly 2003: +a per ACKed segment, at most one per ai_count (Linux/ns-3 min(cwnd, AI))
        return acked / min(cwnd, ap[f, P_AI])
    if alg == HTCP:
        return htcp_ns3_increment(fs, f, now, mss) if ap[f, P_NS3] > 0.0 else htcp_increment(fs, f, acked, now)
    if alg == HSTCP:  # RFC 3649's table as Linux and ns-3 read it (HSTCP_ROWS): a(w) segments per RTT
        a = min(np.searchsorted(HSTCP_ROWS, np.floor(cwnd)), len(HSTCP_ROWS) - 1) + 1.0
        return a * acked / cwnd
    return acked / cwnd  # NewReno, Westwood+: RFC 5681 §3.1


@njit(cache=True, nogil=True, inline="always")
def grow(alg: int, fs: np.ndarray, ap: np.ndarray, f: int, acked: float, now: float, per_ack: bool, mss: float
         ) -> None:
    """cwnd after an ACK of ``acked`` new segments, outside recovery (``per_ack``: ns-3.37's counting)."""
    if alg == CUBIC and ap[f, P_NS3] > 0.0 and fs[f, CWND] < fs[f, SSTHRESH]:
        fs[f, CWND] += acked  # TcpCubic's slow start: every segment the ACK acknowledged, none left to CA
        return
    if fs[f, CWND] < fs[f, SSTHRESH]:
        step = min(acked, fs[f, SSTHRESH] - fs[f, CWND])
        if per_ack and alg != CUBIC:
            step = min(step, 1.0)  # TcpNewReno::SlowStart: one segment an ACK, the rest left to CA
        fs[f, CWND] += step
        acked -= step
        if per_ack and alg != CUBIC and fs[f, CWND] < fs[f, SSTHRESH]:
            return
    if per_ack and alg in (NEWRENO, WESTWOOD, HTCP):
        acked = min(acked, 1.0)  # TcpNewReno::CongestionAvoidance and TcpHtcp's: once an ACK
    if acked > 0.0:
        fs[f, CWND] += avoid_increment(alg, fs, ap, f, acked, now, mss)


@njit(cache=True, nogil=True, inline="always")
def _one(x: float) -> np.ndarray:
    out = np.empty(1)
    out[0] = x
    return out


@njit(cache=True, nogil=True, inline="always")
def _w_max(fs: np.ndarray, ap: np.ndarray, f: int, w: float) -> None:
    """W_max with fast convergence (``last_max_cwnd`` of estimators/controls/bic.py, one event; ns-3's CUBIC
    keeps it in whole segments, ``m_lastMaxCwnd`` a ``uint32_t``)."""
    if ap[f, P_FAST] > 0.0 and w < fs[f, W_MAX]:
        fs[f, W_MAX] = w * (1.0 + ap[f, P_BETA]) / 2.0
        if ap[f, P_NS3] > 0.0:
            fs[f, W_MAX] = np.floor(fs[f, W_MAX] + 1e-9)
    else:
        fs[f, W_MAX] = w
    fs[f, EPOCH] = -1.0


@njit(cache=True, nogil=True, inline="always")
def loss_ssthresh(alg: int, fs: np.ndarray, ap: np.ndarray, f: int, mss: float, window: float, timeout: bool,
                  now: float) -> float:
    """The ssthresh (segments) the control sets at a loss event (recovery entry or timeout); ``window``: the
    segments NewReno, STCP and HSTCP multiply (``sim.sender.loss_window``: Linux's cwnd, ns-3's bytes in flight);
    BIC, CUBIC and H-TCP take cwnd (ns-3's H-TCP ``window``, ``TcpHtcp::GetSsThresh``), Westwood+ its estimate.
    BIC and CUBIC take it in whole segments and their product too, as Linux (``snd_cwnd * beta /
    BICTCP_BETA_SCALE``, integers) and ns-3 (``GetCwndInSegments``, ``static_cast<uint32_t>``) compute it: under
    random loss, at windows of ten segments, the fractions Linux drops are a tenth of the window
    (tests/sim/test_kernel_random_loss.py)."""
    cwnd = np.floor(fs[f, CWND] + 1e-9)  # the stack's window, whole segments (Linux snd_cwnd, ns-3's in segments)
    if alg == HTCP and ap[f, P_NS3] > 0.0:
        ss = htcp_ns3_ssthresh(fs, f, now, window, mss, ap[f, P_BETA_MIN], ap[f, P_THR_RATIO])
    elif alg == HTCP:
        ss = htcp_ssthresh(fs, f, now, ap[f, P_BETA_MIN], ap[f, P_BETA_MAX], ap[f, P_THR_RATIO])
    elif alg == CUBIC:
        _w_max(fs, ap, f, cwnd)
        ss = np.floor(cubic_ssthresh(_one(cwnd), ap[f, P_BETA], MIN_SSTHRESH)[0] + 1e-9)
    elif alg == BIC:
        _w_max(fs, ap, f, cwnd)
        ss = np.floor(bic_ssthresh(_one(cwnd), ap[f, P_BETA], ap[f, P_LOW], MIN_SSTHRESH)[0] + 1e-9)
    elif alg == STCP:
        ss = scalable_ssthresh(_one(window), ap[f, P_BETA], MIN_SSTHRESH)[0]
    elif alg == HSTCP:
        b = highspeed_decrease(window, ap[f, P_LOW], ap[f, P_HIGH], ap[f, P_HDEC])
        ss = max(window * (1.0 - b), MIN_SSTHRESH)
    elif alg == WESTWOOD and fs[f, BW] > 0.0 and fs[f, RTT_MIN] > 0.0:  # Linux tcp_westwood.c: BWE·RTTmin
        ss = max(fs[f, BW] * fs[f, RTT_MIN] / mss, MIN_SSTHRESH)
        if ap[f, P_FLOOR] > 0.0:  # floor_half (Möller et al. 2007 §IV): never below NewReno's window/2
            ss = max(ss, window / 2.0)
    else:  # NewReno (Linux tcp_reno_ssthresh: half of cwnd; ns-3 TcpNewReno: half the bytes in flight);
        ss = max(window / 2.0, MIN_SSTHRESH)  # Westwood+ with no estimate yet
    if timeout and (alg in (CUBIC, BIC)):
        fs[f, W_MAX] = 0.0  # bictcp_reset on TCP_CA_Loss
    return ss


def control_code(name: str) -> int:
    """The compiled code of a control by its estimator name."""
    codes = {"newreno": NEWRENO, "westwood_plus": WESTWOOD, "cubic": CUBIC, "stcp": STCP, "hstcp": HSTCP, "bic": BIC,
             "htcp": HTCP, "bbr": BBR}
    return codes[name]
