"""NewReno — the baseline reaction (RFC 6582; ESTIMATORS.md §3 "NewReno").

No estimate of its own: its "rate" ``flight/srtt`` is shown for reference. Loss:
``ssthresh = max(flight/2, 2·mss)``; fast retransmit ``cwnd = ssthresh``, timeout ``cwnd = 1``.
"""

from __future__ import annotations

import numpy as np

from ackreplay.estimators.base import FAST_RETRANSMIT, Decision, Estimator, LossContext, _at
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.registry import register


def newreno_ssthresh_segments(flight: int, mss: int) -> float:
    return max(flight / 2, 2 * mss) / mss


@register
class NewReno(Estimator):
    """NewReno: halve the flight at a loss (RFC 6582); its rate flight/srtt is for reference only."""

    name = "newreno"
    cost = 0.1
    footprint = 24.0
    title = "NewReno (baseline)"
    citation = "RFC 6582; RFC 5681"
    has_series = False

    def series(self, inputs: FlowInputs) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = inputs.flight / inputs.srtt
        rate[:1] = np.nan  # like every series: the first event only opens the clock
        return rate

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        ss = newreno_ssthresh_segments(ctx.flight, ctx.mss)
        return Decision(_at(estimate, ctx.event), ss, ss if ctx.kind == FAST_RETRANSMIT else 1.0)
