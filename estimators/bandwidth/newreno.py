"""NewReno — the baseline reaction (RFC 6582; docs/estimators.md §3 "NewReno").

No estimate of its own: its "rate" ``flight/srtt`` is shown for reference. Loss:
``ssthresh = max(flight/2, 2·mss)``; fast retransmit ``cwnd = ssthresh``, timeout ``cwnd = 1``.
"""

from __future__ import annotations

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import FAST_RETRANSMIT, Batched, Columns, Decision, LossContext, value_at
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True, nogil=True, error_model="numpy")
def newreno_batch(offsets: np.ndarray, flight: np.ndarray, srtt: np.ndarray) -> np.ndarray:
    """flight/srtt at every event of every flow of a batch (``offsets``), NaN at each flow's first event; numpy's
    arithmetic (``error_model="numpy"``: flight as float64 over srtt, 0 or NaN giving inf or NaN)."""
    out = np.empty(len(flight))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        for k in range(lo, hi):
            out[k] = np.nan if k == lo else float(flight[k]) / srtt[k]
    return out


def newreno_ssthresh_segments(flight: int, mss: int) -> float:
    return max(flight / 2, 2 * mss) / mss


@register
class NewReno(Batched):
    """NewReno: halve the flight at a loss (RFC 6582); its rate flight/srtt is for reference only."""

    name = "newreno"
    cost = 0.1
    footprint = 24.0
    title = "NewReno (baseline)"
    citation = ("T. Henderson, S. Floyd, A. Gurtov, Y. Nishida, \"The NewReno Modification to TCP's Fast Recovery "
                "Algorithm\", RFC 6582, 2012, §3.2; M. Allman, V. Paxson, E. Blanton, \"TCP Congestion Control\", "
                "RFC 5681, 2009, eq. (4)")
    doc = refs.doc("estimators", "newreno")
    has_series = False

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        return newreno_batch(offsets, cols.flight, cols.srtt)  # like every series: NaN at the first event

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        ss = newreno_ssthresh_segments(ctx.flight, ctx.mss)
        return Decision(value_at(estimate, ctx.event), ss, ss if ctx.kind == FAST_RETRANSMIT else 1.0)
