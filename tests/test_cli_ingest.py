"""``ackreplay flows`` and ``ackreplay acks``."""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

from ackreplay.cli.main import app
from tests.conftest import SHARED

runner = CliRunner()
S03 = SHARED / "generated" / "s03_cubic_2f_10M_rtt60_buf1bdp.pcapng"


def test_flows_json_lists_every_flow_with_the_documented_keys():
    res = runner.invoke(app, ["flows", str(S03), "--json"])
    assert res.exit_code == 0
    flows = json.loads(res.stdout)
    assert len(flows) == 6
    keys = ["file", "flow_id", "sender", "receiver", "packets", "acks", "dupacks", "retransmissions", "loss_events",
            "goodput_bps", "rttmin_s", "mss", "vantage"]
    assert list(flows[0])[: len(keys)] == keys
    bulk = [f for f in flows if f["bytes"] > 1e6]
    assert [f["sender"] for f in bulk] == ["10.201.1.1:40001", "10.201.1.1:40002"]
    assert [f["retransmissions"] for f in bulk] == [110, 15]


def test_flows_table():
    res = runner.invoke(app, ["flows", str(S03)])
    assert res.exit_code == 0
    assert "pcapng, 26582 packets, 26582 TCP, 4 connections, 6 flows" in res.stdout
    assert "10.201.1.1:40002  10.201.2.1:5202" in res.stdout


def test_flows_within_a_memory_budget_same_flows_and_says_so():
    whole = runner.invoke(app, ["flows", str(S03), "--json"])
    bounded = runner.invoke(app, ["flows", str(S03), "--json", "--memory-budget", "1"])
    assert bounded.exit_code == 0 and json.loads(bounded.stdout) == json.loads(whole.stdout)
    # the connections larger than 1 MiB are analysed in chunks within it: nothing to warn about
    assert "memory budget" not in bounded.stderr
    table = runner.invoke(app, ["flows", str(S03), "--memory-budget", "1"])
    assert "analysed in 4 connection groups (memory budget)" in table.stdout
    bad = runner.invoke(app, ["flows", str(S03), "--memory-budget", "0"])
    assert bad.exit_code == 2 and "memory-budget" in bad.stderr


def test_acks_exports_parquet_and_csv(tmp_path):
    for suffix in ("parquet", "csv"):
        out = tmp_path / f"acks.{suffix}"
        res = runner.invoke(app, ["acks", str(S03), "--flow", "5", "-o", str(out)])
        assert res.exit_code == 0, res.stderr
        frame = pl.read_parquet(out) if suffix == "parquet" else pl.read_csv(out)
        assert len(frame) == 2929
        assert {"t", "t_rel", "acked", "dup", "d", "rtt", "srtt", "rttmin", "flight", "tsval"} <= set(frame.columns)
        assert frame["acked"].sum() == 7312437


def test_acks_unknown_flow_and_bad_suffix(tmp_path):
    res = runner.invoke(app, ["acks", str(S03), "--flow", "42", "-o", str(tmp_path / "a.csv")])
    assert res.exit_code == 4 and "error [unknown_flow]" in res.stderr and "flows: 0, 1, 2, 3, 4, 5" in res.stderr
    res = runner.invoke(app, ["acks", str(S03), "--flow", "2", "-o", str(tmp_path / "a.txt")])
    assert res.exit_code == 2 and "error [bad_output_format]" in res.stderr
