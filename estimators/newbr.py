"""NewBR — ERE = u·BE + (1 − u)·RE with queue-based loss discrimination (seed 003 §III).

ESTIMATORS.md §3 "NewBR":

- ``rtt_max_n = β·rtt_max_{n−1} + (1 − β)/2·(rtt_n + rtt_{n−1})`` over RTT samples (β = 19/21), seeded
  with the first sample; ``d = rtt − rtt_min``, ``d_max = rtt_max − rtt_min``,
  ``u = exp(−∂·d/d_max)`` (∂ = 10), ``u = 1`` when ``d_max ≤ 0``; rtt is the latest sample.
- BE and RE on the receiver's clock when the ACKs carry TSval (immune to ACK compression on the
  return path): TSval unwrapped and mapped to seconds by a least-squares fit of capture time on TSval;
  an ACK without TSval holds the last one, a TSval that goes backwards counts as equal, ACKs with equal
  TSval are one event. u comes from the capture-time RTT samples.
- Loss: ``q = ERE·(rtt − rtt_min)/mss``; ``q < ξ`` (ξ = 3) → random loss, ``ssthresh = ERE·rtt_avg/mss``;
  else ``ERE·rtt_min/mss``; floor 2; fast retransmit ``cwnd = ssthresh``, timeout ``cwnd = 1``.

Decision (documented): ERE at an ACK uses the receiver-axis BE/RE of the latest *completed* TSval
group (causal: a group's value exists from its last ACK on).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ackreplay.estimators.base import FAST_RETRANSMIT, PAIRING, TAU, Decision, Estimator, LossContext, _at
from ackreplay.estimators.be import be_kernel
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.rate import re_series
from ackreplay.estimators.registry import register


@njit(cache=True, nogil=True)
def rtt_state(rtt: np.ndarray, rttmin: np.ndarray, beta: float, gamma: float, full: bool = True
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per event: u, the latest RTT sample, the running mean of samples, rtt_max (the last three empty
    without ``full``: the series needs u alone)."""
    n = len(rtt)
    m = n if full else 0
    u = np.ones(n)
    latest = np.full(m, np.nan)
    avg = np.full(m, np.nan)
    rmax_out = np.full(m, np.nan)
    have = False
    rmax = 0.0
    prev = 0.0
    total = 0.0
    count = 0
    last = np.nan
    for k in range(n):
        r = rtt[k]
        if not np.isnan(r):
            if not have:
                rmax = r
                have = True
            else:
                rmax = beta * rmax + (1.0 - beta) * 0.5 * (r + prev)
            prev = r
            last = r
            total += r
            count += 1
        if have:
            if full:
                latest[k] = last
                avg[k] = total / count
                rmax_out[k] = rmax
            rmin = rttmin[k] if not np.isnan(rttmin[k]) else last
            dmax = rmax - rmin
            if dmax > 0.0:
                u[k] = math.exp(-gamma * (last - rmin) / dmax)
    return u, latest, avg, rmax_out


