"""The congestion graph's data (graphs/): per-pixel downsampling keeps every extreme, zooming restores full
resolution, and the panels hold what the flow and its replay hold."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackreplay.core.capture_scoring import build_estimators, score_file
from ackreplay.graphs.congestion import CongestionSource, source_for
from ackreplay.graphs.downsample import column_hull, m4_indices
from tests.conftest import ROOT, shared_captures

SAMPLE = ROOT / "samples" / "sample.pcap"


def _columns(x: np.ndarray, t0: float, t1: float, px: int) -> np.ndarray:
    w = (t1 - t0) / px
    return np.where(x < t0, -1, np.where(x > t1, px, np.minimum(((x - t0) / w).astype(np.int64), px - 1)))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 4000), px=st.integers(1, 300), seed=st.integers(0, 2**31), nan_share=st.floats(0, 0.3),
       lo=st.floats(0, 1), width=st.floats(0.001, 1.5))
def test_m4_keeps_first_last_min_and_max_of_every_column(n, px, seed, nan_share, lo, width):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 1, n))
    y = rng.standard_cauchy(n)  # heavy tails: spikes everywhere
    y[rng.uniform(0, 1, n) < nan_share] = np.nan
    t0, t1 = lo, lo + width
    idx = m4_indices(x, y, t0, t1, px)
    assert np.all(np.diff(idx) > 0) and not np.isnan(y[idx]).any()
    inside = np.flatnonzero((x >= t0) & (x <= t1) & ~np.isnan(y))
    if len(inside) + 2 <= 4 * px:
        assert set(inside) <= set(idx.tolist())  # full resolution
    cols = _columns(x, t0, t1, px)
    for c in np.unique(cols[inside]):
        members = inside[cols[inside] == c]
        kept = [i for i in idx if cols[i] == c]
        assert y[members].max() == max(y[kept]) and y[members].min() == min(y[kept])
        assert kept[0] == members[0] and kept[-1] == members[-1]
    assert len(idx) <= max(4 * px, len(inside)) + 8  # ≤ 4 per column (+ a point each side)


def test_m4_keeps_a_single_spike_in_a_million_points():
    x = np.linspace(0, 100, 1_000_000)
    y = np.full_like(x, 5e6)
    y[654_321] = 3.8e9  # one BE sample over 3 µs
    idx = m4_indices(x, y, 0.0, 100.0, 800)
    assert len(idx) <= 4 * 800 + 2 and 654_321 in idx


def test_column_hull_merges_blocks_per_column_and_keeps_them_all_when_few():
    x = np.array([0.1, 0.15, 0.5, 0.9])
    lo = np.array([10, 30, -1, 50])
    hi = np.array([20, 40, -1, 60])
    t, left, h = column_hull(x, lo, hi, 0.0, 1.0, 10)
    assert t.tolist() == [0.1, 0.15, 0.9] and left.tolist() == [10, 30, 50] and h.tolist() == [20, 40, 60]
    t, left, h = column_hull(x, lo, hi, 0.0, 1.0, 1)  # 3 blocks > 2 per column: one hull
    assert t.tolist() == [0.1] and left.tolist() == [10] and h.tolist() == [60]


@pytest.fixture(scope="module")
def sample_graph() -> tuple[CongestionSource, object]:
    sc = score_file(SAMPLE, build_estimators(None, {}))
    fr = next(f for f in sc.replay.flows if f.flow_id == 2)
    return source_for(sc.ingest, fr, 2), (sc, fr)


def test_panels_hold_the_flow_and_its_replay(sample_graph):
    src, (sc, fr) = sample_graph
    g = src.window()
    json.dumps(g, allow_nan=False)  # plain JSON: NaN became null
    acks = sc.ingest.flow(2).acks
    assert g["full_resolution"] and len(g["sequence"]["ack"]["t"]) == acks.height  # a short flow: every point
    assert g["sequence"]["ack"]["y"][-1] == acks["ack"][-1]
    assert len(g["sequence"]["retransmitted"]["t"]) == 49  # the sample's retransmissions
    assert len(g["sequence"]["sack"]["t"]) == acks["sack_lo"].drop_nulls().len() > 0
    rw = acks.filter(acks["rwnd"].is_not_null())
    assert g["sequence"]["rwnd"]["y"][-1] == rw["ack"][-1] + rw["rwnd"][-1]
    ests = g["flight"]["estimators"]
    assert set(ests) == {e for e in fr.decisions["estimator"].unique()} and len(ests["abse"]["t"]) == 39
    abse = fr.decisions.filter(fr.decisions["estimator"] == "abse")
    assert ests["abse"]["ssthresh"] == pytest.approx((abse["ssthresh_segments"] * src.mss).round(0).to_list())
    wp = ests["westwood_plus"]
    assert all(c >= t for c, t in zip(wp["cwnd_t"], wp["t"], strict=True))  # Westwood+: a round trip later
    assert sum(e["count"] for e in g["episodes"]) == 39
    assert g["y_top"] == pytest.approx(2 * max(np.percentile(fr.series["achieved_bps"].drop_nulls().to_numpy(), 99),
                                               fr.series["truth_bps"].max(), fr.diagnostics["dispersion_capacity_bps"]))
    assert g["clipped"]["be"]["y"] and min(g["clipped"]["be"]["y"]) > g["y_top"]
    assert max(g["rates"]["be"]["y"]) == pytest.approx(fr.series["be_bps"].max(), abs=1)
    assert g["rtt"]["rttmin"]["y"][-1] == pytest.approx(acks["rttmin"].drop_nulls()[-1] * 1e3, abs=1e-4)


def test_narrow_graphs_thin_per_pixel_and_zoom_brings_points_back(sample_graph):
    src, _ = sample_graph
    coarse = src.window(px=50)
    assert not coarse["full_resolution"] and coarse["px"] == 50
    assert len(coarse["sequence"]["ack"]["t"]) <= 4 * 50 + 2
    assert len(coarse["episodes"]) < 39 and sum(e["count"] for e in coarse["episodes"]) == 39  # merged per pixel
    t0, t1 = coarse["t_span"][0] + 1.0, coarse["t_span"][0] + 1.1
    fine = src.window(t0, t1, px=50)
    acks_in = np.count_nonzero((src.ack_t >= t0) & (src.ack_t <= t1))
    assert fine["full_resolution"] and sum(t0 <= t <= t1 for t in fine["sequence"]["ack"]["t"]) == acks_in
    assert fine["window"] == [t0, t1]
    everything = src.window(-math.inf, math.inf)
    assert everything["window"] == list(src.t_span)


@pytest.mark.parametrize("capture", shared_captures(), ids=lambda p: p.name)
def test_every_replayed_flow_of_every_shared_capture_has_a_graph(capture):
    """Receiver-side and mid-path rebuilds, no SACK, no timestamps, no handshake, timeouts: every replayed
    flow's graph builds, is plain JSON, holds its ACKs and loss events, and zooms."""
    sc = score_file(capture, build_estimators(None, {}), allow_vantage=True)
    for fr in sc.replay.flows:
        src = source_for(sc.ingest, fr, fr.flow_id)
        g = src.window(px=400)
        json.dumps(g, allow_nan=False)
        summary = next(s for s in sc.ingest.flows if s.flow_id == fr.flow_id)
        assert len(g["sequence"]["ack"]["t"]) == min(summary.acks, len(g["sequence"]["ack"]["t"])) > 0 \
            or summary.acks == 0
        assert sum(e["count"] for e in g["episodes"]) == summary.loss_events
        assert set(g["rates"]) >= {"achieved"} | {e for e in fr.scores}
        a, b = g["t_span"]
        mid = src.window(a + (b - a) * 0.4, a + (b - a) * 0.5, px=400)
        series = [*mid["sequence"].values(), mid["flight"]["flight"], *mid["rates"].values(), *mid["rtt"].values()]
        assert mid["window"][0] >= a - 1e-9 and all(len(x["t"]) <= 4 * 400 + 2 for x in series)


