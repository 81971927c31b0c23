"""ABSE — adaptive bandwidth share estimation (Wang et al. 2002 §3.1.2, §3.2, eqs. (1)–(6)).

Per ACK, with ``cwnd = flight_k`` and ``RTT = srtt_k`` (docs/estimators.md §3 "ABSE"):

1. sampling interval (eqs. (2)–(3)): ``T_k = Δt_k`` without congestion (``ŝ·RTTmin ≥ cwnd``) or with
   ``cwnd = 0``, else ``RTT·(cwnd − ŝ·RTTmin)/cwnd`` clamped to [Δt_k, RTT]; ``Δt_k`` when it exceeds
   RTT; ``RTT`` before the first estimate;
2. sample ``s_k = Σ_{t_j > t_k − T_k} d_j / T_k`` (eq. (4));
3. instability ``U_k = β·U_{k−1} + (1 − β)·|s_k − s_{k−1}|`` (eq. (5)), 0 at the first sample;
4. ``τ_k = RTT + N·RTT·U_k/U_max`` with U_max over the 10 latest U (eq. (6)); RTT when U_max = 0;
5. filter ``ŝ_k = α_k·ŝ_{k−1} + (1 − α_k)·s_k``, ``α_k = (2τ_k − Δt_k)/(2τ_k + Δt_k)`` (eq. (1)), with
   the virtual-zero-sample rule of §2 when ``Δt_k > τ_k/2``.

Decisions (documented): no sample while the smoothed RTT is unknown; an unknown RTTmin counts as "no
congestion" in step 1.
"""

from __future__ import annotations

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import Batched, Columns
from ackreplay.estimators.filters import adaptive_step
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit

_UWIN = 10


@njit(cache=True, nogil=True)
def abse_into(t: np.ndarray, d: np.ndarray, srtt: np.ndarray, rttmin: np.ndarray, flight: np.ndarray,
              beta: float, big_n: float, out: np.ndarray) -> None:
    """ABSE of one flow written into ``out`` (NaN before the first sample)."""
    n = len(t)
    if n:
        out[0] = np.nan
    ring = np.zeros(_UWIN)
    nring = 0
    have = False
    est = 0.0
    s_prev = 0.0
    u = 0.0
    last_t = 0.0
    lo = 1
    total = 0
    for k in range(1, n):
        total += d[k]
        rtt = srtt[k]
        dt = t[k] - t[k - 1]
        if not (rtt > 0.0):
            out[k] = est if have else np.nan
            continue
        cwnd = float(flight[k])
        if not have:
            T = rtt
        else:
            rmin = rttmin[k]
            if np.isnan(rmin) or est * rmin >= cwnd or cwnd == 0.0:
                T = dt
            else:
                T = rtt * (cwnd - est * rmin) / cwnd
                T = min(max(T, dt), rtt)
            if dt > rtt:
                T = dt
        start = t[k] - T
        while lo <= k and t[lo] <= start:
            total -= d[lo]
            lo += 1
        while lo > 1 and t[lo - 1] > start:
            lo -= 1
            total += d[lo]
        s = total / T
        if not have:
            u = 0.0
        else:
            u = beta * u + (1.0 - beta) * abs(s - s_prev)
        ring[nring % _UWIN] = u
        nring += 1
        umax = 0.0
        for i in range(min(nring, _UWIN)):
            if ring[i] > umax:
                umax = ring[i]
        tau = rtt + big_n * rtt * u / umax if umax > 0.0 else rtt
        if not have:
            est = s
            have = True
        else:
            est = adaptive_step(est, t[k] - last_t, s, tau)
        s_prev = s
        last_t = t[k]
        out[k] = est


@njit(cache=True, nogil=True)
def abse_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, srtt: np.ndarray, rttmin: np.ndarray,
               flight: np.ndarray, beta: float, big_n: float) -> np.ndarray:
    """:func:`abse_into` on every flow of a batch (``offsets``), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        abse_into(t[lo:hi], d[lo:hi], srtt[lo:hi], rttmin[lo:hi], flight[lo:hi], beta, big_n, out[lo:hi])
    return out


@register
class ABSE(Batched):
    """Adaptive bandwidth share estimation: adaptive sample window and adaptive filter (Wang et al. 2002 §3.2)."""

    name = "abse"
    cost = 2.0
    footprint = 48.0
    title = "ABSE (adaptive bandwidth share estimation)"
    citation = f"{refs.WANG_2002}, §3.1.2, §3.2, eqs. (1)–(6)"
    doc = refs.doc("estimators", "abse")
    PARAMS = (
        Param("beta", float, 0.6, "instability filter gain β (eq. (5))", minimum=0.0, maximum=1.0,
              source="Wang et al. 2002 eq. (5)"),
        Param("N", float, 10.0, "τ scale factor N (eq. (6))", minimum=0.0, maximum=1000.0,
              source="Wang et al. 2002 eq. (6)"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        return abse_batch(offsets, cols.t, cols.d, cols.srtt, cols.rttmin, cols.flight, self.params["beta"],
                          self.params["N"])
