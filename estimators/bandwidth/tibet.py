"""TIBET — time-interval based bandwidth estimation (Capone & Martignon 2001 §2; docs/estimators.md §3 "TIBET").

Two low-pass filters, one of the bytes and one of the intervals: ``L̄ = a·L̄ + (1 − a)·L_k``,
``Ī = a·Ī + (1 − a)·I_k``, ``Bwe = L̄/Ī``; both start at 0 (their ratio is then an exponentially
weighted Σd/ΣΔt, unbiased from the first sample). a = 0.99 is assumed (the paper names "the pole of
the two low-pass filters" without a value).

``tibet`` runs on ACKs (L = d_k, I = Δt_k). ``tibet_tx`` runs on the sender's transmitted data
segments (payload length, inter-departure time, retransmissions included, equal send times merged) —
immune to ACK compression — and is evaluated at the ACK events (its latest value at each).

Coarse-clock RTTmin rule (off by default, Capone & Martignon 2001 §2): every ``ncong`` congestion events RTTmin is
multiplied by β while it is below the clock granularity.
"""

from __future__ import annotations

import math

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import Batched, Columns, Decision, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import search_right_into


@njit(cache=True, nogil=True)
def _tibet_step(lbar: float, ibar: float, length: float, interval: float, a: float) -> tuple[float, float]:
    """The two low-pass filters after one sample (Capone & Martignon 2001 §2): bytes L̄ and interval Ī."""
    return a * lbar + (1.0 - a) * length, a * ibar + (1.0 - a) * interval


@njit(cache=True, nogil=True)
def tibet_kernel(t: np.ndarray, length: np.ndarray, a: float) -> np.ndarray:
    """TIBET over events at times ``t`` of ``length`` bytes each (NaN at the first: it opens the clock)."""
    out = np.empty(len(t))
    tibet_into(t, length, a, out)
    return out


@njit(cache=True, nogil=True)
def tibet_into(t: np.ndarray, length: np.ndarray, a: float, out: np.ndarray) -> None:
    """:func:`tibet_kernel` written into ``out``; integer lengths are read as float64 (numpy's conversion)."""
    n = len(t)
    if n:
        out[0] = np.nan
    lbar = 0.0
    ibar = 0.0
    for k in range(1, n):
        lbar, ibar = _tibet_step(lbar, ibar, float(length[k]), t[k] - t[k - 1], a)
        out[k] = lbar / ibar


@njit(cache=True, nogil=True)
def tibet_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, a: float) -> np.ndarray:
    """TIBET on the ACKs of every flow of a batch (``offsets``), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        tibet_into(t[lo:hi], d[lo:hi], a, out[lo:hi])
    return out


@njit(cache=True, nogil=True)
def tibet_tx_at_acks(seg_t: np.ndarray, seg_len: np.ndarray, t: np.ndarray, a: float, out: np.ndarray) -> bool:
    """TIBET over the transmissions (equal send times merged, :func:`merge_equal_times`) read at every ACK
    event: ``out[j]`` is its value after the latest transmission at or before ``t[j]`` (NaN before the
    second). One merge walk over both time-ordered streams, nothing else allocated — the same arithmetic as
    :func:`tibet_kernel` on the merged arrays followed by a search per ACK. False (``out`` unfinished) when
    either stream's times go backwards: :func:`tibet_tx_into` then takes that path instead."""
    ns = len(seg_t)
    i = 0
    groups = 0
    lbar = 0.0
    ibar = 0.0
    prev = 0.0
    value = np.nan
    for j in range(len(t)):
        if j > 0 and t[j] < t[j - 1]:
            return False
        while i < ns and seg_t[i] <= t[j]:
            at = seg_t[i]
            if groups > 0 and at < prev:
                return False
            length = 0
            while i < ns and seg_t[i] == at:
                length += seg_len[i]
                i += 1
            if groups > 0:
                lbar, ibar = _tibet_step(lbar, ibar, float(length), at - prev, a)
                value = lbar / ibar
            prev = at
            groups += 1
        out[j] = value
    # the transmissions after the last ACK (a search would have read them); a loop, not all(): compiled
    for k in range(max(i, 1), ns):  # noqa: SIM110
        if seg_t[k] < seg_t[k - 1]:
            return False
    return True


