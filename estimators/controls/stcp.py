"""Scalable TCP — a fixed multiplicative decrease at every loss (docs/controls.md §8 ``stcp``).

Kelly, "Scalable TCP: improving performance in highspeed wide area networks", CCR 33(2), 2003 §2:
on a loss ``cwnd ← cwnd − ⌈b·cwnd⌉`` with ``b = 0.125`` (and ``cwnd ← cwnd + a`` per ACK, a = 0.01, which
replay does not need: it is closed loop). The buffer study §II uses the same a and b. Linux
``net/ipv4/tcp_scalable.c``::

    static u32 tcp_scalable_ssthresh(struct sock *sk)
        return max(tcp_snd_cwnd(tp) - (tcp_snd_cwnd(tp) >> TCP_SCALABLE_MD_SCALE), 2U);  /* MD_SCALE 3 */

that is ``w − w/8``. Here, real-valued (§1.3): ``ssthresh = max(w·(1 − b), 2)`` segments, ``w`` the
real sender's flight at the loss. No state crosses loss events. ns-3 ``TcpScalable`` multiplies whole
segments of the bytes in flight (``MdFactor`` 0.125).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import LossContext
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH, LossBased
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True)
def scalable_ssthresh(w: np.ndarray, b: float, floor: float) -> np.ndarray:
    """Kelly 2003 §2: ``max(w·(1 − b), floor)`` at every loss event (NaN where w is unknown)."""
    out = np.empty(len(w))
    for i in range(len(w)):
        out[i] = max(w[i] * (1.0 - b), floor) if not np.isnan(w[i]) else np.nan
    return out


@register
class Scalable(LossBased):
    """Scalable TCP: ssthresh = w·(1 − b), b = 1/8, at every loss (Kelly 2003; Linux tcp_scalable.c)."""

    name = "stcp"
    title = "Scalable TCP (decisions only)"
    citation = ("T. Kelly, \"Scalable TCP: Improving Performance in Highspeed Wide Area Networks\", ACM SIGCOMM "
                "Computer Communication Review 33(2), 2003, §2; Linux net/ipv4/tcp_scalable.c; "
                f"{refs.BUFFER_STUDY}, §II")
    doc = refs.doc("controls", "stcp")
    PARAMS = (
        Param("b", float, 0.125, "multiplicative decrease at a loss: ssthresh = w·(1 − b)", minimum=0.0,
              maximum=1.0, exclusive_minimum=True,
              source="Kelly 2003 b = 0.125; Linux TCP_SCALABLE_MD_SCALE 3 (w − w>>3); ns-3 MdFactor; "
                     "the buffer study §II"),
    )

    def ssthresh(self, inputs: FlowInputs, contexts: Sequence[LossContext], w: np.ndarray,
                 timeout: np.ndarray) -> tuple[np.ndarray, list[str]]:
        return scalable_ssthresh(w, self.params["b"], MIN_SSTHRESH), [""] * len(w)
