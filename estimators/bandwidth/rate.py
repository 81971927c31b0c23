"""RE — rate estimation (Westwood with RE samples).

Wang et al. 2002 §3.1.1 and Fig. 1(b); Wu, Jie & Ding 2014 §II; docs/estimators.md §3 "RE". Sample per ACK
``r_k = Σ_{j: t_j > t_k − T} d_j / T`` with ``T = srtt_k`` (or a fixed T); while less than T has
elapsed since the first ACK row the window is (t_first, t_k] and the divisor the elapsed time. Filtered
by the Tustin low-pass. Known behaviour: accurate under congestion; under-estimates when random
losses leave the link under-used.

Decision (documented): before the first smoothed RTT exists (T = "srtt"), RE has no sample.
"""

from __future__ import annotations

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import PAIRING, TAU, Batched, Columns
from ackreplay.estimators.filters import tustin_step
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True)
def re_samples_into(t: np.ndarray, d: np.ndarray, window: np.ndarray, fixed: float, out: np.ndarray) -> None:
    """Raw RE samples r_k written into ``out`` (NaN where T is unknown). ``fixed`` > 0 replaces the per-event
    ``window``."""
    n = len(t)
    if n:
        out[0] = np.nan
    lo = 1
    total = 0  # Σ d over events lo..k (integers: exact however long the flow)
    for k in range(1, n):
        total += d[k]
        T = fixed if fixed > 0.0 else window[k]
        if not (T > 0.0):
            out[k] = np.nan
            continue
        start = t[k] - T
        while lo <= k and t[lo] <= start:
            total -= d[lo]
            lo += 1
        while lo > 1 and t[lo - 1] > start:
            lo -= 1
            total += d[lo]
        elapsed = t[k] - t[0]
        out[k] = total / (T if elapsed >= T else elapsed)


@njit(cache=True, nogil=True)
def filtered_into(t: np.ndarray, samples: np.ndarray, tau: float, pairing: bool, out: np.ndarray) -> None:
    """A sample series with gaps (NaN) Tustin-filtered into ``out`` (the first sample seeds the filter), which
    may be ``samples`` itself (each sample is read before its event's value is written): a series filtered in
    place allocates nothing."""
    have = False
    est = 0.0
    prev = 0.0
    last_t = 0.0
    for k in range(len(t)):
        s = samples[k]
        if np.isnan(s):
            out[k] = est if have else np.nan
            continue
        if not have:
            est = s
            have = True
        else:
            est = tustin_step(est, prev, t[k] - last_t, s, tau, pairing)
        prev = s
        last_t = t[k]
        out[k] = est


def re_series(t: np.ndarray, d: np.ndarray, srtt: np.ndarray, window_s: float | None, tau: float,
              pairing: bool = True) -> np.ndarray:
    """RE after every event (T = ``srtt`` per event, or a fixed ``window_s``)."""
    return _re_kernel(t, d, srtt, -1.0 if window_s is None else float(window_s), tau, pairing)


@njit(cache=True, nogil=True)
def _re_kernel(t: np.ndarray, d: np.ndarray, srtt: np.ndarray, fixed: float, tau: float, pairing: bool
               ) -> np.ndarray:
    """Samples and filter in one compiled call (one cached kernel to load, not one per step)."""
    out = np.empty(len(t))
    re_into(t, d, srtt, fixed, tau, pairing, out)
    return out


@njit(cache=True, nogil=True)
def re_into(t: np.ndarray, d: np.ndarray, srtt: np.ndarray, fixed: float, tau: float, pairing: bool,
            out: np.ndarray) -> None:
    """RE of one flow written into ``out``: the samples, then the filter over them in place."""
    re_samples_into(t, d, srtt, fixed, out)
    filtered_into(t, out, tau, pairing, out)


@njit(cache=True, nogil=True)
def re_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, srtt: np.ndarray, fixed: float, tau: float,
             pairing: bool) -> np.ndarray:
    """:func:`re_into` on every flow of a batch (``offsets``), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        re_into(t[lo:hi], d[lo:hi], srtt[lo:hi], fixed, tau, pairing, out[lo:hi])
    return out


@register
class RE(Batched):
    """Rate estimation: bytes acknowledged over the last T (= srtt) through a Tustin low-pass."""

    name = "re"
    footprint = 40.0
    title = "RE (Westwood rate estimation)"
    citation = f"{refs.WANG_2002}, §3.1.1, Fig. 1(b); {refs.WU_2014}, §II"
    doc = refs.doc("estimators", "re")
    PARAMS = (
        TAU,
        PAIRING,
        Param("window", float, None, "fixed sample window T in seconds; null = the flow's smoothed RTT",
              unit="s", minimum=0.0, exclusive_minimum=True, nullable=True, source="Wu, Jie & Ding 2014 §II"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray
            ) -> np.ndarray:
        window = self.params["window"]
        return re_batch(offsets, cols.t, cols.d, cols.srtt, -1.0 if window is None else float(window),
                        self.params["tau"], self.params["pairing"])
