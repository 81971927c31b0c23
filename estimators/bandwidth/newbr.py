"""NewBR — ERE = u·BE + (1 − u)·RE with queue-based loss discrimination (Wu, Jie & Ding 2014 §III).

docs/estimators.md §3 "NewBR":

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

from ackreplay.estimators import references as refs
from ackreplay.estimators.bandwidth.be import be_into
from ackreplay.estimators.bandwidth.rate import re_into
from ackreplay.estimators.base import FAST_RETRANSMIT, PAIRING, TAU, Batched, Columns, Decision, LossContext, value_at
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit


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
    One pass (as a numpy chain it makes eight arrays of the flow's length)."""
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


@njit(cache=True, nogil=True)
def ere_into(u: np.ndarray, be: np.ndarray, re: np.ndarray, group: np.ndarray, ends: np.ndarray, grouped: bool,
             out: np.ndarray) -> None:
    """ERE = u·BE + (1 − u)·RE at every ACK event written into ``out`` (BE alone while RE is undefined).
    ``grouped``: BE and RE are per TSval group, and an ACK takes the latest group that ended at or before it —
    its own if it is the group's last ACK, else the one before (causal; NaN before the first group ends). One
    pass (as a numpy expression it makes ten arrays of the flow's length)."""
    for k in range(len(u)):
        if grouped:
            g = group[k]
            done = g - 1 if k != ends[g] else g
            b = be[done] if done >= 0 else np.nan
            r = re[done] if done >= 0 else np.nan
        else:
            b = be[k]
            r = re[k]
        out[k] = b if np.isnan(r) else u[k] * b + (1.0 - u[k]) * r


@njit(cache=True, nogil=True)
def _term(x: np.ndarray, y: np.ndarray, xm: float, ym: float, kind: int, i: int) -> float:
    if kind == 0:
        return x[i]
    dx = x[i] - xm
    return dx * dx if kind == 1 else dx * (y[i] - ym)


