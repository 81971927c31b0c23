"""BE — bandwidth estimation of the original TCP Westwood.

Wang et al. 2002 §3.1.1, eq. (1) (the original Westwood: Mascolo et al., MobiCom 2001); docs/estimators.md §3
"BE". Sample per ACK ``b_k = d_k/Δt_k``, filtered by the Tustin low-pass with time constant τ (§2, UCLA ns-2 ``tau_``).
Known behaviour: over-estimates under congestion and ACK compression.
"""

from __future__ import annotations

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.bandwidth.rate import filtered_into
from ackreplay.estimators.base import PAIRING, TAU, Batched, Columns
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True, error_model="numpy")
def be_samples_into(t: np.ndarray, d: np.ndarray, mss: int, cap_segments: float, out: np.ndarray) -> None:
    """b_k = d_k/Δt_k at every event after the first written into ``out`` (NaN at the first: it only opens the
    clock); ``cap_segments`` > 0 caps d_k at that many segments. One pass, numpy's arithmetic
    (``error_model="numpy"``: an interval of 0 gives inf or NaN, as numpy's division)."""
    n = len(t)
    if n:
        out[0] = np.nan
    cap = cap_segments * mss
    for k in range(1, n):
        dk = float(d[k])
        if cap_segments > 0.0:
            dk = min(dk, cap)
        out[k] = dk / (t[k] - t[k - 1])


@njit(cache=True, nogil=True)
def be_into(t: np.ndarray, d: np.ndarray, mss: int, tau: float, cap_segments: float, pairing: bool,
            out: np.ndarray) -> None:
    """BE after every event written into ``out``: the samples, then the filter over them in place (the first
    sample seeds the filter); ``cap_segments`` ≤ 0 means no cap."""
    be_samples_into(t, d, mss, cap_segments, out)
    filtered_into(t, out, tau, pairing, out)


@njit(cache=True, nogil=True)
def be_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, mss: np.ndarray, tau: float, cap_segments: float,
             pairing: bool) -> np.ndarray:
    """:func:`be_into` on every flow of a batch (``offsets``, one ``mss`` per flow), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        be_into(t[lo:hi], d[lo:hi], mss[f], tau, cap_segments, pairing, out[lo:hi])
    return out


@register
class BE(Batched):
    """Bandwidth estimation: d_k/Δt_k per ACK through a Tustin low-pass (Wang et al. 2002 §3.1.1, eq. (1))."""

    name = "be"
    depends_on_sender_ack_timing = True  # d_k/Δt_k: the ACKs' spacing as they reach the sender (§7)
    title = "BE (Westwood bandwidth estimation)"
    citation = f"{refs.WANG_2002}, §3.1.1, eq. (1); {refs.MASCOLO_2001}"
    doc = refs.doc("estimators", "be")
    PARAMS = (
        TAU,
        PAIRING,
        Param("max_segments_per_ack", float, None, "cap on d_k in segments (UCLA ns-2 caps at 2); null = none",
              unit="segments", minimum=0.0, exclusive_minimum=True, nullable=True, source="UCLA ns-2 TCPW"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        cap = self.params["max_segments_per_ack"]
        return be_batch(offsets, cols.t, cols.d, mss, self.params["tau"], -1.0 if cap is None else cap,
                        self.params["pairing"])
