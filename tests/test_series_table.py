"""``replay.results.series_table``: the kept series of many flows as one table, rates in bit/s with NaN as null,
the flows' own columns untouched (the table is built a column at a time, multiplied in place)."""

from __future__ import annotations

import numpy as np
import polars as pl

from ackreplay.replay.results import FlowReplay, series_table


def flow(flow_id: int, be: list[float]) -> FlowReplay:
    n = len(be)
    cols = {"t": np.arange(n, dtype=float) + flow_id, "t_rel": np.arange(n, dtype=float),
            "achieved": np.full(n, 1000.0), "be": np.array(be)}
    return FlowReplay(flow_id, "sender", cols, (0.0, float(n)), events=n)


def test_series_table_joins_the_flows_in_bits_per_second_with_nan_as_null():
    flows = [flow(3, [125.0, float("nan")]), FlowReplay(4, "sender", None, (0.0, 1.0)), flow(7, [0.5, 250.0, 1e9])]
    kept = {f.flow_id: {k: v.copy() for k, v in f.columns.items()} for f in flows if f.columns is not None}
    table = series_table(flows)
    assert table.columns == ["t", "t_rel", "achieved_bps", "be_bps", "flow_id"]
    assert table.schema["flow_id"] == pl.Int32 and table.schema["be_bps"] == pl.Float64
    assert table["flow_id"].to_list() == [3, 3, 7, 7, 7]
    assert table["t"].to_list() == [3.0, 4.0, 7.0, 8.0, 9.0]
    assert table["achieved_bps"].to_list() == [8000.0] * 5
    assert table["be_bps"].to_list() == [1000.0, None, 4.0, 2000.0, 8e9]
    for f in flows:  # (the multiplication was on the joined copy)
        if f.columns is not None:
            for k, v in f.columns.items():
                np.testing.assert_array_equal(v, kept[f.flow_id][k])


def test_no_flow_with_series_is_an_empty_table():
    assert series_table([FlowReplay(1, "sender", None, (0.0, 1.0))]).shape == (0, 0)
