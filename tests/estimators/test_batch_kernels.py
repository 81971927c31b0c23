"""Every built-in estimator's series over a batch of flows in one compiled call (issue #26), to the bit.

``series_batch(batch)`` must give each member exactly what ``series`` gives the flow alone — as replay builds
it today (``FlowInputs.from_frames`` on the flow's own rows) and as the batch's own member view
(``batch.flow(i)``): same length, same NaN positions, same bits. Checked on every shared capture (the
replayable flows, and every flow including those without ACKs) and on synthetic batches with the edge
cases: flows of 0, 1 and 2 events, NaN RTTs, rows with equal timestamps, events at equal times, times and
TSvals going backwards, TSval wrapping, transmissions out of order. ``FlowBatch.build`` over many flows
gives, member by member, the same ``FlowInputs`` as ``FlowInputs.from_frames`` on each flow alone.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numba.core import types

from ackreplay.cli.warmup import capture_batch
from ackreplay.estimators import registry
from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, Batched, Estimator, LossContext
from ackreplay.estimators.flow_batch import EVENT_COLUMNS, FlowBatch
from ackreplay.estimators.inputs import ACK_COLUMNS, SEGMENT_COLUMNS, FlowInputs
from ackreplay.ingest import ingest_capture
from ackreplay.replay.engine import flow_columns, plan
from tests.conftest import SHARED, shared_captures

#: Parameter variants per estimator (each estimator's defaults first); the others run with their defaults.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "be": [{}, {"pairing": False}, {"max_segments_per_ack": 2.0}, {"tau": 0.25, "max_segments_per_ack": 0.5}],
    "re": [{}, {"pairing": False}, {"window": 0.1}],
    "crb": [{}, {"pairing": False, "theta": 1.0}, {"tau": 0.3}],
    "abse": [{}, {"beta": 0.9, "N": 1.0}],
    "tibet": [{}, {"a": 0.9}],
    "tibet_tx": [{}, {"a": 0.5}],
    "newbr": [{}, {"receiver_timestamps": False}, {"pairing": False, "gamma": 1.0, "beta": 0.5}],
    "westwood_plus": [{}, {"min_window": 0.0, "gain": 0.5}],
}


def builtin_names() -> list[str]:
    return [n for n in registry.names() if registry.get(n).origin.get("kind") == "builtin"]


def estimators() -> list[Estimator]:
    return [registry.create(n, **p) for n in builtin_names() for p in VARIANTS.get(n, [{}])]


def label(e: Estimator) -> str:
    return f"{e.name}{e.params}"


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, np.float64).tobytes()


def assert_batch_equals_alone(batch: FlowBatch, alone: list[FlowInputs], where: str) -> None:
    """For every estimator variant: ``series_batch`` equals, member by member, ``series`` on the flow alone
    and on the batch's member view; or, where the series of a member raises, ``series_batch`` raises too."""
    assert len(alone) == len(batch)
    for e in estimators():
        try:
            want = [e.series(x) for x in alone]
        except ArithmeticError as exc:  # a degenerate flow (division by an interval of 0): raised either way
            with pytest.raises(type(exc)):
                e.series_batch(batch)
            continue
        got = e.series_batch(batch)
        assert got.dtype == np.float64 and got.shape == (batch.events,), (where, label(e))
        viewed = [e.series(batch.flow(i)) for i in range(len(batch))]
        assert bits(got) == bits(np.concatenate([np.empty(0), *viewed])), (where, label(e))
        for i, w in enumerate(want):
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            assert bits(got[lo:hi]) == bits(w), (where, label(e), f"member {i}")


def assert_members_equal(batch: FlowBatch, alone: list[FlowInputs], where: str) -> None:
    """``FlowBatch.build`` on many flows: each member is the ``FlowInputs`` of the flow built alone."""
    assert len(batch) == len(alone)
    for i, want in enumerate(alone):
        got = batch.flow(i)
        for c in (*EVENT_COLUMNS, "row_event", "seg_t", "seg_len", "seg_seq", "seg_tsval"):
            a, b = getattr(got, c), getattr(want, c)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (where, i, c)
            assert not a.flags.writeable, (where, i, c)
        assert got.mss == want.mss, (where, i)
    assert int(batch.offsets[-1]) == batch.events


