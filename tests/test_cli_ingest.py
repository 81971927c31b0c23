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


def test_flows_json_is_the_text_json_dumps_writes(monkeypatch):
    """``flows --json`` encodes a block of flows a column at a time (issue #26): the text must stay
    ``json.dumps(..., indent=2)``'s, whatever the values — NaN and infinities, None beside numbers, non-ASCII
    and quotes, int and float subclasses, a nested value — across blocks and files, and for no flow."""
    import math
    from dataclasses import replace
    from enum import IntEnum

    from ackreplay.cli import ingest_cmds
    from ackreplay.ingest import ingest_capture

    class Code(IntEnum):
        ONE = 1

    class Ratio(float):
        pass

    flows = ingest_capture(S03).flows
    odd = [replace(flows[0], goodput_bps=math.nan, rttmin_s=None, vantage_position=math.inf),
           replace(flows[1], srtt_s=-math.inf, vantage_evidence='quoted "x" → ✓\\ \n', confidence=None),
           replace(flows[2], packets=Code.ONE, start_t=Ratio(0.1), reconstruction=["a", {"b": None}]),
           replace(flows[3], dsacks=True, sack=1, mss_source=None)]
    # ingest's columns (FlowSummaries, read a column at a time) and lists of summaries (read one by one)
    files = [("a.pcap", [*flows, *odd]), ("dir/b \"c\".pcap", []), ("ü.pcap", [*odd[::-1], *flows]),
             ("cols.pcap", flows), ("part.pcap", flows[1:3])]
    want = json.dumps([{"file": name, **{k: getattr(s, k) for k in ingest_cmds.flow_json_keys()[1:]}}
                       for name, shown in files for s in shown], indent=2)
    for block in (1, 3, 4096):
        monkeypatch.setattr(ingest_cmds, "JSON_BLOCK", block)
        assert "".join(ingest_cmds.flows_json(files)) == want
    assert "".join(ingest_cmds.flows_json([("x", [])])) == json.dumps([], indent=2)
    flow = json.loads(runner.invoke(app, ["flows", str(S03), "--json"]).stdout)[0]
    assert list(flow) == list(ingest_cmds.flow_json_keys())