@njit(cache=True, nogil=True)
def tsval_clock(ts: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Per ACK event: the receiver's TSval unwrapped (ticks since the first, float64) and its group (ACKs
    with equal TSval). An ACK without TSval (−1) holds the last one (the first one before it), a step is
    unwrapped modulo 2³², and a step backwards counts as none. ``first``: the first event with a TSval.
    One pass (before: eight numpy arrays of the flow's length)."""
    n = len(ts)
    unwrapped = np.empty(n, np.float64)
    group = np.empty(n, np.int64)
    if n == 0:
        return unwrapped, group
    prev = ts[first]
    ticks = 0
    g = 0
    unwrapped[0] = 0.0
    group[0] = 0
    for k in range(1, n):
        cur = ts[k] if ts[k] >= 0 else prev
        step = (cur - prev + (1 << 31)) % (1 << 32) - (1 << 31)  # 32-bit unwrap
        if step > 0:  # going backwards counts as equal
            ticks += step
            g += 1
        unwrapped[k] = float(ticks)
        group[k] = g
        prev = cur
    return unwrapped, group


_NO_GROUPS = np.empty(0, np.int64)


@njit(cache=True, nogil=True)
def ere_series(u: np.ndarray, be: np.ndarray, re: np.ndarray, group: np.ndarray, ends: np.ndarray,
               grouped: bool) -> np.ndarray:
    """ERE = u·BE + (1 − u)·RE at every ACK event (BE alone while RE is undefined). ``grouped``: BE and RE
    are per TSval group, and an ACK takes the latest group that ended at or before it — its own if it is
    the group's last ACK, else the one before (causal; NaN before the first group ends). One pass: the
    numpy expression it replaced made ten arrays of the flow's length."""
    n = len(u)
    out = np.empty(n)
    for k in range(n):
        if grouped:
            g = group[k]
            done = g - 1 if k != ends[g] else g
            b = be[done] if done >= 0 else np.nan
            r = re[done] if done >= 0 else np.nan
        else:
            b = be[k]
            r = re[k]
        out[k] = b if np.isnan(r) else u[k] * b + (1.0 - u[k]) * r
    return out


def receiver_clock(inputs: FlowInputs) -> tuple[float, float, np.ndarray, np.ndarray] | None:
    """The receiver's clock fitted to capture time: (intercept, slope, TSval unwrapped in ticks, group id per
    event), the receiver-clock time of an event being ``intercept + slope·ticks`` s; None without usable
    TSval. The fit reads the columns in place when every event has a TSval (one difference array, not the
    five copies a masked fit makes: on a flow of millions of events each is tens of MB)."""
    ts = inputs.tsval
    has = ts >= 0
    have = int(np.count_nonzero(has))
    if have < 2:
        return None
    unwrapped, group = tsval_clock(ts, int(np.argmax(has)))
    x = unwrapped if have == len(ts) else unwrapped[has]
    y = inputs.t if have == len(ts) else inputs.t[has]
    xm, ym = x.mean(), y.mean()
    dx = x - xm
    var = float(np.dot(dx, dx))
    if var <= 0:
        return None
    slope = float(np.dot(dx, y - ym)) / var  # least squares of capture time on TSval
    intercept = ym - slope * xm
    if not slope > 0:
        return None
    return intercept, slope, unwrapped, group


@register
class NewBR(Estimator):
    """NewBR: ERE = u·BE + (1−u)·RE, u from the queueing delay; loss type from the queue length."""

    name = "newbr"
    cost = 10.0
    footprint = 80.0
    title = "NewBR"
    citation = "Seed 003 §III (Wu, Jie, Ding: TCP NewBR)"
    PARAMS = (
        TAU,
        PAIRING,
        Param("beta", float, 19 / 21, "rtt_max filter gain β", minimum=0.0, maximum=1.0, source="seed 003 §III"),
        Param("gamma", float, 10.0, "u's exponent scale ∂", minimum=0.0, maximum=1000.0, source="seed 003 §III"),
        Param("xi", float, 3.0, "queue threshold ξ (packets) separating random from congestion loss",
              minimum=0.0, maximum=10000.0, source="seed 003 §III"),
        Param("receiver_timestamps", bool, True, "compute BE and RE on the receiver's TSval clock when present",
              source="seed 003 §III"),
    )

    def series(self, inputs: FlowInputs) -> np.ndarray:
        tau, pairing = self.params["tau"], self.params["pairing"]
        u = rtt_state(inputs.rtt_any, inputs.rttmin, self.params["beta"], self.params["gamma"], False)[0]
        clock = receiver_clock(inputs) if self.params["receiver_timestamps"] else None
        if clock is None:
            be = be_kernel(inputs.t, inputs.d, inputs.mss, tau, -1.0, pairing)
            re = re_series(inputs.t, inputs.d, inputs.srtt, None, tau, pairing)
            return ere_series(u, be, re, _NO_GROUPS, _NO_GROUPS, False)
        intercept, slope, ticks, group = clock
        starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        ends = np.append(starts[1:] - 1, len(group) - 1)
        g_t = intercept + slope * ticks[starts]  # the receiver-clock axis at each group's first ACK only
        del ticks
        g_d = np.add.reduceat(inputs.d, starts)
        g_srtt = inputs.srtt[ends]
        del starts
        for a in (g_t, g_d, g_srtt):  # read-only like FlowInputs' columns: one compiled signature of the
            a.flags.writeable = False  # filters for both axes (a second one costs a cached-kernel load)
        g_be = be_kernel(g_t, g_d, inputs.mss, tau, -1.0, pairing)
        g_re = re_series(g_t, g_d, g_srtt, None, tau, pairing)
        del g_t, g_d, g_srtt
        return ere_series(u, g_be, g_re, group, ends, True)

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        e = _at(estimate, ctx.event)
        if e is None:
            return Decision(None, None, None)
        rtt, rtt_avg = inputs.rtt_history_at(ctx.event)  # the latest sample and the running mean
        rmin = ctx.rttmin
        if math.isnan(rtt) or math.isnan(rmin):
            return Decision(e, None, None)
        q = e * (rtt - rmin) / ctx.mss
        random_loss = q < self.params["xi"]
        ss = max(e * (rtt_avg if random_loss else rmin) / ctx.mss, 2.0)
        cwnd = ss if ctx.kind == FAST_RETRANSMIT else 1.0
        return Decision(e, ss, cwnd, "random loss" if random_loss else "congestion loss")
