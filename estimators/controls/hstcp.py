"""HighSpeed TCP — a decrease that shrinks as the window grows (docs/controls.md §8 ``hstcp``).

RFC 3649 §5: for ``w ≤ Low_Window`` HighSpeed TCP backs off as standard TCP, ``b(w) = 0.5``; above it

    b(w) = (High_Decrease − 0.5)·(log(w) − log(Low_Window))/(log(High_Window) − log(Low_Window)) + 0.5

with Low_Window = 38, High_Window = 83000 and High_Decrease = 0.1 (RFC 3649 §5, "the default values"),
and on a loss ``w ← (1 − b(w))·w``. Here, real-valued (§1.3): ``ssthresh = max(w·(1 − b(w)), 2)``
segments with ``w`` the real sender's flight at the loss; the formula is evaluated, not Linux's table
(``tcp_highspeed.c`` ``hstcp_aimd_vals``, 73 rows in 1/256 steps of b derived from it; ns-3
``TcpHighSpeed::TableLookupB`` the same table on whole segments of the bytes in flight). No state crosses
loss events.
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

STANDARD_DECREASE = 0.5  # b(w) for w ≤ Low_Window: standard TCP (RFC 3649 §5)


@njit(cache=True, nogil=True)
def highspeed_decrease(w: float, low_window: float, high_window: float, high_decrease: float) -> float:
    """RFC 3649 §5 b(w): 0.5 up to Low_Window, then linear in log(w) down to High_Decrease at High_Window
    (and, as the formula continues, below it further up)."""
    if w <= low_window:
        return STANDARD_DECREASE
    return ((high_decrease - STANDARD_DECREASE) * (math.log(w) - math.log(low_window))
            / (math.log(high_window) - math.log(low_window)) + STANDARD_DECREASE)


@njit(cache=True, nogil=True)
def highspeed_ssthresh(w: np.ndarray, low_window: float, high_window: float, high_decrease: float,
                       floor: float) -> tuple[np.ndarray, np.ndarray]:
    """ssthresh = max(w·(1 − b(w)), floor) at every loss event, and the b(w) used (NaN where w is unknown)."""
    ss = np.empty(len(w))
    b = np.empty(len(w))
    for i in range(len(w)):
        if np.isnan(w[i]):
            ss[i] = np.nan
            b[i] = np.nan
            continue
        b[i] = highspeed_decrease(w[i], low_window, high_window, high_decrease)
        ss[i] = max(w[i] * (1.0 - b[i]), floor)
    return ss, b


@register
class HighSpeed(LossBased):
    """HighSpeed TCP: ssthresh = w·(1 − b(w)), b(w) from 0.5 at 38 segments to 0.1 at 83000 (RFC 3649)."""

    name = "hstcp"
    title = "HighSpeed TCP (decisions only)"
    citation = ("S. Floyd, \"HighSpeed TCP for Large Congestion Windows\", RFC 3649, 2003, §5; Linux "
                f"net/ipv4/tcp_highspeed.c; {refs.BUFFER_STUDY}, §II")
    doc = refs.doc("controls", "hstcp")
    PARAMS = (
        Param("low_window", float, 38.0, "Low_Window: up to this window b(w) = 0.5 (standard TCP)",
              unit="segments", minimum=1.0, maximum=1e9, source="RFC 3649 §5"),
        Param("high_window", float, 83000.0, "High_Window: the window at which b(w) = High_Decrease",
              unit="segments", minimum=1.0, maximum=1e12, source="RFC 3649 §5"),
        Param("high_decrease", float, 0.1, "High_Decrease: b(High_Window)", minimum=0.0, maximum=0.5,
              exclusive_minimum=True, source="RFC 3649 §5"),
    )
    ORDERED = (("low_window", "high_window", True),)

    def ssthresh(self, inputs: FlowInputs, contexts: Sequence[LossContext], w: np.ndarray,
                 timeout: np.ndarray) -> tuple[np.ndarray, list[str]]:
        p = self.params
        ss, b = highspeed_ssthresh(w, p["low_window"], p["high_window"], p["high_decrease"], MIN_SSTHRESH)
        return ss, ["" if math.isnan(x) else f"b(w) = {x:.3f}" for x in b.tolist()]
