"""One-pass kernels against the numpy expressions they replaced, bit for bit: the achieved rate (§4) and
TIBET on transmissions (§3)."""

import numpy as np
import pytest

from ackreplay.estimators.inputs import FlowInputs
from tests.estimators.per_flow_scores import achieved_rate


def numpy_achieved(t: np.ndarray, acked: np.ndarray, window: float) -> np.ndarray:
    n = len(t)
    out = np.full(n, np.nan)
    if n < 2:
        return out
    cum = np.concatenate(([0], np.cumsum(acked[1:])))
    lo = np.maximum(np.searchsorted(t, t - window, side="right"), 1)
    total = cum - cum[lo - 1]
    span = np.minimum(window, t - t[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        out[1:] = total[1:] / span[1:]
    return out


@pytest.mark.parametrize("seed", range(30))
def test_the_sliding_window_equals_prefix_sums_and_a_search(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 2, 3, 50, 5000]))
    gaps = rng.exponential(rng.choice([1e-4, 0.01, 0.5]), n)
    gaps[rng.random(n) < 0.05] = 1e-12  # near-equal times
    t = np.cumsum(gaps) + rng.choice([0.0, 1e3])
    acked = rng.choice([0, 1448, 2896, 65535], n).astype(np.int64)
    window = float(rng.choice([1.0, 0.05, 3.0]))
    got, want = achieved_rate(t, acked, window), numpy_achieved(t, acked, window)
    assert got.tobytes() == want.tobytes()  # same bits, NaNs included


@pytest.mark.parametrize("seed", range(30))
def test_tibet_tx_by_one_merge_walk_equals_merged_transmissions_and_a_search(seed):
    """TIBET on transmissions read at the ACKs: the merge walk against the arrays it replaced, bit for bit —
    equal send times, ACKs before the first transmission and after the last, and times going backwards
    (which take the other path: merged transmissions and a search per ACK, compiled too)."""
    from ackreplay.estimators.bandwidth.tibet import TibetTx, tibet_kernel
    from ackreplay.estimators.inputs import FlowInputs
    from ackreplay.kernels import search_right_into

    rng = np.random.default_rng(100 + seed)
    ns, n = int(rng.choice([0, 1, 2, 40, 3000])), int(rng.choice([1, 2, 30, 2000]))
    seg_t = np.sort(rng.uniform(0, 2, ns))
    seg_t[rng.random(ns) < 0.2] = seg_t[0] if ns else 0.0
    seg_t = np.sort(seg_t)
    if seed % 7 == 3 and ns > 5:
        seg_t[ns // 2] = 0.0  # a capture out of order
    seg_len = rng.choice([1448, 500, 0], ns).astype(np.int64)
    t = rng.uniform(-0.1, 2.2, n)
    if ns:  # ACKs at the very instant of a transmission
        hit = rng.random(n) < 0.3
        t[hit] = rng.choice(seg_t, int(hit.sum()))
    t = np.unique(t)
    n = len(t)
    inp = FlowInputs.from_arrays(t, np.zeros(n, np.int64), mss=1448)
    inp.seg_t, inp.seg_len = seg_t, seg_len
    new = np.concatenate(([True], seg_t[1:] != seg_t[:-1])) if ns else np.zeros(0, bool)
    starts = np.flatnonzero(new)  # one transmission per distinct send time, lengths summed
    st, sl = seg_t[starts], (np.add.reduceat(seg_len, starts) if ns else seg_len)
    tx = tibet_kernel(st, sl.astype(np.float64), 0.99)
    if np.all(st[1:] >= st[:-1]):
        idx = np.searchsorted(st, t, side="right") - 1
    else:  # out of order no binary search has one answer: the compiled path's (search.search_right_into)
        idx = np.empty(n, np.int64)
        search_right_into(st, t, idx)
        idx -= 1
    want = np.full(n, np.nan)
    want[idx >= 0] = tx[idx[idx >= 0]]
    assert TibetTx().series(inp).tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(30))
