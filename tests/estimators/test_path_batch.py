"""The path inference of many flows at once (``ackreplay.path``): ``flow_parts_batch``,
``PathBatch.merge`` and ``infer_batch`` give every flow of a real capture the evidence and the ``path`` that one
flow at a time gives it (``flow_parts`` on its own tables, ``infer``, and ``replay_capture``'s paths and groups),
whatever the order of the flows and where their rows lie; and the compiled pieces agree with the plain rules
they stand for (the dense histogram's mode, the rank of a quantile, numpy's binary search)."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.inputs import ACK_COLUMNS, SEGMENT_COLUMNS
from ackreplay.ingest import ingest_capture
from ackreplay.kernels import search_sorted
from ackreplay.path.dispersion import BIN_RATES, HIST_BINS, HIST_LO_BPS, LOG_BIN, MODE_WIDTH, REFINE_REACH
from ackreplay.path.evidence import PathBatch
from ackreplay.path.figures import top_ranks
from ackreplay.path.flow_evidence import flow_parts, flow_parts_batch
from ackreplay.path.groups import bottleneck_group_rows
from ackreplay.path.inference import infer, infer_batch
from ackreplay.path.links import LinkInfo, Links
from ackreplay.replay.capture import bulk_flow_ids, replay_capture
from ackreplay.replay.engine import FlowColumns, flow_rows
from tests.conftest import ROOT, SHARED, shared_captures
from tests.estimators.per_flow_path import bottleneck_groups, histogram_mode, merge_parts

PATHS = ROOT / "tests" / "data" / "paths"


def _captures() -> list[Path]:
    """The shared captures holding more than one flow (groups, losses, both vantages) and the path captures."""
    shared = [p for p in shared_captures() if p.name.startswith(("s03", "s06", "s07", "s09", "gh-wirerust__nfs",
                                                                   "pypi-mptcp"))] if SHARED.is_dir() else []
    return shared + sorted(PATHS.glob("*.pcap.gz"))


CAPTURES = _captures()


def _same(a: object, b: object) -> bool:
    """Equal, floats to the bit (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name.split(".")[0] for p in CAPTURES])
def test_the_batch_gives_every_flow_what_one_flow_at_a_time_gives_it(capture):
    cap = ingest_capture(capture)
    acks, segs = FlowColumns(cap.acks, ACK_COLUMNS), FlowColumns(cap.segments, SEGMENT_COLUMNS)
    ack_rows, seg_rows, ep_rows = flow_rows(cap.acks), flow_rows(cap.segments), flow_rows(cap.episodes)
    # one at a time, on each flow's Polars frames (as a caller with frames hands them in)
    single = [flow_parts(s.flow_id, LinkInfo.of(s), ack_rows(s.flow_id), seg_rows(s.flow_id), ep_rows(s.flow_id))
              for s in cap.flows]
    ids = np.array([s.flow_id for s in cap.flows])

    def bounds(cols: FlowColumns, fids: np.ndarray) -> np.ndarray:
        return np.stack([np.searchsorted(cols.ids, fids), np.searchsorted(cols.ids, fids, side="right")])

    # the whole capture's columns, the flows in order and then backwards (their rows not adjacent)
    for order in (np.arange(len(ids)), np.arange(len(ids))[::-1]):
        fids = ids[order]
        batch = flow_parts_batch(fids, Links.of([cap.flows[i] for i in order]), acks.cols, bounds(acks, fids),
                                 segs.cols, bounds(segs, fids), cap.episodes)
        assert len(batch) == len(fids)
        for k, i in enumerate(order):
            assert _same(batch[k].as_dict(), single[i].as_dict()), (fids[k], batch[k], single[i])
        for k, (i, path) in enumerate(zip(order, infer_batch(batch), strict=True)):
            assert _same(path, infer(single[i])), fids[k]
    # each flow's rows concatenated, cut by offsets (as a batched replay hands them in)
    a_cols = {n: np.concatenate([acks(f)[n] for f in ids]) for n in ("t_rel", "ack", "rtt", "srtt")}
    s_cols = {n: np.concatenate([segs(f)[n] for f in ids]) for n in SEGMENT_COLUMNS}
    a_off = np.concatenate([[0], np.cumsum([len(acks(f)["t_rel"]) for f in ids])])
    s_off = np.concatenate([[0], np.cumsum([len(segs(f)["t_rel"]) for f in ids])])
    batch = flow_parts_batch(ids, [LinkInfo.of(s) for s in cap.flows], a_cols, a_off, s_cols, s_off, cap.episodes)
    assert all(_same(b.as_dict(), s.as_dict()) for b, s in zip(batch, single, strict=True))