@njit(cache=True, nogil=True)
def merge_equal_times(t: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One event per run of equal send times, lengths summed (§1.1 applied to transmissions)."""
    n = len(t)
    groups = 0
    for k in range(n):
        if k == 0 or t[k] != t[k - 1]:
            groups += 1
    st = np.empty(groups)
    sl = np.zeros(groups, np.int64)
    g = -1
    for k in range(n):
        if k == 0 or t[k] != t[k - 1]:
            g += 1
            st[g] = t[k]
        sl[g] += length[k]
    return st, sl


@njit(cache=True, nogil=True)
def tibet_tx_into(seg_t: np.ndarray, seg_len: np.ndarray, t: np.ndarray, a: float, out: np.ndarray) -> None:
    """TIBET on one flow's transmissions read at its ACK events, written into ``out``: the merge walk
    (:func:`tibet_tx_at_acks`), or, when times go backwards (a capture out of order), TIBET over the merged
    transmissions and a search per ACK for the latest transmission at or before it (``search.search_right_into``,
    exact while the transmissions are in order; on transmissions out of order no search has one answer)."""
    if tibet_tx_at_acks(seg_t, seg_len, t, a, out):
        return
    st, sl = merge_equal_times(seg_t, seg_len)
    tx = tibet_kernel(st, sl, a)
    idx = np.empty(len(t), np.int64)
    search_right_into(st, t, idx)
    for j in range(len(t)):
        out[j] = tx[idx[j] - 1] if idx[j] > 0 else np.nan


@njit(cache=True, nogil=True)
def tibet_tx_batch(offsets: np.ndarray, seg_offsets: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray,
                   t: np.ndarray, a: float) -> np.ndarray:
    """:func:`tibet_tx_into` on every flow of a batch (``offsets``, ``seg_offsets``), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        slo, shi = seg_offsets[f], seg_offsets[f + 1]
        tibet_tx_into(seg_t[slo:shi], seg_len[slo:shi], t[lo:hi], a, out[lo:hi])
    return out


class _Tibet(Batched):
    PARAMS = (
        Param("a", float, 0.99, "pole of the two low-pass filters (assumed: the paper gives no value)",
              minimum=0.0, maximum=1.0, exclusive_minimum=True, source="assumed (docs/estimators.md)"),
        Param("coarse_clock", bool, False, "apply the coarse-clock RTTmin rule", source="Capone & Martignon 2001 §2"),
        Param("ncong", int, 5, "congestion events between RTTmin reductions", minimum=1, maximum=1000,
              source="Capone & Martignon 2001 §2"),
        Param("coarse_beta", float, 0.5, "RTTmin reduction factor β", minimum=0.0, maximum=1.0,
              exclusive_minimum=True, source="Capone & Martignon 2001 §2"),
        Param("clock_granularity", float, 0.01, "clock granularity below which RTTmin is reduced", unit="s",
              minimum=0.0, exclusive_minimum=True, maximum=1.0, source="Capone & Martignon 2001 §2"),
    )

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        if self.params["coarse_clock"] and not math.isnan(ctx.rttmin) and \
                ctx.rttmin < self.params["clock_granularity"]:
            steps = (ctx.episode + 1) // self.params["ncong"]
            ctx = LossContext(ctx.kind, ctx.event, ctx.start_t, ctx.end_t, ctx.flight,
                              ctx.rttmin * self.params["coarse_beta"] ** steps, ctx.mss, ctx.episode,
                              ctx.last_timeout_t)
        return super().decide(inputs, estimate, ctx)


@register
class Tibet(_Tibet):
    """TIBET on ACKs: low-pass of bytes over low-pass of intervals (Capone & Martignon 2001 §2)."""

    name = "tibet"
    cost = 0.5
    title = "TIBET (ACK-based)"
    citation = f"{refs.CAPONE_2001}, §2"
    doc = refs.doc("estimators", "tibet")

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        return tibet_batch(offsets, cols.t, cols.d, self.params["a"])


@register
class TibetTx(_Tibet):
    """TIBET on the sender's transmitted segments, evaluated at the ACKs (Capone & Martignon 2001 §2, send-based)."""

    name = "tibet_tx"
    cost = 1.0
    footprint = 48.0
    title = "TIBET (send-based)"
    citation = f"{refs.CAPONE_2001}, §2 (send-based variant)"
    doc = refs.doc("estimators", "tibet_tx")

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        return tibet_tx_batch(offsets, seg_offsets, cols.seg_t, cols.seg_len, cols.t, self.params["a"])