def test_the_receiver_clock_in_one_pass_equals_the_numpy_chain(seed):
    """NewBR's TSval clock: missing TSvals held (the first one before it), the 32-bit wrap, steps backwards."""
    from ackreplay.estimators.bandwidth.newbr import tsval_clock

    rng = np.random.default_rng(200 + seed)
    n = int(rng.choice([1, 2, 7, 500, 20_000]))
    ts = (int(rng.integers(0, 1 << 32)) + np.cumsum(rng.choice([0, 0, 1, 3, 1000], n))) % (1 << 32)
    ts[rng.random(n) < 0.05] = np.maximum(ts[rng.random(n) < 0.05].min(initial=0) - 5, 0)  # backwards
    ts = ts.astype(np.int64)
    ts[rng.random(n) < 0.1] = -1
    has = ts >= 0
    if not has.any():
        return
    first = int(np.flatnonzero(has)[0])
    filled = ts[np.maximum.accumulate(np.where(has, np.arange(n), first))]
    step = np.maximum((np.diff(filled) + (1 << 31)) % (1 << 32) - (1 << 31), 0)
    want_unwrapped = np.concatenate(([0], np.cumsum(step))).astype(np.float64)
    want_group = np.concatenate(([0], np.cumsum(step > 0)))
    unwrapped, group = tsval_clock(ts, first)
    assert unwrapped.tobytes() == want_unwrapped.tobytes() and np.array_equal(group, want_group)


