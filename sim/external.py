"""Decisions taken outside the compiled loop: a flow whose control is a registered bandwidth estimator (or any
estimator the compiled controls do not cover, plugins included) grows as NewReno does, and at each loss event the
loop pauses; here the estimator runs over the ACKs its sender received so far (the loop's log, ``sim/acklog.py``)
as the replay runs it over a capture's, and decides as the replay has it decide at a loss (``decide_all``, the
context of that event); its ssthresh goes back into the state and the loop resumes. The estimate at an event
depends only on earlier events, so the decision is the replay's on the same ACK stream."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, Estimator, LossContext
from ackreplay.estimators.controls.loss_based import MIN_SSTHRESH
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.sim import layout as L
from ackreplay.sim.sender import loss_window
from ackreplay.sim.state import SimState


@dataclass(frozen=True)
class ExternalDecision:
    """One loss event of an external flow: its kind (``fast_retransmit`` | ``timeout``), time (s since the
    flow's start), the ACK event it was decided at (index into the flow's log; −1: none yet), the bytes in flight
    the decision was given (the window the stack multiplies at a loss, ``sim.sender.loss_window``: Linux's cwnd,
    ns-3's bytes in flight), the estimate (bytes/s; None: none) and the ssthresh set (segments; NewReno's
    flight/2 when the estimator gave none, as the compiled NewReno and Westwood+)."""

    kind: str
    t: float
    event: int
    flight_bytes: int
    estimate: float | None
    ssthresh_segments: float


def ack_inputs(state: SimState, f: int, start_s: float, upto: int | None = None) -> FlowInputs:
    """Flow ``f``'s logged ACKs (the first ``upto``) and sent segments as the replay's inputs: one event per
    ACK, times since the flow's start (ACKs at one instant merged into one event, as the replay merges them)."""
    n = int(state.fi[f, L.LOG_N]) if upto is None else upto
    log = state.alog[f, :n]
    t = log[:, L.LOG_T] - start_s
    first = np.flatnonzero(np.r_[True, np.diff(t) > 0]) if n else np.zeros(0, np.int64)
    last = np.r_[first[1:] - 1, n - 1] if n else first

    def summed(col: int) -> np.ndarray:
        return np.add.reduceat(log[:, col], first).astype(np.int64) if n else np.zeros(0, np.int64)

    sack = log[last, L.LOG_SACK].astype(np.int64)
    mss = int(state.g[L.MSS])
    sent = state.slog[f, :int(state.fi[f, L.SEND_N])]
    inputs = FlowInputs.from_arrays(
        t[last], summed(L.LOG_D), mss=mss, acked=summed(L.LOG_ACKED), rtt=log[last, L.LOG_RTT],
        srtt=log[last, L.LOG_SRTT], rttmin=log[last, L.LOG_RTTMIN], flight=log[last, L.LOG_FLIGHT],
        ack=log[last, L.LOG_ACK].astype(np.int64), sacked=np.where(sack >= 0, mss, 0),
        sack_lo=sack, sack_hi=np.where(sack >= 0, sack + mss, -1),
        segments=(sent[:, 0] - start_s, np.full(len(sent), mss, np.int64), sent[:, 1].astype(np.int64)))
    inputs.dup[:] = log[last, L.LOG_DUP] > 0
    return inputs


class ExternalControl:
    """One external flow's estimator and the decisions it has taken."""

    def __init__(self, estimator: Estimator, f: int, start_s: float) -> None:
        self.estimator = estimator
        self.f = f
        self.start_s = start_s
        self.contexts: list[LossContext] = []
        self.decisions: list[ExternalDecision] = []

    def decide(self, state: SimState, timeout: bool) -> None:
        """The decision at the loss event the loop paused at, written into ``fs[f, EXT_SS]``."""
        f = self.f
        mss = int(state.g[L.MSS])
        now = float(state.fs[f, L.EXT_NOW]) - self.start_s
        inputs = ack_inputs(state, f, self.start_s)
        event = len(inputs) - 1
        flight = int(loss_window(state, f)) * mss
        rttmin = float(inputs.rttmin[event]) if event >= 0 else math.nan
        last_timeout = next((c.start_t for c in reversed(self.contexts) if c.kind == TIMEOUT), None)
        ctx = LossContext(TIMEOUT if timeout else FAST_RETRANSMIT, event, now, None, flight, rttmin, mss,
                          len(self.contexts), last_timeout)
        self.contexts.append(ctx)
        estimate = self.estimator.series(inputs)
        decision = self.estimator.decide_all(inputs, estimate, self.contexts)[-1]
        self.estimator.forget(inputs)
        ss = decision.ssthresh_segments
        if ss is None or not math.isfinite(ss):
            ss = max(flight / mss / 2.0, MIN_SSTHRESH)  # no estimate yet: NewReno's (as the compiled Westwood+)
        state.fs[f, L.EXT_SS] = ss
        self.decisions.append(ExternalDecision(ctx.kind, now, event, flight, decision.estimate, float(ss)))
