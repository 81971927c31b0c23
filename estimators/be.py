"""BE — bandwidth estimation of the original TCP Westwood.

Seed 000 §3.1.1 (Westwood, MobiCom 2001), eq. (1); ESTIMATORS.md §3 "BE". Sample per ACK
``b_k = d_k/Δt_k``, filtered by the Tustin low-pass with time constant τ (§2, UCLA ns-2 ``tau_``).
Known behaviour: over-estimates under congestion and ACK compression.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.estimators.base import PAIRING, TAU, Estimator
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.rate import filtered
from ackreplay.estimators.registry import register


@njit(cache=True, nogil=True, error_model="numpy")
def be_samples(t: np.ndarray, d: np.ndarray, mss: int, cap_segments: float) -> np.ndarray:
    """b_k = d_k/Δt_k at every event after the first (NaN at the first: it only opens the clock). One pass,
    numpy's arithmetic (``error_model="numpy"``: an interval of 0 gives inf or NaN, as numpy's division)."""
    n = len(t)
    out = np.empty(n)
    if n:
        out[0] = np.nan
    cap = cap_segments * mss
    for k in range(1, n):
        dk = float(d[k])
        if cap_segments > 0.0:
            dk = min(dk, cap)
        out[k] = dk / (t[k] - t[k - 1])
    return out


@njit(cache=True, nogil=True)
def be_kernel(t: np.ndarray, d: np.ndarray, mss: int, tau: float, cap_segments: float,
              pairing: bool = True) -> np.ndarray:
    """BE after every event; ``cap_segments`` ≤ 0 means no cap. The first sample seeds the filter."""
    return filtered(t, be_samples(t, d, mss, cap_segments), tau, pairing)


@register
class BE(Estimator):
    """Bandwidth estimation: d_k/Δt_k per ACK through a Tustin low-pass (seed 000 §3.1.1, eq. (1))."""

    name = "be"
    title = "BE (Westwood bandwidth estimation)"
    citation = "Seed 000 §3.1.1, eq. (1); Mascolo et al., TCP Westwood, MobiCom 2001"
    PARAMS = (
        TAU,
        PAIRING,
        Param("max_segments_per_ack", float, None, "cap on d_k in segments (UCLA ns-2 caps at 2); null = none",
              unit="segments", minimum=0.0, exclusive_minimum=True, nullable=True, source="UCLA ns-2 TCPW"),
    )

    def series(self, inputs: FlowInputs) -> np.ndarray:
        cap = self.params["max_segments_per_ack"]
        return be_kernel(inputs.t, inputs.d, inputs.mss, self.params["tau"], -1.0 if cap is None else cap,
                         self.params["pairing"])