def test_the_service_cache_of_graph_sources_is_bounded_by_bytes(sample_graph):
    from ackreplay.core.run_views import _GraphCache

    src, _ = sample_graph
    cache = _GraphCache(max_bytes=int(src.nbytes * 2.5))
    built: list[int] = []

    def build(i: int) -> CongestionSource:
        built.append(i)
        return src

    for i in range(4):
        assert cache.get(("run", "cap", i), lambda i=i: build(i)) is src
    assert cache.get(("run", "cap", 3), lambda: build(99)) is src and built == [0, 1, 2, 3]  # a hit
    assert list(cache.items) == [("run", "cap", 2), ("run", "cap", 3)]  # two fit in 2.5 sources' bytes
    tiny = _GraphCache(max_bytes=1)
    tiny.get(("r", "c", 0), lambda: src)
    assert len(tiny.items) == 1  # the newest is kept whatever its size


def test_a_flow_not_replayed_has_the_captures_panels_without_the_replays(sample_graph, tmp_path):
    """tcptrace and Wireshark draw any connection's time–sequence graph: so does ackreplay, for a flow that was not
    replayed — its sequence, flight and RTT panels and loss episodes as the replayed flow's, nothing of replay."""
    from ackreplay.graphs.static import render

    replayed_src, (sc, _) = sample_graph
    bare = source_for(sc.ingest, None, 2)
    g, full = bare.window(), replayed_src.window()
    json.dumps(g, allow_nan=False)
    assert not g["replayed"] and full["replayed"]
    for part in ("sequence", "rtt", "episodes", "t_span"):
        assert g[part] == full[part]
    assert g["flight"]["flight"] == full["flight"]["flight"] and g["flight"]["estimators"] == {}
    assert (g["rates"], g["clipped"], g["y_top"], g["queue"]) == ({}, {}, None, None)
    svg = render(g, tmp_path / "bare.svg").read_text()
    assert "sequence (bytes)" in svg and "RTT (ms)" in svg and "Mbit/s" not in svg


