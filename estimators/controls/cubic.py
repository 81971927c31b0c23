"""CUBIC — multiplicative decrease β = 0.7 and W_max with fast convergence (docs/controls.md §8 ``cubic``).

RFC 9438 §4.6 (multiplicative decrease) and §4.7 (fast convergence): at a congestion event

    ssthresh = cwnd·β_cubic                      (β_cubic = 0.7)
    W_max = cwnd·(1 + β_cubic)/2    if cwnd < W_max (fast convergence), else W_max = cwnd

Linux ``net/ipv4/tcp_cubic.c`` ``cubictcp_recalc_ssthresh`` is BIC's with ``beta = 717`` (/1024 =
0.7002) and no low window; on TCP_CA_Loss (a timeout) ``bictcp_reset`` clears W_max. ns-3 ``TcpCubic``
(Beta 0.7, FastConvergence true) does the same on whole segments of cwnd (``CubicReset`` on CA_LOSS).
The buffer study runs CUBIC with a decrement of 0.2, β = 0.8 (the named alternative ``buffer_study``).

Here, real-valued (§1.3), ``w`` the real sender's flight at the loss: ``ssthresh = max(w·β, 2)``
segments. W_max does not change the ssthresh; it is carried through the flow's loss events in one pass
(:func:`estimators.controls.bic.last_max_cwnd`: the code CUBIC inherited from BIC, as this class inherits ``Bic``)
and reported in each decision's note: it is the plateau of ``W(t) = C·(t − K)³ + W_max`` that the closed
loop would have regrown to.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.controls.bic import BICTCP_BETA_SCALE, FAST_CONVERGENCE, Bic
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True)
def cubic_ssthresh(w: np.ndarray, beta: float, floor: float) -> np.ndarray:
    """RFC 9438 §4.6: ``max(w·β_cubic, floor)`` at every loss event (NaN where w is unknown)."""
    out = np.empty(len(w))
    for i in range(len(w)):
        out[i] = max(w[i] * beta, floor) if not np.isnan(w[i]) else np.nan
    return out


@register
class Cubic(Bic):
    """CUBIC: ssthresh = 0.7·w at every loss; W_max with fast convergence (RFC 9438; Linux tcp_cubic.c)."""

    name = "cubic"
    title = "CUBIC (decisions only)"
    citation = ("L. Xu, S. Ha, I. Rhee, V. Goel, L. Eggert, \"CUBIC for Fast and Long-Distance Networks\", RFC 9438, "
                f"2023, §4.6–4.7; Linux net/ipv4/tcp_cubic.c; ns-3 TcpCubic; {refs.BUFFER_STUDY}, §II")
    doc = refs.doc("controls", "cubic")
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("beta", float, 0.7, "β_cubic: window kept at a loss, ssthresh = w·β", minimum=0.0, maximum=1.0,
              exclusive_minimum=True, alternatives=(("linux", 717 / BICTCP_BETA_SCALE), ("buffer_study", 0.8)),
              source="RFC 9438 §4.6 β_cubic = 0.7; ns-3 TcpCubic Beta 0.7; Linux beta = 717/1024; "
                     "the buffer study: decrement 0.2, β = 0.8"),
        FAST_CONVERGENCE,
    )

    def decrease(self, w: np.ndarray) -> np.ndarray:
        """RFC 9438 §4.6 (no low window: CUBIC's TCP-friendly region handles small windows while growing)."""
        return cubic_ssthresh(w, self.params["beta"], MIN_SSTHRESH)
