"""The loss-based congestion controls of the buffer study as decision-only entries (docs/controls.md §8).

STCP, HSTCP, HTCP, BIC and CUBIC grow their windows between losses by rules that depend on their own
past decisions (closed loop), which a fixed trace cannot replay. What replay can score is open-loop:
**the ssthresh, and the cwnd after recovery, each would set at every loss event of the trace**, from
``w`` = the real sender's flight at the loss (§1.2) in segments, real-valued, and the state each carries
from one loss event to the next. They have no estimate series: their estimate columns are none (NaN,
null in every output), never 0.

At every loss event: ``ssthresh = max(w·(1 − b), 2)`` segments with each control's decrease ``b``;
fast retransmit ``cwnd = ssthresh`` once recovery ends (Linux ``tcp_end_cwnd_reduction``, ns-3
``ExitRecovery``), timeout ``cwnd = 1``. A loss event with no ACK before it (no flight known) gets no
decision (null).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, Decision, Estimator, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import EstimatorError

if TYPE_CHECKING:
    from ackreplay.estimators.flow_batch import FlowBatch

#: The floor of every ssthresh, segments (§1.3; Linux's ``max(…, 2U)``).
MIN_SSTHRESH = 2.0
AFTER_RECOVERY = "cwnd = ssthresh when recovery ends"


class LossBased(Estimator):
    """A decision-only congestion control of §8: no estimate series, a stateful decision at every loss.

    Subclasses set ``name``, ``title``, ``citation``, ``PARAMS`` and :meth:`ssthresh`, which decides every
    loss event of a flow in one pass (state carried in event order)."""

    has_series = False
    cost = 0.05
    footprint = 8.0  # the all-NaN series replay scores and keeps like any other
    #: Pairs of parameters (low, high, strict) whose values must be in order (low < high when strict, else ≤).
    ORDERED: tuple[tuple[str, str, bool], ...] = ()

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        for low, high, strict in self.ORDERED:
            a, b = self.params[low], self.params[high]
            if a > b or (strict and a == b):
                raise EstimatorError("parameter_out_of_range", f"{self.name}.{high} = {b!r} must be "
                                     f"{'above' if strict else 'at least'} {low} = {a!r}")

    def series(self, inputs: FlowInputs) -> np.ndarray:
        """No estimate of its own: NaN at every event (estimate columns show none, never 0)."""
        return np.full(len(inputs), np.nan)

    def series_batch(self, batch: FlowBatch) -> np.ndarray:
        return np.full(batch.events, np.nan)

    def ssthresh(self, inputs: FlowInputs, contexts: Sequence[LossContext], w: np.ndarray,
                 timeout: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """ssthresh (segments) at every loss event and a note on the state behind it. ``w``: the flight at
        each event in segments (NaN where unknown); ``timeout``: whether each event is an RTO."""
        raise NotImplementedError

    def decide_all(self, inputs: FlowInputs, estimate: np.ndarray, contexts: Sequence[LossContext]
                   ) -> list[Decision]:
        if not contexts:
            return []
        w = np.array([c.flight / c.mss if c.event >= 0 else math.nan for c in contexts], np.float64)
        timeout = np.array([c.kind == TIMEOUT for c in contexts], np.bool_)
        ss, notes = self.ssthresh(inputs, contexts, w, timeout)
        out = []
        for ctx, s, note in zip(contexts, ss.tolist(), notes, strict=True):
            if math.isnan(s):
                out.append(Decision(None, None, None, note))
            elif ctx.kind == FAST_RETRANSMIT:
                out.append(Decision(None, s, s, f"{note}; {AFTER_RECOVERY}" if note else AFTER_RECOVERY,
                                    ctx.end_t))
            else:
                out.append(Decision(None, s, 1.0, note))
        return out

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        """One loss event decided alone: as if it were the flow's first (no state carried from earlier ones)."""
        return self.decide_all(inputs, estimate, [ctx])[0]