@pytest.mark.parametrize("seed", range(30))
def test_newbr_mix_in_one_pass_equals_the_numpy_expression(seed):
    """ERE = u·BE + (1 − u)·RE, BE alone where RE is undefined; per TSval group with the causal rule."""
    from ackreplay.estimators.bandwidth.newbr import ere_into

    rng = np.random.default_rng(300 + seed)
    n = int(rng.choice([1, 2, 9, 700]))
    u = rng.uniform(0, 1, n)
    group = np.concatenate(([0], np.cumsum(rng.random(n - 1) < 0.6))).astype(np.int64)
    ng = int(group[-1]) + 1
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    ends = np.append(starts[1:] - 1, n - 1)
    g_be, g_re = rng.uniform(1e5, 1e7, ng), rng.uniform(1e5, 1e7, ng)
    g_re[rng.random(ng) < 0.2] = np.nan
    done = group - (np.arange(n) != ends[group])
    be, re = np.full(n, np.nan), np.full(n, np.nan)
    ok = done >= 0
    be[ok], re[ok] = g_be[done[ok]], g_re[done[ok]]
    want = np.where(np.isnan(re), be, u * be + (1.0 - u) * re)
    got = np.empty(n)
    ere_into(u, g_be, g_re, group, ends, True, got)
    assert got.tobytes() == want.tobytes()
    flat_be, flat_re = rng.uniform(1e5, 1e7, n), np.where(rng.random(n) < 0.2, np.nan, rng.uniform(1e5, 1e7, n))
    want = np.where(np.isnan(flat_re), flat_be, u * flat_be + (1.0 - u) * flat_re)
    empty = np.empty(0, np.int64)
    ere_into(u, flat_be, flat_re, empty, empty, False, got)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_be_samples_compiled_equal_the_numpy_expression(seed):
    """BE's raw samples d_k/Δt_k with and without the per-ACK cap, zero intervals included (inf/NaN)."""
    from ackreplay.estimators.bandwidth.be import be_samples_into

    rng = np.random.default_rng(400 + seed)
    n = int(rng.choice([0, 1, 2, 50, 3000]))
    t = np.cumsum(rng.choice([0.0, 1e-6, 1e-3, 0.1], n))
    d = rng.choice([0, 1448, 2896, 14480], n).astype(np.int64)
    for cap in (-1.0, 2.0, 0.5):
        dk = d.astype(np.float64)
        if cap > 0:
            dk = np.minimum(dk, cap * 1448)
        want = np.full(n, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            want[1:] = dk[1:] / np.diff(t)
        got = np.empty(n)
        be_samples_into(t, d, 1448, cap, got)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_crb_choice_in_one_pass_equals_the_numpy_expression(seed):
    """CRB: RE where flight/(RE·RTTmin) > θ (both defined), else BE — zeros (inf, NaN) and NaNs included."""
    from ackreplay.estimators.bandwidth.crb import choose_into

    rng = np.random.default_rng(500 + seed)
    n = int(rng.choice([0, 1, 3, 400, 5000]))
    be = rng.uniform(1e5, 1e7, n)
    be[rng.random(n) < 0.1] = np.nan
    re = np.where(rng.random(n) < 0.15, np.nan, rng.choice([0.0, 1e5, 1e6, 1e7], n))
    rttmin = np.where(rng.random(n) < 0.15, np.nan, rng.choice([0.0, 0.01, 0.05], n))
    flight = rng.choice([0, 1448, 14480, 144800, 1448000], n).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = flight.astype(np.float64) / (re * rttmin)
    want = np.where((rho > 1.4) & ~np.isnan(re) & ~np.isnan(rttmin), re, be)
    before = be.copy()
    assert choose_into(before, re, flight, rttmin, 1.4) is before and before.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_the_rtt_history_cursor_equals_running_sums_over_the_flow(seed):
    """NewBR's latest RTT sample and running mean at loss events, by a cursor, against the per-event
    arrays it replaced (cumulative sums over the whole flow), bit for bit — in order, repeated, and
    going back (the cursor restarts)."""
    rng = np.random.default_rng(600 + seed)
    n = int(rng.choice([1, 5, 300, 20_000]))
    r = rng.uniform(0.01, 0.3, n)
    r[rng.random(n) < rng.choice([0.0, 0.5, 0.99])] = np.nan
    inp = FlowInputs.from_arrays(np.arange(n, dtype=np.float64), np.zeros(n, np.int64), mss=1448, rtt=r)
    have = ~np.isnan(r)
    count = np.cumsum(have)
    total = np.cumsum(np.where(have, r, 0.0))
    idx = np.maximum.accumulate(np.where(have, np.arange(n), -1))
    latest = np.where(idx >= 0, r[np.maximum(idx, 0)], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    events = np.sort(rng.integers(0, n, int(rng.integers(1, 40))))
    events = np.concatenate((events, events[::-1][:3]))  # repeated and backwards
    for k in events:
        got = np.array(inp.rtt_history_at(int(k)))
        assert got.tobytes() == np.array([latest[k], mean[k]]).tobytes()


def numpy_diagnostics(t: np.ndarray, d: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray, mss: int,
                      after: bool) -> tuple[float, list[int], float | None]:
    """The §7 series diagnostics as numpy expressions (the code the one-pass scan replaced; the largest
    samples by a full sort, the rule the scan's linear selection must give)."""
    dt = np.diff(t)
    share = float((dt < 100e-6).mean())
    dd = d[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(dt > 0, dd / dt, np.nan)
    ok = np.flatnonzero(~np.isnan(rate) & (dd > 0))
    # a full sort by (rate, interval), both descending: equal rates list the later interval first (issue #21:
    # the order np.argpartition gave them depended on numpy's version and the CPU's SIMD sort)
    top = sorted((int(i) for i in ok), key=lambda i: (rate[i], i), reverse=True)[:3]
    if after:
        gap = np.diff(seg_t)
        full = (seg_len[1:] >= mss) & (seg_len[:-1] >= mss) & (gap > 0)
        rates = seg_len[1:][full] / gap[full]
    else:
        full = (dd >= mss) & (dt > 0)
        rates = dd[full] / dt[full]
    return share, top, (float(8 * np.median(rates)) if len(rates) else None)


@pytest.mark.parametrize("seed", range(20))
def test_the_diagnostics_scan_equals_the_numpy_expressions(seed):
    """ACK compression share and BE's largest samples (ties included): the one-pass scan against the arrays
    it replaced, bit for bit. (The capacity is the path's since #24, tested in tests/estimators/test_path.py:
    the scan leaves it to replay.)"""
    from tests.estimators.per_flow_scores import one_flow_diagnostics

    rng = np.random.default_rng(700 + seed)
    n = int(rng.choice([3, 10, 400, 20_000]))
    t = np.cumsum(rng.choice([0.0, 3e-6, 4e-6, 1e-3, 0.02], n))
    d = rng.choice([0, 1448, 2896, 100], n).astype(np.int64)
    seg_t = np.cumsum(rng.choice([0.0, 1e-4, 1.2e-3], n))
    seg_len = rng.choice([0, 1448, 500], n).astype(np.int64)
    inp = FlowInputs.from_arrays(t, d, mss=1448)
    inp.seg_t, inp.seg_len = seg_t, seg_len
    for vantage, after in (("sender", False), ("receiver", True)):
        got = one_flow_diagnostics(inp, vantage)
        share, top, capacity = numpy_diagnostics(t, d, seg_t, seg_len, 1448, after)
        assert got["ack_compression_share"] == share and got["dispersion_capacity_bps"] is None
        assert got["dispersion_from"] == ("data" if after else "acks") and (capacity is None or capacity > 0)
        assert [s["t_rel"] for s in got["largest_samples"]] == [float(t[i + 1]) for i in top]
        assert [s["bps"] for s in got["largest_samples"]] == [float(8 * (d[i + 1] / (t[i + 1] - t[i]))) for i in top]
