"""Replay batched across flows (issue #26) gives every flow the results it gets alone, whatever the batches.

``replay_capture`` replays consecutive flows as batches (``replay.engine.replay_batch``: each step one
compiled call over the batch), and ``replay_flow`` is a batch of one. On real captures of several flows, the
flows' scores, diagnostics, decision rows, windows and paths are compared by value between one batch of every
flow, batches of a few events (every flow alone, or nearly), and each flow replayed on its own; the capture's
aggregated scores from the columns with the old aggregation over per-flow dictionaries; and the CSV written from
the columns with the CSV of the score document.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ackreplay.estimators as E
import ackreplay.replay.capture as C
from ackreplay.core.capture_scoring import ScoredCapture, document, jsonable
from ackreplay.estimators.inputs import SEGMENT_COLUMNS
from ackreplay.ingest import ingest_capture
from ackreplay.path.links import LinkInfo
from ackreplay.replay import engine as R
from tests.conftest import SHARED
from tests.naive_estimators import decision_scores_of
from tests.valuecompare import differences

# captures of several flows each: sender side (bulk and control flows), a receiver side replayed anyway, losses
CAPTURES = ["generated/s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap",
            "generated/s06_cubic_1f_10M_rtt40_buf1bdp_2sides_rcv.pcap",
            "generated/s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap"]


def _captures() -> list[Path]:
    return [SHARED / c for c in CAPTURES]


def _flow_view(fr: R.FlowReplay) -> dict[str, Any]:
    return jsonable({"scores": fr.scores, "diagnostics": fr.diagnostics, "decisions": fr.decision_rows,
                     "window": list(fr.window), "events": fr.events, "path": fr.path})


@pytest.fixture(scope="module", params=_captures(), ids=lambda p: p.name)
def capture(request: pytest.FixtureRequest) -> Any:
    return ingest_capture(request.param)


def test_every_batch_size_gives_each_flow_its_own_results(capture: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    one = C.replay_capture(capture, ests, allow_vantage=True)
    assert len(one.batches) == 1 and len(one.flows) >= 2
    monkeypatch.setattr(C, "BATCH_EVENTS", 64)  # a batch per flow or two
    many = C.replay_capture(capture, ests, allow_vantage=True)
    assert len(many.batches) > 1
    for a, b in zip(one.flows, many.flows, strict=True):
        assert not list(differences(_flow_view(a), _flow_view(b))), a.flow_id
        for name in [e.name for e in ests]:
            assert np.array_equal(a.columns[name], b.columns[name], equal_nan=True)  # type: ignore[index]
    assert not list(differences(jsonable(one.scores), jsonable(many.scores)))
    assert one.score_table().equals(many.score_table())


def test_a_flow_replayed_alone_matches_its_batch(capture: Any) -> None:
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    rep = C.replay_capture(capture, ests, allow_vantage=True)
    acks = R.flow_columns(capture.acks, C.ack_columns(capture.acks.columns))  # (with what the limits read)
    segs = R.flow_columns(capture.segments, SEGMENT_COLUMNS)
    episodes = R.flow_rows(capture.episodes)
    by_id = {s.flow_id: s for s in capture.flows}
    grouped = {g for grp in rep.path_groups for g in grp["flows"]}
    for fr in rep.flows:
        s = by_id[fr.flow_id]
        alone = R.replay_flow(fr.flow_id, s.vantage, acks(fr.flow_id), segs(fr.flow_id), episodes(fr.flow_id), s.mss,
                              ests, link=LinkInfo.of(s), vantage_position=s.vantage_position)
        view, alone_view = _flow_view(fr), _flow_view(alone)
        if fr.flow_id in grouped:  # a flow sharing a bottleneck takes the group's path: compare the rest
            for v in (view, alone_view):
                v.pop("path")
                v["diagnostics"].pop("dispersion_capacity_bps")
                v["diagnostics"].pop("dispersion_from")
        assert not list(differences(alone_view, view)), fr.flow_id


def test_the_aggregate_of_the_flows_scores_is_the_aggregate_of_the_columns(capture: Any) -> None:
    """The service aggregates a capture from each flow's stored score dictionary, the CLI from the batches'
    columns: one ``capture_aggregate``, the same numbers."""
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    rep = C.replay_capture(capture, ests, allow_vantage=True)
    ids = np.array([f.flow_id for f in rep.flows], np.int64)
    per_flow = {e.name: C.flow_score_columns([jsonable(f.scores[e.name]) for f in rep.flows]) for e in ests}
    stored = C.capture_aggregate(ids, per_flow, C.bulk_flows(capture.flows, None))
    assert not list(differences(jsonable(stored), jsonable(rep.scores)))


def test_the_csv_from_columns_is_the_csv_of_the_document(capture: Any, tmp_path: Path) -> None:
    from ackreplay.cli.score_csv import scores_csv_of
    from tests.document_csv import scores_csv

    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    rep = C.replay_capture(capture, ests, allow_vantage=True)
    sc = ScoredCapture(tmp_path / "x.pcap", capture, rep, None, None)
    fast = scores_csv_of([sc])
    slow = scores_csv(jsonable(document([sc], ests)))
    a, b = list(csv.reader(io.StringIO(fast))), list(csv.reader(io.StringIO(slow)))
    assert a[0] == b[0] and len(a) == len(b) > 1
    for ra, rb in zip(a[1:], b[1:], strict=True):
        for col, x, y in zip(a[0], ra, rb, strict=True):
            same = x == y or (x and y and _number(x) == _number(y))
            assert same, (col, x, y)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numpy_decision_scores(rows: list[dict[str, Any]], with_truth: bool) -> dict[str, Any]:
    """The decision scores as replay computed them before issue #26, row by row with numpy (the oracle)."""
    from tests.estimators.per_flow_scores import decision_scores

    def ratios(ideal_col: str) -> tuple[list[Any], list[Any], list[Any]]:
        r, n, c = [], [], []
        for row in rows:
            s_, i_, nr_ = row["ssthresh_segments"], row[ideal_col], row["newreno_ssthresh_segments"]
            ok = s_ is not None and i_ is not None and i_ > 0
            r.append(s_ / i_ if ok else None)
            n.append(nr_ / i_ if i_ is not None and i_ > 0 and nr_ is not None else None)
            c.append(abs(s_ - i_) < abs(nr_ - i_) if ok and nr_ is not None else None)
        return r, n, c

    out = decision_scores(*ratios("ideal_segments"))
    out["decisions"] = sum(1 for r in rows if r["ssthresh_segments"] is not None)
    if with_truth:
        out.update(decision_scores(*ratios("ideal_truth_segments"), "_truth"))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_the_compiled_decision_scores_are_numpys_to_the_bit(seed: int) -> None:
    """Mean (numpy's pairwise sum), medians and shares of the batched kernel equal the numpy expressions they
    replace exactly, on random rows with missing values, zero ideals and up to 300 events."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))

    def maybe(x: float, p: float = 0.15) -> float | None:
        return None if rng.random() < p else x

    rows = [{"ssthresh_segments": maybe(float(rng.uniform(2, 200))),
             "ideal_segments": maybe(float(rng.choice([0.0, rng.uniform(1, 300)]))),
             "ideal_truth_segments": maybe(float(rng.uniform(1, 300)), 0.3),
             "newreno_ssthresh_segments": maybe(float(rng.uniform(2, 150)))} for _ in range(n)]
    got = decision_scores_of(rows, with_truth=True)
    want = _numpy_decision_scores(rows, with_truth=True)
    assert got == want