# ---- real captures


def replay_batch(cap: Any, flow_ids: list[int]) -> tuple[FlowBatch, list[FlowInputs]]:
    """The flows ``flow_ids`` of an ingested capture as one batch — their rows as replay's ``FlowColumns``
    slices them, concatenated, row offsets from each flow's row count — and each flow as replay builds it
    alone (``FlowInputs.from_frames`` on the same slices)."""
    acks = flow_columns(cap.acks, ACK_COLUMNS)
    segs = flow_columns(cap.segments, SEGMENT_COLUMNS)
    by_id = {s.flow_id: s for s in cap.flows}
    a = [acks(f) for f in flow_ids]
    s = [segs(f) for f in flow_ids]

    def joined(lookup: Any, parts: list[dict[str, np.ndarray]], names: tuple[str, ...]) -> dict[str, np.ndarray]:
        return {n: np.concatenate([lookup.cols[n][:0], *(p[n] for p in parts)]) for n in names}

    def offsets(parts: list[dict[str, np.ndarray]]) -> np.ndarray:
        return np.concatenate(([0], np.cumsum([len(p["t_rel"]) for p in parts], dtype=np.int64)))

    mss = [by_id[f].mss for f in flow_ids]
    batch = FlowBatch.build(joined(acks, a, ACK_COLUMNS), offsets(a), joined(segs, s, ("t_rel", "len", "seq", "tsval")),
                            offsets(s), mss, flow_ids)
    return batch, [FlowInputs.from_frames(x, y, m) for x, y, m in zip(a, s, mss, strict=True)]


@cache
def ingested(path: Path) -> Any:
    return ingest_capture(path)


CAPTURES = shared_captures()


@pytest.mark.parametrize("path", CAPTURES, ids=[p.relative_to(SHARED).as_posix() for p in CAPTURES])
def test_series_batch_equals_each_flow_alone_on_the_shared_captures(path: Path) -> None:
    cap = ingested(path)
    todo, _ = plan(cap.flows, allow_vantage=True)
    every = sorted(s.flow_id for s in cap.flows)  # (with the flows of fewer than two ACKs: 0 or 1 event)
    for which, fids in (("replayable", todo), ("every flow", every)):
        batch, alone = replay_batch(cap, fids)
        assert_members_equal(batch, alone, f"{path.name} {which}")
        assert_batch_equals_alone(batch, alone, f"{path.name} {which}")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.relative_to(SHARED).as_posix() for p in CAPTURES])
def test_the_warmup_batch_of_a_whole_capture_holds_each_flow_as_replay_builds_it(path: Path) -> None:
    """``cli.warmup.capture_batch`` (the whole tables, rows found by ``flow_id``) gives the same members."""
    cap = ingested(path)
    batch = capture_batch(cap)
    assert_members_equal(batch, replay_batch(cap, [int(f) for f in batch.flow_ids])[1], path.name)


# ---- synthetic batches

Flow = tuple[dict[str, np.ndarray], dict[str, np.ndarray], int]  # one flow's ACK rows, segments and mss


