"""Which flows the estimators can be compared on (issue #34 item 3; docs/estimators.md "Comparable flows").

Scores and decisions are taken over the time the network limited the sender (the ``cwnd`` intervals of
``scoring.limits``): an estimate of the path's bandwidth is judged where the path set the rate, not where the
application or the receiver did. A flow is *comparable* when that time is long enough for the estimators
compared and holds enough loss events for the decision scores, and the network (not the application, its send
buffer or the receive window) limited it most of the time; else :func:`incomparable_reason` says why, and the
rankings leave it out unless asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: The network-limited time a flow needs, in multiples of the largest time constant of the estimators compared:
#: a first-order filter settles on a step (within 1 %: e^-4.6) after about 5 time constants, so each estimator
#: can have settled on the path at least once in the time scored. (Ten would leave out the testbed's 5 s bulk
#: flows, whose estimates have long settled.)
MIN_TIME_CONSTANTS = 5.0
#: Loss events the decision scores need (in the network-limited time): their ratios are medians over the loss
#: events, and the median of three or more is set by at least two decisions, not by one outlier.
MIN_LOSS_EVENTS = 3
#: The share of the flow's time limited by the application, its send buffer or the receive window from which the
#: flow says more about those than about the path ("most of the time").
MAX_OTHER_SHARE = 0.5
#: The labels of ``scoring.limits`` that are not the network's.
OTHER_LIMITS = ("app", "sndbuf", "rwnd")
#: The parameters (s) that are an estimator's time constant: a low-pass filter's, a fixed sampling window.
TIME_CONSTANT_PARAMS = ("tau", "window")


def time_constant(params: Iterable[Mapping[str, Any]]) -> float:
    """The largest time constant (s) of the estimators compared (their parameters; 0 when none has one)."""
    out = 0.0
    for p in params:
        for name in TIME_CONSTANT_PARAMS:
            v = p.get(name)
            if isinstance(v, int | float) and not isinstance(v, bool) and v > out:
                out = float(v)
    return out


def incomparable_reason(shares: Mapping[str, float], span_s: float, loss_events: int, tau_s: float,
                        decisions: bool = True) -> str | None:
    """Why a flow cannot be compared on (None: it can). ``shares``: each limit label's share of its time,
    ``span_s`` that time (s); ``loss_events``: its loss events in the network-limited time; ``tau_s``: the
    largest time constant of the estimators compared (:func:`time_constant`); ``decisions``: whether decision
    scores are compared (then the loss events count)."""
    other = {k: float(shares.get(k) or 0.0) for k in OTHER_LIMITS}
    if sum(other.values()) >= MAX_OTHER_SHARE:
        words = {"app": "the application", "sndbuf": "the send buffer", "rwnd": "the receive window"}
        most = max(other, key=lambda k: other[k])
        return (f"not limited by the network most of the time: {words[most]} {100 * other[most]:.0f} %, "
                f"the application, its send buffer and the receive window {100 * sum(other.values()):.0f} % in all "
                f"(at least {100 * MAX_OTHER_SHARE:.0f} %)")
    cwnd_s = float(shares.get("cwnd") or 0.0) * span_s
    need = MIN_TIME_CONSTANTS * tau_s
    if cwnd_s < need or cwnd_s <= 0:
        return (f"network-limited for {cwnd_s:.2f} s, under {MIN_TIME_CONSTANTS:g} × the estimators' largest time "
                f"constant ({tau_s:g} s): {need:.2f} s")
    if decisions and loss_events < MIN_LOSS_EVENTS:
        return (f"{loss_events} loss event{'s' * (loss_events != 1)} in the network-limited time, under the "
                f"{MIN_LOSS_EVENTS} the decision scores need")
    return None
