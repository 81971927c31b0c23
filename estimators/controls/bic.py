"""BIC TCP — binary increase, a fixed decrease above a low window (docs/controls.md §8 ``bic``).

Xu, Harfoush, Rhee, "Binary increase congestion control (BIC) for fast long-distance networks",
INFOCOM 2004; as deployed, Linux ``net/ipv4/tcp_bic.c``::

    static u32 bictcp_recalc_ssthresh(struct sock *sk)
        ca->epoch_start = 0;    /* end of epoch */
        /* Wmax and fast convergence */
        if (tcp_snd_cwnd(tp) < ca->last_max_cwnd && fast_convergence)
            ca->last_max_cwnd = (tcp_snd_cwnd(tp) * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
        else
            ca->last_max_cwnd = tcp_snd_cwnd(tp);
        if (tcp_snd_cwnd(tp) <= low_window)
            return max(tcp_snd_cwnd(tp) >> 1U, 2U);
        else
            return max((tcp_snd_cwnd(tp) * beta) / BICTCP_BETA_SCALE, 2U);

with ``beta = 819`` (/1024 = 0.7998), ``low_window = 14``, ``fast_convergence = 1``; and on entering
TCP_CA_Loss (a timeout) ``bictcp_reset`` clears ``last_max_cwnd``. The buffer study gives BIC's "β = 0.2": the
decrement, so a window ×0.8 (the named alternative ``buffer_study``).

Here, real-valued (§1.3), ``w`` the real sender's flight at the loss: ``ssthresh = max(w/2, 2)`` for
``w ≤ low_window``, else ``max(w·β, 2)``. W_max, the window BIC searches back towards, does not change
the ssthresh; it is carried through the flow's loss events in one pass and reported in each decision's
note (it sets the next epoch's target: the window the closed loop would have regrown to). ns-3
``TcpBic`` multiplies whole segments of cwnd and its fast convergence sets ``W_max = β·w``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import LossContext
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH, LossBased
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit

BICTCP_BETA_SCALE = 1024


@njit(cache=True, nogil=True)
def last_max_cwnd(w: np.ndarray, timeout: np.ndarray, beta: float, fast_convergence: bool) -> np.ndarray:
    """W_max after every loss event (``bictcp_recalc_ssthresh``, shared by ``tcp_cubic.c``): ``w``, or with
    fast convergence ``w·(1 + β)/2`` when ``w`` is below the previous W_max (the flow is releasing bandwidth
    to a newcomer); a timeout then resets it to 0 (``bictcp_reset`` on TCP_CA_Loss). NaN where w is unknown
    (the state carries over such an event unchanged)."""
    out = np.empty(len(w))
    wmax = 0.0
    for i in range(len(w)):
        if np.isnan(w[i]):
            out[i] = np.nan
            continue
        if fast_convergence and w[i] < wmax:
            wmax = w[i] * (1.0 + beta) / 2.0
        else:
            wmax = w[i]
        out[i] = wmax
        if timeout[i]:
            wmax = 0.0
    return out


@njit(cache=True, nogil=True)
def bic_ssthresh(w: np.ndarray, beta: float, low_window: float, floor: float) -> np.ndarray:
    """``max(w/2, floor)`` for w ≤ low_window, else ``max(w·β, floor)`` at every loss event."""
    out = np.empty(len(w))
    for i in range(len(w)):
        if np.isnan(w[i]):
            out[i] = np.nan
        elif w[i] <= low_window:
            out[i] = max(w[i] / 2.0, floor)
        else:
            out[i] = max(w[i] * beta, floor)
    return out


#: Both tcp_bic.c and tcp_cubic.c (and RFC 9438 §4.7) have it, on by default.
FAST_CONVERGENCE = Param("fast_convergence", bool, True, "W_max = w·(1 + β)/2 when w is below the previous W_max",
                         source="Linux tcp_bic.c/tcp_cubic.c fast_convergence; RFC 9438 §4.7; ns-3 FastConvergence")


@register
class Bic(LossBased):
    """BIC: ssthresh = w·819/1024 above 14 segments, w/2 below; W_max with fast convergence (tcp_bic.c)."""

    name = "bic"
    title = "BIC TCP (decisions only)"
    citation = ("L. Xu, K. Harfoush, I. Rhee, \"Binary Increase Congestion Control (BIC) for Fast Long-Distance "
                f"Networks\", Proc. IEEE INFOCOM 2004; Linux net/ipv4/tcp_bic.c; {refs.BUFFER_STUDY}, §II")
    doc = refs.doc("controls", "bic")
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("beta", float, 819 / BICTCP_BETA_SCALE, "window kept at a loss above low_window: ssthresh = w·β",
              minimum=0.0, maximum=1.0, exclusive_minimum=True, alternatives=(("buffer_study", 0.8),),
              source="Linux tcp_bic.c beta = 819 (/1024); the buffer study: decrement 0.2, ×0.8"),
        Param("low_window", float, 14.0, "at or below this window BIC halves it, as standard TCP",
              unit="segments", minimum=0.0, maximum=1e9, source="Linux tcp_bic.c low_window"),
        FAST_CONVERGENCE,
    )

    def decrease(self, w: np.ndarray) -> np.ndarray:
        """ssthresh (segments) at every loss event from the flight ``w`` alone."""
        return bic_ssthresh(w, self.params["beta"], self.params["low_window"], MIN_SSTHRESH)

    def ssthresh(self, inputs: FlowInputs, contexts: Sequence[LossContext], w: np.ndarray,
                 timeout: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """The decrease, and W_max carried through the loss events (``bictcp_recalc_ssthresh``) in each note."""
        wmax = last_max_cwnd(w, timeout, self.params["beta"], self.params["fast_convergence"])
        notes = ["" if np.isnan(m) else f"W_max = {m:.1f} segments" + ("; reset by the timeout" if to else "")
                 for m, to in zip(wmax.tolist(), timeout.tolist(), strict=True)]
        return self.decrease(w), notes