@njit(cache=True, nogil=True)
def _block(x: np.ndarray, y: np.ndarray, xm: float, ym: float, kind: int, lo: int, n: int) -> float:
    """A leaf of :func:`_pairwise` (n ≤ 128): below 8 terms summed in a row, else in eight interleaved
    partial sums, added pairwise, then the rest in a row."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += _term(x, y, xm, ym, kind, i)
        return res
    r0, r1, r2, r3 = (_term(x, y, xm, ym, kind, lo), _term(x, y, xm, ym, kind, lo + 1),
                      _term(x, y, xm, ym, kind, lo + 2), _term(x, y, xm, ym, kind, lo + 3))
    r4, r5, r6, r7 = (_term(x, y, xm, ym, kind, lo + 4), _term(x, y, xm, ym, kind, lo + 5),
                      _term(x, y, xm, ym, kind, lo + 6), _term(x, y, xm, ym, kind, lo + 7))
    i = 8
    whole = n - n % 8
    while i < whole:
        j = lo + i
        r0 += _term(x, y, xm, ym, kind, j)
        r1 += _term(x, y, xm, ym, kind, j + 1)
        r2 += _term(x, y, xm, ym, kind, j + 2)
        r3 += _term(x, y, xm, ym, kind, j + 3)
        r4 += _term(x, y, xm, ym, kind, j + 4)
        r5 += _term(x, y, xm, ym, kind, j + 5)
        r6 += _term(x, y, xm, ym, kind, j + 6)
        r7 += _term(x, y, xm, ym, kind, j + 7)
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += _term(x, y, xm, ym, kind, lo + i)
        i += 1
    return res


@njit(cache=True, nogil=True)
def _pairwise(x: np.ndarray, y: np.ndarray, xm: float, ym: float, kind: int) -> float:
    """Σ of x_i (``kind`` 0), (x_i − xm)² (1) or (x_i − xm)(y_i − ym) (2) in numpy's pairwise order
    (``np.add.reduce`` of a contiguous float64 array as numpy 2 runs it): up to 128 terms a leaf
    (:func:`_block`); above, the sum of the two halves, the first a multiple of 8 long. Kind 0 divided by the
    count is numpy 2's ``np.mean`` to the bit (numpy 1.26 reduces blocks of 8192 terms one after the other:
    above that its sums may differ in the last bits; this one is the same whatever numpy is installed). The
    tree is walked with a stack, not by recursion (numba's cache cannot reload a recursive function)."""
    todo_lo = np.empty(128, np.int64)  # nodes to visit; n < 0 marks "add the two sums on top"
    todo_n = np.empty(128, np.int64)
    sums = np.empty(64)
    top = 0
    have = 0
    todo_lo[0], todo_n[0] = 0, len(x)
    while top >= 0:
        lo, n = todo_lo[top], todo_n[top]
        top -= 1
        if n < 0:
            have -= 1
            sums[have - 1] = sums[have - 1] + sums[have]
        elif n <= 128:
            sums[have] = _block(x, y, xm, ym, kind, lo, n)
            have += 1
        else:
            half = n // 2
            half -= half % 8
            todo_lo[top + 1], todo_n[top + 1] = lo, -1  # after both halves: their sum
            todo_lo[top + 2], todo_n[top + 2] = lo + half, n - half  # (visited second)
            todo_lo[top + 3], todo_n[top + 3] = lo, half  # (visited first)
            top += 3
    return sums[0]


@njit(cache=True, nogil=True)
def clock_fit(x: np.ndarray, y: np.ndarray) -> tuple[bool, float, float]:
    """Least squares of ``y`` (capture time) on ``x`` (ticks): whether the slope is positive, the intercept
    and the slope. The means and the sums of products are summed in one pairwise order (:func:`_pairwise`),
    the same on every machine — where ``np.dot`` calls a BLAS dot product, whose order differs by CPU: the
    last bits of the slope may differ from such a fit's."""
    m = len(x)
    xm = _pairwise(x, x, 0.0, 0.0, 0) / m
    ym = _pairwise(y, y, 0.0, 0.0, 0) / m
    var = _pairwise(x, x, xm, xm, 1)
    if var <= 0.0:
        return False, 0.0, 0.0
    slope = _pairwise(x, y, xm, ym, 2) / var
    return slope > 0.0, ym - slope * xm, slope


@njit(cache=True, nogil=True)
def receiver_clock(t: np.ndarray, tsval: np.ndarray) -> tuple[bool, float, float, np.ndarray, np.ndarray]:
    """The receiver's clock fitted to capture time: whether there is one (at least two TSvals, a positive
    slope), the intercept and the slope, the TSval unwrapped in ticks and the group id per event; the
    receiver-clock time of an event is ``intercept + slope·ticks`` s. The fit reads the columns in place when
    every event has a TSval (a masked fit gathers the events that have one)."""
    n = len(tsval)
    have = 0
    first = -1
    for k in range(n):
        if tsval[k] >= 0:
            have += 1
            if first < 0:
                first = k
    if have < 2:
        return False, 0.0, 0.0, np.empty(0), np.empty(0, np.int64)
    unwrapped, group = tsval_clock(tsval, first)
    if have == n:
        ok, intercept, slope = clock_fit(unwrapped, t)
    else:
        x = np.empty(have)
        y = np.empty(have)
        j = 0
        for k in range(n):
            if tsval[k] >= 0:
                x[j] = unwrapped[k]
                y[j] = t[k]
                j += 1
        ok, intercept, slope = clock_fit(x, y)
    return ok, intercept, slope, unwrapped, group


@njit(cache=True, nogil=True)
def newbr_into(t: np.ndarray, d: np.ndarray, srtt: np.ndarray, rtt_any: np.ndarray, rttmin: np.ndarray,
               tsval: np.ndarray, mss: int, tau: float, pairing: bool, beta: float, gamma: float,
               receiver_timestamps: bool, out: np.ndarray) -> None:
    """NewBR of one flow written into ``out``: u from the RTT samples; BE and RE on the receiver's clock, one
    value per TSval group, when it has one (and ``receiver_timestamps``), else on capture time; ERE."""
    n = len(t)
    u = rtt_state(rtt_any, rttmin, beta, gamma, False)[0]
    if receiver_timestamps:
        ok, intercept, slope, ticks, group = receiver_clock(t, tsval)
    else:
        ok, intercept, slope, ticks, group = False, 0.0, 0.0, np.empty(0), np.empty(0, np.int64)
    if not ok:
        be = np.empty(n)
        re = np.empty(n)
        be_into(t, d, mss, tau, -1.0, pairing, be)
        re_into(t, d, srtt, -1.0, tau, pairing, re)
        ere_into(u, be, re, group, group, False, out)
        return
    ng = group[n - 1] + 1  # groups are numbered 0, 1, … in event order
    ends = np.empty(ng, np.int64)
    g_t = np.empty(ng)  # the receiver-clock axis at each group's first ACK
    g_d = np.zeros(ng, np.int64)
    for k in range(n):
        g = group[k]
        if k == 0 or g != group[k - 1]:
            g_t[g] = intercept + slope * ticks[k]
        ends[g] = k
        g_d[g] += d[k]
    g_srtt = np.empty(ng)
    for g in range(ng):
        g_srtt[g] = srtt[ends[g]]
    g_be = np.empty(ng)
    g_re = np.empty(ng)
    be_into(g_t, g_d, mss, tau, -1.0, pairing, g_be)
    re_into(g_t, g_d, g_srtt, -1.0, tau, pairing, g_re)
    ere_into(u, g_be, g_re, group, ends, True, out)


@njit(cache=True, nogil=True)
def newbr_batch(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, srtt: np.ndarray, rtt_any: np.ndarray,
                rttmin: np.ndarray, tsval: np.ndarray, mss: np.ndarray, tau: float, pairing: bool, beta: float,
                gamma: float, receiver_timestamps: bool) -> np.ndarray:
    """:func:`newbr_into` on every flow of a batch (``offsets``, one ``mss`` per flow), in one compiled call."""
    out = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        newbr_into(t[lo:hi], d[lo:hi], srtt[lo:hi], rtt_any[lo:hi], rttmin[lo:hi], tsval[lo:hi], mss[f], tau,
                   pairing, beta, gamma, receiver_timestamps, out[lo:hi])
    return out


@register
class NewBR(Batched):
    """NewBR: ERE = u·BE + (1−u)·RE, u from the queueing delay; loss type from the queue length."""

    name = "newbr"
    cost = 10.0
    footprint = 80.0
    title = "NewBR"
    citation = f"{refs.WU_2014}, §III"
    doc = refs.doc("estimators", "newbr")
    PARAMS = (
        TAU,
        PAIRING,
        Param("beta", float, 19 / 21, "rtt_max filter gain β", minimum=0.0, maximum=1.0,
              source="Wu, Jie & Ding 2014 §III"),
        Param("gamma", float, 10.0, "u's exponent scale ∂", minimum=0.0, maximum=1000.0,
              source="Wu, Jie & Ding 2014 §III"),
        Param("xi", float, 3.0, "queue threshold ξ (packets) separating random from congestion loss",
              minimum=0.0, maximum=10000.0, source="Wu, Jie & Ding 2014 §III"),
        Param("receiver_timestamps", bool, True, "compute BE and RE on the receiver's TSval clock when present",
              source="Wu, Jie & Ding 2014 §III"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        p = self.params
        return newbr_batch(offsets, cols.t, cols.d, cols.srtt, cols.rtt_any, cols.rttmin, cols.tsval, mss, p["tau"],
                           p["pairing"], p["beta"], p["gamma"], p["receiver_timestamps"])

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        e = value_at(estimate, ctx.event)
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