def synthetic_flow(rng: np.random.Generator, rows: int, degenerate: bool) -> Flow:
    """One flow's ACK rows and data segments with the awkward cases: rows at equal timestamps (merged into
    one event), gaps from 1 ns to idle seconds, d and flight of 0, NaN RTTs (a flow may have none), srtt
    unknown at first, TSvals missing, equal, stepping back and wrapping at 2³². ``degenerate``: also event
    times that are equal after conversion (an interval of 0), ACK times going backwards and transmissions
    out of order."""
    gaps = rng.choice([0, 0, 1, 1000, 10**5, 10**6, 5 * 10**7, 2 * 10**9], rows, p=[.1, .1, .1, .2, .2, .2, .07, .03])
    if degenerate and rows > 3:
        gaps[rng.random(rows) < 0.05] *= -1
    t_ns = int(rng.integers(16 * 10**17, 17 * 10**17)) + np.cumsum(gaps).astype(np.int64)
    lead = int(rng.choice([0, 10**6]))  # the flow's first packet before its first ACK
    t_rel = (t_ns - (t_ns[0] if rows else 0) + lead) / 1e9
    if degenerate:
        t_rel = np.round(t_rel, 4)  # a coarse clock: distinct rows at equal times
    mss = int(rng.choice([536, 1448, 8948]))
    rtt = np.where(rng.random(rows) < rng.choice([0.0, 0.3, 0.9]), rng.uniform(1e-4, 0.3, rows), np.nan)
    known = max(int(rng.integers(0, rows + 1)), 0)
    srtt = np.where(np.arange(rows) >= known, rng.uniform(1e-3, 0.3, rows), np.nan)
    rttmin = np.where(np.arange(rows) >= known, np.minimum.accumulate(rng.uniform(1e-3, 0.3, rows)), np.nan)
    ts = (int(rng.integers(0, 1 << 32)) + np.cumsum(rng.choice([0, 0, 1, 4, 1000], rows))) % (1 << 32)
    ts[rng.random(rows) < 0.05] -= 3  # backwards
    ts = np.where(rng.random(rows) < rng.choice([0.0, 0.1, 1.0]), -1, ts).astype(np.int64)
    d = rng.choice([0, 1, mss, 2 * mss, 65535, 10**6], rows).astype(np.int64)
    acks = {
        "t_ns": t_ns, "t": t_ns / 1e9, "t_rel": t_rel, "d": d,
        "acked": np.minimum(d, rng.choice([0, mss, 10**6], rows)).astype(np.int64),
        "dup": rng.random(rows) < 0.1, "rtt": rtt, "srtt": srtt, "rttmin": rttmin,
        "flight": rng.choice([0, mss, 10 * mss, 100 * mss, 10**7], rows).astype(np.int64), "tsval": ts,
        "ack": np.arange(rows, dtype=np.int64),
        # SACK: none, or blocks anywhere (above, below, inside the ACK; empty, reversed); windows unknown or tiny
        "sacked": rng.choice([0, 0, mss, 10 * mss], rows).astype(np.int64),
        "sack_lo": np.where(rng.random(rows) < 0.3, rng.integers(-1, 40 * mss, rows), -1).astype(np.int64),
        "sack_hi": np.where(rng.random(rows) < 0.3, rng.integers(-1, 40 * mss, rows), -1).astype(np.int64),
        "rwnd": rng.choice([-1, 0, mss, 64 * mss], rows).astype(np.int64),
    }
    nseg = int(rng.choice([0, 1, 2, rows, 3 * rows + 1]))
    span = max(float(t_rel[-1]), 0.0) if rows else 1.0
    seg_t = np.sort(rng.uniform(-0.01, span + 0.01, nseg))
    seg_t[rng.random(nseg) < 0.2] = seg_t[0] if nseg else 0.0
    seg_t = np.sort(seg_t)
    if degenerate and nseg > 5:
        seg_t[nseg // 2] = 0.0  # out of order
    seg_len = rng.choice([0, 500, mss], nseg).astype(np.int64)
    # in order, with retransmissions (a step back), gaps (bytes never seen sent) and GSO-like long segments
    steps = rng.choice([0, 1, 1, 1, -3, 5], nseg) * mss
    segs = {"t_rel": seg_t, "len": seg_len, "seq": np.cumsum(steps).astype(np.int64)}
    return acks, segs, mss


def batch_of(flows: list[Flow]) -> tuple[FlowBatch, list[FlowInputs]]:
    """``flows`` (ACK rows, segments, mss) concatenated into one batch, and each built alone."""
    def offsets(lengths: list[int]) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))

    acks = {c: np.concatenate([f[0][c] for f in flows]) for c in ACK_COLUMNS}
    segs = {c: np.concatenate([f[1][c] for f in flows]) for c in ("t_rel", "len", "seq")}
    batch = FlowBatch.build(acks, offsets([len(f[0]["t_ns"]) for f in flows]), segs,
                            offsets([len(f[1]["t_rel"]) for f in flows]), [f[2] for f in flows],
                            list(range(len(flows))))
    return batch, [FlowInputs.from_frames(*f) for f in flows]