@pytest.mark.parametrize("capture", CAPTURES, ids=[p.name.split(".")[0] for p in CAPTURES])
def test_replays_paths_and_groups_are_the_batchs(capture):
    """``replay_capture`` (each flow's ``flow_parts`` and ``infer``, then ``share_paths``) against the batch:
    the flows sharing a bottleneck pooled by ``PathBatch.merge`` and judged by ``infer_batch``, and their
    pooled evidence equal to ``merge_parts`` of the flows' own."""
    cap = ingest_capture(capture)
    rep = replay_capture(cap, [E.create("newreno")], keep_series=False)
    acks, segs = FlowColumns(cap.acks, ACK_COLUMNS), FlowColumns(cap.segments, SEGMENT_COLUMNS)
    ids = np.array([f.flow_id for f in rep.flows])
    by_id = {s.flow_id: s for s in cap.flows}
    lo_hi = [np.stack([np.searchsorted(c.ids, ids), np.searchsorted(c.ids, ids, side="right")]) for c in (acks, segs)]
    batch = flow_parts_batch(ids, Links.of([by_id[f] for f in ids]), acks.cols, lo_hi[0], segs.cols, lo_hi[1],
                             cap.episodes)
    paths = dict(zip(ids.tolist(), infer_batch(batch), strict=True))
    bulk = set(bulk_flow_ids(cap.flows, None))
    kept = [k for k, f in enumerate(ids.tolist()) if f in bulk]
    s = [by_id[int(ids[k])] for k in kept]
    rows, offsets = bottleneck_group_rows(ids[kept], [x.sender for x in s], [x.receiver for x in s],
                                          [x.start_t for x in s], [x.end_t for x in s], min_size=2)
    members = batch.take(np.asarray(kept, np.int64)[rows])
    pooled = members.merge(offsets)
    group = np.repeat(np.arange(len(pooled)), np.diff(offsets))
    paths.update(zip(members.flow_ids.tolist(), infer_batch(members, pooled, group), strict=True))
    for f in rep.flows:
        assert _same(f.path, paths[f.flow_id]), f.flow_id
    assert [g["flows"] for g in rep.path_groups] == [members.flow_ids[a:b].tolist() for a, b in pairwise(offsets)]
    for g, p, pool in zip(rep.path_groups, infer_batch(pooled), pooled, strict=True):
        assert _same(g["path"], p)
        own = merge_parts([f.path_parts for f in rep.flows if f.flow_id in g["flows"]])
        assert _same(own.as_dict(), pool.as_dict())


def test_groups_as_rows_and_as_lists():
    flows = [(1, "a:1", "b:2", 0.0, 10.0), (2, "a:3", "b:4", 5.0, 20.0), (3, "a:5", "b:6", 30.0, 40.0),
             (4, "c:1", "b:2", 0.0, 10.0), (5, "a:7", "b:8", 19.0, 25.0), (6, "[::1]:9", "[::2]:1", 1.0, 2.0),
             (7, "[::1]:8", "[::2]:3", 1.5, 3.0), (0, "a:9", "b:9", 50.0, 60.0)]
    assert bottleneck_groups(flows) == [[0], [1, 2, 5], [3], [4], [6, 7]]
    rows, offsets = bottleneck_group_rows(*zip(*flows, strict=True), min_size=2)
    assert rows.tolist() == [0, 1, 4, 5, 6] and offsets.tolist() == [0, 3, 5]
    assert bottleneck_groups([]) == [] and bottleneck_group_rows([], [], [], [], [])[1].tolist() == [0]


