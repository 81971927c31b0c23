"""One-pass kernels against the numpy expressions they replaced, bit for bit: the achieved rate (§4) and
TIBET on transmissions (§3)."""

import numpy as np
import pytest

from estimators.references import achieved_rate


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
    (which take the old path)."""
    from estimators.inputs import FlowInputs
    from estimators.search import searchsorted_right
    from estimators.tibet import TibetTx, merge_equal_times, tibet_kernel

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
    st, sl = merge_equal_times(seg_t, seg_len)
    tx = tibet_kernel(st, sl.astype(np.float64), 0.99)
    idx = searchsorted_right(st, t) - 1
    want = np.full(n, np.nan)
    want[idx >= 0] = tx[idx[idx >= 0]]
    assert TibetTx().series(inp).tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(30))
def test_the_receiver_clock_in_one_pass_equals_the_numpy_chain(seed):
    """NewBR's TSval clock: missing TSvals held (the first one before it), the 32-bit wrap, steps backwards."""
    from estimators.newbr import tsval_clock

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
    from estimators.newbr import ere_series

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
    assert ere_series(u, g_be, g_re, group, ends, True).tobytes() == want.tobytes()
    flat_be, flat_re = rng.uniform(1e5, 1e7, n), np.where(rng.random(n) < 0.2, np.nan, rng.uniform(1e5, 1e7, n))
    want = np.where(np.isnan(flat_re), flat_be, u * flat_be + (1.0 - u) * flat_re)
    empty = np.empty(0, np.int64)
    assert ere_series(u, flat_be, flat_re, empty, empty, False).tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_be_samples_compiled_equal_the_numpy_expression(seed):
    """BE's raw samples d_k/Δt_k with and without the per-ACK cap, zero intervals included (inf/NaN)."""
    from estimators.be import be_samples

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
        assert be_samples(t, d, 1448, cap).tobytes() == want.tobytes()