def synthetic_flows(seed: int, degenerate: bool) -> list[Flow]:
    rng = np.random.default_rng(seed)
    sizes = [int(rng.choice([0, 1, 2, 3, 7, 60, 400])) for _ in range(int(rng.choice([1, 2, 5, 12])))]
    if seed % 3 == 0:
        sizes = [0, 1, 2, *sizes]
    return [synthetic_flow(rng, n, degenerate) for n in sizes]


def synthetic_batch(seed: int, degenerate: bool) -> tuple[FlowBatch, list[FlowInputs]]:
    return batch_of(synthetic_flows(seed, degenerate))


@pytest.mark.parametrize("seed", range(24))
def test_series_batch_equals_each_flow_alone_on_synthetic_batches(seed: int) -> None:
    batch, alone = synthetic_batch(seed, degenerate=False)
    assert_members_equal(batch, alone, f"seed {seed}")
    assert_batch_equals_alone(batch, alone, f"seed {seed}")


@pytest.mark.parametrize("seed", range(100, 116))
def test_series_batch_equals_each_flow_alone_on_degenerate_flows(seed: int) -> None:
    """Intervals of 0, times going backwards, transmissions out of order (tibet_tx's search path): the
    same numbers, or the same exception, either way — each flow as a batch of its own too, so that a flow
    that raises does not hide the others."""
    flows = synthetic_flows(seed, degenerate=True)
    batch, alone = batch_of(flows)
    assert_members_equal(batch, alone, f"seed {seed}")
    for i, flow in enumerate(flows):
        assert_batch_equals_alone(batch_of([flow])[0], [alone[i]], f"seed {seed} flow {i}")
    assert_batch_equals_alone(batch, alone, f"seed {seed}")


def test_an_empty_batch_and_a_batch_of_empty_flows() -> None:
    rng = np.random.default_rng(7)
    flows = [synthetic_flow(rng, 0, False) for _ in range(3)]
    none = FlowBatch.build(flows[0][0], np.zeros(1, np.int64), None, None, [], [])
    assert len(none) == 0 and none.events == 0
    for e in estimators():
        assert e.series_batch(none).shape == (0,), label(e)
    batch, alone = batch_of(flows)
    assert batch.events == 0
    assert_batch_equals_alone(batch, alone, "empty flows")


# ---- what the batch path must keep


def test_every_builtin_estimator_with_a_series_walks_a_batch_in_one_compiled_call() -> None:
    """No built-in estimator falls back to the per-member default of ``Estimator.series_batch``."""
    for name in builtin_names():
        cls = registry.get(name)
        assert cls.series_batch is not Estimator.series_batch, name
        if cls.has_series or name == "newreno":
            assert issubclass(cls, Batched), name


def loss_contexts(inp: FlowInputs, rng: np.random.Generator) -> list[LossContext]:
    n = len(inp.t)
    events = np.sort(rng.choice(n, min(6, n), replace=False)) if n else np.empty(0, np.int64)
    out = []
    for j, k in enumerate(events):
        kind = TIMEOUT if j % 3 == 2 else FAST_RETRANSMIT
        out.append(LossContext(kind, int(k), float(inp.t[k]), None, int(inp.flight[k]), float(inp.rttmin[k]),
                               inp.mss, j, None))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_decisions_after_series_batch_equal_those_after_the_flow_alone(seed: int) -> None:
    """A loss decision reads the series (and CRB its RE, made again per flow when the series came from a
    batch, which keeps no per-flow state): the same decisions either way."""
    batch, alone = synthetic_batch(seed, degenerate=False)
    for e in estimators():
        got_series = e.series_batch(batch)
        for i, inp in enumerate(alone):
            ctxs = loss_contexts(inp, np.random.default_rng(seed * 100 + i))
            want = e.decide_all(inp, e.series(inp), ctxs)
            e.forget(inp)
            member = batch.flow(i)
            lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
            got = e.decide_all(member, got_series[lo:hi], ctxs)
            e.forget(member)
            assert repr(got) == repr(want), (label(e), seed, i)  # (repr: NaN compares equal to itself)
        batch.forget_members()