def test_a_runaway_decision_is_marked_at_the_edge_and_the_limits_shade_the_flight(sample_graph, tmp_path):
    """The flight panel's range follows the flow's own flight and ideal: an estimator whose ssthresh runs away
    (here one made 1000× too large) is listed above the top instead of squashing the panel, and the PNG marks it
    at the edge with its value; the limits' runs come with the window, for the bands."""
    from dataclasses import replace

    import polars as pl

    from ackreplay.graphs.static import render

    src, (_, fr) = sample_graph
    g = src.window()
    flight = [v for v in g["flight"]["flight"]["y"] if v is not None]
    assert g["flight_top"] == pytest.approx(2 * max(np.percentile(flight, 99), *(
        v for v in g["flight"]["ideal"]["y"] if v is not None)), rel=0.01)
    assert g["limits"] and g["limits"] == [list(r) for r in fr.limits.runs()]  # the whole flow: every run
    runaway = src.decisions.with_columns(pl.when(pl.col("estimator") == "abse").then(pl.col("ssthresh_segments") * 1000)
                                         .otherwise(pl.col("ssthresh_segments")).alias("ssthresh_segments"))
    wild = replace(src, decisions=runaway).window()
    assert wild["flight_top"] == g["flight_top"]  # the range is the flow's, not the estimator's
    assert len(wild["flight_clipped"]["abse"]["t"]) == 39 and min(wild["flight_clipped"]["abse"]["y"]) > g["flight_top"]
    short = src.window(1.0, 1.5)
    assert all(1.0 <= a <= b <= 1.5 for a, b, _ in short["limits"])
    out = render(wild, tmp_path / "g.png")
    assert out.stat().st_size > 10_000
