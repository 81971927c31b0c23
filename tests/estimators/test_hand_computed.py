"""Each estimator on a stream of a few ACKs, the expected numbers worked out by hand from the formulas
of ESTIMATORS.md (the arithmetic is written out: a reader can check every step)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.bandwidth.crb import choose_into
from ackreplay.estimators.bandwidth.newbr import rtt_state
from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, LossContext
from ackreplay.estimators.inputs import FlowInputs


def ctx(kind=FAST_RETRANSMIT, event=2, flight=8000, rttmin=0.5, mss=1000, episode=0, last_timeout=None):
    return LossContext(kind, event, 1.0, 2.0, flight, rttmin, mss, episode, last_timeout)


def test_be_tustin_steps_and_idle_rule():
    # events at 0, 0.1, 0.2, 0.4, 1.6 s; d = [first: not counted], 1000, 2000, 1000, 1200 bytes; τ = 1
    inp = FlowInputs.from_arrays([0, 0.1, 0.2, 0.4, 1.6], [777, 1000, 2000, 1000, 1200], mss=1000)
    s = E.create("be").series(inp)
    assert math.isnan(s[0])  # the first event only opens the clock
    b1 = 1000 / 0.1  # 10000 B/s seeds the filter
    assert s[1] == pytest.approx(b1)
    a = (2 - 0.1) / (2 + 0.1)
    e2 = a * b1 + (1 - a) * (20000 + 10000) / 2  # b2 = 2000/0.1
    assert s[2] == pytest.approx(e2)  # 10476.19…
    a = (2 - 0.2) / (2 + 0.2)
    e3 = a * e2 + (1 - a) * (5000 + 20000) / 2  # b3 = 1000/0.2
    assert s[3] == pytest.approx(e3)  # 10844.16…
    # Δt = 1.2 > τ/2: two virtual zero samples (α = 3/5), then b4 = 1200/1.2 over the 0.2 s left
    v1 = 0.6 * e3 + 0.4 * (0 + 5000) / 2
    v2 = 0.6 * v1 + 0.4 * (0 + 0) / 2
    e4 = a * v2 + (1 - a) * (1000 + 0) / 2
    assert s[4] == pytest.approx(e4)  # 3775.92…
    # decision at event 2: ssthresh = E·RTTmin/mss = 10476.19·0.5/1000 = 5.238 segments
    be = E.create("be")
    d = be.decide(inp, s, ctx())
    assert d.ssthresh_segments == pytest.approx(e2 * 0.5 / 1000)
    assert d.cwnd_segments == pytest.approx(e2 * 0.5 / 1000)  # min(flight 8 segments, 5.238)
    assert be.decide(inp, s, ctx(kind=TIMEOUT)).cwnd_segments == 1.0
    assert be.decide(inp, s, ctx(rttmin=0.05)).ssthresh_segments == 2.0  # the floor of 2 segments
    assert be.decide(inp, s, ctx(event=0)).ssthresh_segments is None  # no estimate yet: null, not 0


def test_be_cap_on_segments_per_ack():
    inp = FlowInputs.from_arrays([0, 0.1], [0, 5000], mss=1000)
    assert E.create("be", max_segments_per_ack=2).series(inp)[1] == pytest.approx(2000 / 0.1)


def test_re_window_of_one_srtt():
    # T = srtt = 0.25 s throughout; τ = 1
    inp = FlowInputs.from_arrays([0, 0.1, 0.2, 0.3, 0.5], [500, 1000, 1000, 2000, 1000], mss=1000,
                                 srtt=[0.25] * 5)
    s = E.create("re").series(inp)
    assert s[1] == pytest.approx(1000 / 0.1)  # elapsed 0.1 < T: window (0, 0.1], divisor 0.1
    assert s[2] == pytest.approx(10000)  # 2000 bytes over 0.2 s, filtered against 10000: still 10000
    a = 1.9 / 2.1
    e3 = a * 10000 + (1 - a) * (16000 + 10000) / 2  # r3 = (1000+1000+2000)/0.25 = 16000
    assert s[3] == pytest.approx(e3)
    a = 1.8 / 2.2
    e4 = a * e3 + (1 - a) * (12000 + 16000) / 2  # r4: (0.25, 0.5] holds 2000+1000 → 12000
    assert s[4] == pytest.approx(e4)
    fixed = E.create("re", window=0.15).series(inp)
    a = 1.9 / 2.1
    f2 = a * 10000 + (1 - a) * (2000 / 0.15 + 10000) / 2  # (0.05, 0.2] holds 1000+1000
    f3 = a * f2 + (1 - a) * (3000 / 0.15 + 2000 / 0.15) / 2  # (0.15, 0.3] holds 1000+2000
    assert fixed[1] == pytest.approx(10000) and fixed[2] == pytest.approx(f2) and fixed[3] == pytest.approx(f3)


def test_re_has_no_sample_before_srtt():
    inp = FlowInputs.from_arrays([0, 0.1, 0.2], [0, 1000, 1000], mss=1000, srtt=[np.nan, np.nan, 0.5])
    s = E.create("re").series(inp)
    assert math.isnan(s[1]) and s[2] == pytest.approx(2000 / 0.2)


def test_westwood_plus_tumbling_windows():
    t = [0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12]
    inp = FlowInputs.from_arrays(t, [9, 1000, 1000, 1000, 1000, 1000, 1000], mss=1000, rtt=[np.nan] + [0.03] * 6)
    s = E.create("westwood_plus").series(inp)
    # windows close when t − start > max(rtt 0.03, 0.05): at 0.06 (bk = 2000) and 0.12 (bk = 3000)
    first = 2000 / 0.06
    assert all(math.isnan(x) for x in s[:3])
    assert s[3] == pytest.approx(first) and s[5] == pytest.approx(first)
    ns = 7 / 8 * first + 1 / 8 * (3000 / 0.06)
    assert s[6] == pytest.approx(7 / 8 * first + 1 / 8 * ns)
    d = E.create("westwood_plus").decide(inp, s, ctx(event=6, rttmin=0.5))
    assert d.ssthresh_segments == pytest.approx(max(s[6] * 0.03 / 1000, 2))  # Linux's own RTTmin: 0.03
    half = E.create("westwood_plus", floor_half=True).decide(inp, s, ctx(event=6, flight=20000))
    assert half.ssthresh_segments == pytest.approx(10.0)  # never below flight/2 = 10 segments
    assert d.cwnd_applied_t == 2.0  # cwnd = ssthresh when recovery ends


def test_tibet_two_filters_from_zero():
    inp = FlowInputs.from_arrays([0, 0.1, 0.3], [0, 1000, 3000], mss=1000)
    s = E.create("tibet", a=0.5).series(inp)
    assert s[1] == pytest.approx((0.5 * 1000) / (0.5 * 0.1))  # 10000
    assert s[2] == pytest.approx((0.5 * 500 + 0.5 * 3000) / (0.5 * 0.05 + 0.5 * 0.2))  # 1750/0.125 = 14000


def test_tibet_tx_on_transmissions_evaluated_at_acks():
    inp = FlowInputs.from_arrays([0.005, 0.02, 0.06], [0, 1000, 1000], mss=1000)
    inp.seg_t = np.array([0.0, 0.01, 0.01, 0.05])  # two segments sent at once: one event of 2000 bytes
    inp.seg_len = np.array([1000, 1000, 1000, 2000])
    s = E.create("tibet_tx", a=0.5).series(inp)
    assert math.isnan(s[0])  # only the first transmission so far
    assert s[1] == pytest.approx((0.5 * 2000) / (0.5 * 0.01))  # 200000
    assert s[2] == pytest.approx((0.25 * 2000 + 0.5 * 2000) / (0.25 * 0.01 + 0.5 * 0.04))  # 66666.7


def test_tibet_coarse_clock_rule():
    inp = FlowInputs.from_arrays([0, 0.1], [0, 1000], mss=100)
    s = np.array([np.nan, 100000.0])
    t = E.create("tibet", coarse_clock=True, ncong=5, coarse_beta=0.5, clock_granularity=0.01)
    # 5th congestion event (episode index 4): RTTmin 0.004 < 0.01 → × 0.5
    assert t.decide(inp, s, ctx(event=1, rttmin=0.004, episode=4, flight=10**6, mss=100)).ssthresh_segments \
        == pytest.approx(100000 * 0.002 / 100)
    assert t.decide(inp, s, ctx(event=1, rttmin=0.004, episode=3, flight=10**6, mss=100)).ssthresh_segments \
        == pytest.approx(100000 * 0.004 / 100)


def test_crb_switches_on_congestion_indicator():
    be = np.array([np.nan, 100.0, 100.0, 100.0])
    re = np.array([np.nan, np.nan, 50.0, 50.0])
    flight = np.array([0.0, 100.0, 100.0, 50.0])
    rttmin = np.array([np.nan, 1.0, 1.0, 1.0])
    # event 1: RE undefined → BE; event 2: ρ = 100/(50·1) = 2 > 1.4 → RE; event 3: ρ = 1 → BE
    out = choose_into(be.copy(), re, flight, rttmin, 1.4)
    assert np.isnan(out[0]) and list(out[1:]) == [100.0, 50.0, 100.0]


def test_abse_adaptive_window_and_filter():
    inp = FlowInputs.from_arrays([0, 0.1, 0.2], [0, 1000, 1000], mss=1000, srtt=[0.2] * 3, rttmin=[0.1] * 3,
                                 flight=[10000] * 3)
    s = E.create("abse").series(inp)
    # k=1: no estimate yet → T = RTT = 0.2; s1 = 1000/0.2 = 5000 seeds; U = 0
    assert s[1] == pytest.approx(5000)
    # k=2: ŝ·RTTmin = 500 < cwnd 10000 → T = 0.2·(10000 − 500)/10000 = 0.19, in [Δt 0.1, RTT 0.2]
    s2 = 2000 / 0.19  # both ACKs lie in (0.01, 0.2]
    u = 0.4 * abs(s2 - 5000)  # β = 0.6, previous U = 0
    tau = 0.2 + 10 * 0.2 * u / u  # U_max = U
    a = (2 * tau - 0.1) / (2 * tau + 0.1)
    assert s[2] == pytest.approx(a * 5000 + (1 - a) * s2)


def test_newbr_mix_and_loss_discrimination():
    u, latest, avg, rmax = rtt_state(np.array([0.1, 0.2]), np.array([0.1, 0.1]), 19 / 21, 10.0)
    rtt_max = 19 / 21 * 0.1 + (2 / 21) / 2 * (0.2 + 0.1)
    assert rmax[1] == pytest.approx(rtt_max)
    assert u[1] == pytest.approx(math.exp(-10 * (0.2 - 0.1) / (rtt_max - 0.1)))
    assert u[0] == 1.0 and avg[1] == pytest.approx(0.15) and latest[1] == 0.2
    inp = FlowInputs.from_arrays([0, 0.1, 0.2], [0, 1000, 1000], mss=1000, rtt=[np.nan, 0.1, 0.2],
                                 rttmin=[np.nan, 0.1, 0.1])
    nb = E.create("newbr", receiver_timestamps=False)
    est = np.array([np.nan, 100000.0, 100000.0])
    # q = ERE·(rtt − rtt_min)/mss = 100000·0.1/1000 = 10 ≥ ξ = 3 → congestion: ssthresh = ERE·rtt_min/mss = 10
    d = nb.decide(inp, est, ctx(event=2, rttmin=0.1))
    assert d.ssthresh_segments == pytest.approx(10.0) and d.cwnd_segments == pytest.approx(10.0)
    # ERE = 20000: q = 2 < 3 → random loss: ssthresh = ERE·rtt_avg/mss = 20000·0.15/1000 = 3
    d = nb.decide(inp, est / 5, ctx(event=2, rttmin=0.1, kind=TIMEOUT))
    assert d.ssthresh_segments == pytest.approx(3.0) and d.cwnd_segments == 1.0


def test_newbr_series_is_u_weighted_mix():
    inp = FlowInputs.from_arrays([0, 0.1, 0.2, 0.3], [0, 1000, 2000, 1000], mss=1000, rtt=[np.nan, 0.1, 0.15, 0.1],
                                 rttmin=[np.nan, 0.1, 0.1, 0.1], srtt=[0.2] * 4)
    nb = E.create("newbr", receiver_timestamps=False).series(inp)
    be = E.create("be").series(inp)
    re = E.create("re").series(inp)
    u, _, _, _ = rtt_state(inp.rtt_any, inp.rttmin, 19 / 21, 10.0)
    assert nb[1:] == pytest.approx(u[1:] * be[1:] + (1 - u[1:]) * re[1:])


def test_newreno_halves_the_flight():
    inp = FlowInputs.from_arrays([0, 0.1], [0, 1000], mss=1000)
    nr = E.create("newreno")
    assert nr.decide(inp, np.array([np.nan, 1.0]), ctx(event=1, flight=10000)).ssthresh_segments == 5.0
    assert nr.decide(inp, np.array([np.nan, 1.0]), ctx(event=1, flight=1000)).ssthresh_segments == 2.0
    assert nr.decide(inp, np.array([np.nan, 1.0]), ctx(event=1, kind=TIMEOUT)).cwnd_segments == 1.0


def test_newbr_receiver_clock_undoes_ack_compression():
    """ACKs the receiver sent 10 ms apart (its TSval says so) arrive in bursts of four at the sender: on
    the receiver's clock NewBR's BE sees the even spacing, capture-time BE sees the bursts."""
    n = 200
    tsval = 1000 + 10 * np.arange(n)  # receiver clock, ms
    t = np.repeat(np.arange(n // 4) * 0.04, 4) + np.tile([0, 1e-5, 2e-5, 3e-5], n // 4)
    inp = FlowInputs.from_arrays(t, [1000] * n, mss=1000, tsval=tsval, srtt=[0.05] * n, rtt=[0.05] * n,
                                 rttmin=[0.05] * n)
    rx = E.create("newbr").series(inp)  # u = 1 (no queueing): ERE = BE on the receiver axis
    cap = E.create("newbr", receiver_timestamps=False).series(inp)
    assert rx[-1] == pytest.approx(1000 / 0.01, rel=0.02)  # 100 kB/s: 1000 bytes every 10 ms
    assert cap[-1] > 2 * rx[-1]  # the bursts inflate capture-time BE


def test_crb_forgets_its_rate_estimate_once_the_flow_is_decided():
    """CRB keeps RE for its loss decisions; replay calls ``forget`` after them, so that on a long flow the
    array does not outlive CRB's job."""
    from ackreplay.estimators.bandwidth.crb import CRB

    inp = FlowInputs.from_arrays(np.arange(50) * 0.01, np.full(50, 1448), mss=1448, srtt=np.full(50, 0.05),
                                 rttmin=np.full(50, 0.04), flight=np.full(50, 14480))
    crb = CRB()
    crb.series(inp)
    assert any(k.startswith("crb_re:") for k in inp.derived)
    crb.forget(inp)
    assert not any(k.startswith("crb_re:") for k in inp.derived)