def _dense_mode(hist: np.ndarray, floor_bps: float) -> tuple[float | None, int, int]:
    """The pathrate mode as the dense histogram states it: the densest window of MODE_WIDTH bins at or above
    the floor, then the median bin of the samples within REFINE_REACH bins of its centre."""
    lo = max(0, math.floor(math.log(max(floor_bps, HIST_LO_BPS) / HIST_LO_BPS) / LOG_BIN))
    h = hist[lo:]
    if h.sum() == 0:
        return None, 0, 0
    csum = np.concatenate(([0], np.cumsum(h)))
    win = csum[MODE_WIDTH:] - csum[:-MODE_WIDTH] if len(h) >= MODE_WIDTH else csum[-1:] - csum[:1]
    j = int(np.argmax(win))
    centre = j + MODE_WIDTH // 2
    a, b = max(0, centre - REFINE_REACH), min(len(h), centre + REFINE_REACH + 1)
    half = int(np.searchsorted(np.cumsum(h[a:b]), (int(h[a:b].sum()) + 1) / 2))
    return HIST_LO_BPS * (1 + 0.005) ** (lo + a + half + 0.5), int(win[j]), int(h.sum())


def test_the_sparse_mode_is_the_dense_histograms():
    """The mode found on the occupied bins equals the dense rule's, on histograms of scattered, clustered and
    tied counts, with floors below, inside and above them, and near the top bin."""
    rng = np.random.default_rng(26)
    for trial in range(3000):
        hist = np.zeros(HIST_BINS, np.int64)
        centre = int(rng.integers(0, HIST_BINS))
        spread = int(rng.choice([3, 20, 200, 2000]))
        where = np.clip(centre + rng.integers(-spread, spread + 1, int(rng.integers(1, 60))), 0, HIST_BINS - 1)
        np.add.at(hist, where, rng.integers(1, 4, len(where)))
        floor = float(BIN_RATES[int(np.clip(centre + rng.integers(-2 * spread, spread), 0, HIST_BINS - 1))])
        floor *= float(rng.choice([0.5, 1.0, 1.0 + 1e-12, 2.0])) if trial % 3 else 1.0
        assert histogram_mode(hist, floor) == _dense_mode(hist, floor), (trial, floor)


def test_the_top_ranks_and_the_search_are_numpys():
    rng = np.random.default_rng(9)
    for n in (1, 2, 3, 50, 101, 4097, 20000):
        for v in (rng.random(n), rng.integers(0, 3, n).astype(float), np.sort(rng.random(n))[::-1].copy()):
            k1, k2 = int(0.98 * (n - 1)), int(0.999 * (n - 1))
            s = np.sort(v)
            assert top_ranks(v, k1, k2, np.empty(n)) == (s[k1], s[k2])
            for x in (*v[:5], -1.0, 2.0, math.nan, s[len(s) // 2]):
                for right in (False, True):
                    assert search_sorted(s, x, right) == np.searchsorted(s, x, side="right" if right else "left")


def test_links_from_summaries_are_each_ones_link_info():
    cap = ingest_capture(PATHS / "r8_rtt40_cross.pcap.gz")
    links = Links.of(cap.flows)
    assert [links.info(i) for i in range(len(links))] == [LinkInfo.of(s) for s in cap.flows]
    assert Links.of([s.to_dict() for s in cap.flows]).info(0) == LinkInfo.of(cap.flows[0].to_dict())
    v6 = LinkInfo.of({"sender": "[2001:db8::1]:80", "timestamps": False, "vantage": None, "mss": None})
    assert (v6.vantage, v6.mss, v6.overhead, v6.span) == ("sender", 0, 14 + 40 + 20, (0.0, 0.0))


def test_an_empty_batch_and_pooling_one_flow():
    links = Links.of([])
    empty = flow_parts_batch([], links, {n: np.empty(0) for n in ("t_rel", "ack", "rtt", "srtt")}, [0],
                             {n: np.empty(0) for n in SEGMENT_COLUMNS}, [0], {"flow_id": [], "start_t_rel": [],
                                                                               "retransmissions": []})
    assert len(empty) == 0 and infer_batch(empty) == [] and len(PathBatch.stack([])) == 0
    one = flow_parts(7, LinkInfo("sender", 1448, 66, 1e6, 0), {"t_rel": [0.0], "ack": [1], "rtt": [math.nan],
                                                                 "srtt": [math.nan]},
                     {"t_rel": [], "seq": [], "len": [], "kind": []}, {"start_t_rel": []})
    assert merge_parts([one]) is one and one.flows == [7] and one.pairs == 0
    assert infer(one)["evidence"]["base_rtt_s"] == "null: no RTT sample in the capture"
