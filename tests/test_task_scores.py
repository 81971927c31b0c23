"""A capture's aggregate from its replay tasks' stored score columns (``core.task_scores``, what the service now
finishes a capture with) is the aggregate ``ackreplay score`` computes from the batches' columns, however the
flows are split among tasks; and is what the old aggregation over each flow's stored score dictionary gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ackreplay.estimators as E
import ackreplay.replay.capture as C
from ackreplay.core.capture_scoring import jsonable
from ackreplay.core.storage import Store
from ackreplay.core.task_scores import capture_score_columns, task_scores_frame
from ackreplay.ingest import ingest_capture
from tests.conftest import SHARED
from tests.valuecompare import differences

CAPTURE = SHARED / "generated/s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"


@pytest.mark.parametrize("tasks", [1, 2, 3])
def test_the_aggregate_of_the_tasks_score_columns_is_the_clis(tasks: int, tmp_path: Path) -> None:
    cap = ingest_capture(CAPTURE)
    ests = [E.create(n) for n in E.DEFAULT_ORDER] + [E.create("be", tau=0.25).renamed("be[tau=0.25]")]
    names = [e.name for e in ests]
    rep = C.replay_capture(cap, ests, allow_vantage=True)
    ids = np.array([f.flow_id for f in rep.flows], np.int64)
    assert len(ids) >= 3
    frames = []
    for part in np.array_split(np.arange(len(ids)), tasks):  # each "task" replays its flows alone
        mine = {int(ids[i]) for i in part}
        task = C.replay_capture(cap, ests, allow_vantage=True, only=mine)
        blob = Store.parquet_bytes(task_scores_frame(task.batches, names))  # (through Parquet, as stored)
        (tmp_path / "t.parquet").write_bytes(blob)
        frames.append(pl.read_parquet(tmp_path / "t.parquet"))
    got_ids, columns = capture_score_columns(frames[::-1], names)  # (in any order: sorted by flow)
    assert got_ids.tolist() == ids.tolist()
    bulk = C.bulk_flows(cap.flows, None)
    assert not list(differences(jsonable(C.capture_aggregate(got_ids, columns, bulk)), jsonable(rep.scores)))
    per_flow = {n: C.flow_score_columns([jsonable(f.scores[n]) for f in rep.flows]) for n in names}
    assert not list(differences(jsonable(C.capture_aggregate(ids, per_flow, bulk)),
                                jsonable(C.capture_aggregate(got_ids, columns, bulk))))


def test_no_task_no_flows() -> None:
    ids, columns = capture_score_columns([], ["be", "re"])
    assert len(ids) == 0 and set(columns) == {"be", "re"}
    out = C.capture_aggregate(ids, columns, pl.DataFrame({"flow_id": [], "goodput_bps": []}))
    assert out["be"] == {"flows": 0} and out["fairness"]["be"] is None
