"""BE — bandwidth estimation of the original TCP Westwood.

Seed 000 §3.1.1 (Westwood, MobiCom 2001), eq. (1); ESTIMATORS.md §3 "BE". Sample per ACK
``b_k = d_k/Δt_k``, filtered by the Tustin low-pass with time constant τ (§2, UCLA ns-2 ``tau_``).
Known behaviour: over-estimates under congestion and ACK compression.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from estimators.base import TAU, Estimator
from estimators.filters import tustin_step
from estimators.inputs import FlowInputs
from estimators.params import Param
from estimators.registry import register


@njit(cache=True)
def be_kernel(t: np.ndarray, d: np.ndarray, mss: int, tau: float, cap_segments: float) -> np.ndarray:
    """BE after every event; the first event opens the clock; ``cap_segments`` ≤ 0 means no cap."""
    n = len(t)
    out = np.full(n, np.nan)
    est = 0.0
    prev = 0.0
    for k in range(1, n):
        dt = t[k] - t[k - 1]
        dk = float(d[k])
        if cap_segments > 0.0 and dk > cap_segments * mss:
            dk = cap_segments * mss
        b = dk / dt
        if k == 1:
            est = b  # the first sample seeds the filter
        else:
            est = tustin_step(est, prev, dt, b, tau)
        prev = b
        out[k] = est
    return out


@register
class BE(Estimator):
    """Bandwidth estimation: d_k/Δt_k per ACK through a Tustin low-pass (seed 000 §3.1.1, eq. (1))."""

    name = "be"
    title = "BE (Westwood bandwidth estimation)"
    citation = "Seed 000 §3.1.1, eq. (1); Mascolo et al., TCP Westwood, MobiCom 2001"
    PARAMS = (
        TAU,
        Param("max_segments_per_ack", float, None, "cap on d_k in segments (UCLA ns-2 caps at 2); null = none",
              unit="segments", minimum=0.0, exclusive_minimum=True, nullable=True, source="UCLA ns-2 TCPW"),
    )

    def series(self, inputs: FlowInputs) -> np.ndarray:
        cap = self.params["max_segments_per_ack"]
        return be_kernel(inputs.t, inputs.d, inputs.mss, self.params["tau"], -1.0 if cap is None else cap)