def test_crb_keeps_re_for_its_decisions_from_the_one_flow_series_only() -> None:
    batch, alone = synthetic_batch(4, degenerate=False)
    crb = registry.create("crb")
    crb.series_batch(batch)
    assert all(not batch.flow(i).derived for i in range(len(batch)))  # nothing per flow from a batch
    inp = max(alone, key=len)
    crb.series(inp)
    kept = [v for k, v in inp.derived.items() if k.startswith("crb_re:")]
    assert len(kept) == 1 and bits(kept[0]) == bits(registry.create("re").series(inp))
    crb.forget(inp)
    assert not [k for k in inp.derived if k.startswith("crb_re:")]


def kernel_of(e: Estimator) -> Any:
    """The compiled batched kernel an estimator's ``run`` calls (read off its module)."""
    import importlib

    module = importlib.import_module(type(e).__module__)
    names = {"tibet_tx": "tibet_tx_batch", "westwood_plus": "westwood_batch", "bbr_bw": "bbr_batch"}
    return getattr(module, names.get(e.kind, f"{e.kind}_batch"))


def test_one_flow_and_a_batch_run_one_compiled_signature() -> None:
    """``series`` on one flow is the batch of one: the same compiled kernel with the same argument types
    (read-only arrays) as ``series_batch`` — so ``ackreplay warmup`` compiles one set for both."""
    cap = ingested(CAPTURES[0])
    batch = capture_batch(cap)
    for e in estimators():
        if not isinstance(e, Batched):
            continue
        kernel = kernel_of(e)
        e.series_batch(batch)
        before = list(kernel.signatures)
        e.series(batch.flow(0))
        assert list(kernel.signatures) == before, label(e)
        read = [a for a in before[-1] if isinstance(a, types.Array)]
        if e.kind == "crb":
            read = read[:-1]  # (its last array is where it writes RE)
        assert read and all(not a.mutable for a in read), label(e)


def pairwise_sum(a: list[float]) -> float:
    """numpy 2's summation order of a contiguous float64 array (``pairwise_sum`` in its ``loops_utils``), in
    Python floats: below 8 terms in a row; up to 128 in eight interleaved partial sums added pairwise, then
    the rest in a row; above, the two halves, the first a multiple of 8 long."""
    n = len(a)
    if n < 8:
        res = 0.0
        for v in a:
            res += v
        return res
    if n <= 128:
        r = a[:8]
        i = 8
        while i < n - n % 8:
            r = [r[j] + a[i + j] for j in range(8)]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in a[i:]:
            res += v
        return res
    half = n // 2 - (n // 2) % 8
    return pairwise_sum(a[:half]) + pairwise_sum(a[half:])


def test_newbr_fit_sums_in_numpys_pairwise_order() -> None:
    """NewBR's receiver-clock fit, compiled: means and sums of products in numpy's pairwise order, the same
    whatever the CPU or the numpy version — numpy's own ``np.mean`` and ``np.sum`` of the products to the bit
    up to 8192 terms (above that numpy 1.26 sums blocks of 8192 in a row; numpy 2 agrees at any length)."""
    from ackreplay.estimators.bandwidth.newbr import clock_fit

    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 8, 9, 127, 128, 129, 1000, 8192, 8193, 100_003):
        x = np.cumsum(rng.integers(0, 50, n)).astype(np.float64) + float(rng.integers(0, 1 << 31))
        y = (x - x[0]) * 1e-3 + rng.normal(0, 1e-4, n) + 1.7e9 * float(rng.integers(0, 2))
        m = float(n)
        xm, ym = pairwise_sum(x.tolist()) / m, pairwise_sum(y.tolist()) / m
        var = pairwise_sum(((x - xm) * (x - xm)).tolist())
        slope = pairwise_sum(((x - xm) * (y - ym)).tolist()) / var
        ok, intercept, got_slope = clock_fit(x, y)
        assert (ok, got_slope, intercept) == (slope > 0, slope, ym - slope * xm), n
        if n <= 8192:
            assert (xm, ym, var) == (x.mean(), y.mean(), np.sum((x - x.mean()) ** 2)), n
    assert not clock_fit(np.full(5, 3.0), np.arange(5.0))[0]  # no spread in TSval
    assert not math.isnan(clock_fit(np.arange(5.0), np.arange(5.0))[2])
