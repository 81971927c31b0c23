"""Issue #27 (1): estimators whose result depends on the ACKs' timing at the sender (BE, CRB) are labelled not
reproducible on every flow not captured at the sender — in the scores (JSON, CSV, the service's rows), the CLI
table and the HTML report, the flow's why lines — and left out of the rankings unless asked."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ackreplay.estimators as E
from ackreplay.cli.main import app
from ackreplay.cli.report import render
from ackreplay.cli.score_table import NOT_REPRODUCIBLE_MARK, score_cells
from ackreplay.cli.wording import explain
from ackreplay.core.capture_scoring import score_file
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE, board
from tests.estimators.per_flow_scores import aggregate

PAIRS = Path(__file__).resolve().parents[1] / "data" / "pairs"
LABELLED = {"be", "crb"}


def test_the_property_is_declared_on_the_estimator_class():
    declared = {n for n in E.names() if E.get(n).depends_on_sender_ack_timing}
    assert declared == LABELLED
    assert E.get("be").not_reproducible("sender") is None
    assert E.get("re").not_reproducible("receiver") is None
    for vantage, where in (("receiver", "the receiver"), ("mid_path", "a tap on the path"), ("unknown", "unknown")):
        why = E.get("crb").not_reproducible(vantage)
        assert why is not None and where in why and "ACKs reached the sender" in why
    assert E.get("be").schema()["depends_on_sender_ack_timing"] is True


@pytest.fixture(scope="module")
def pair():
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    return (score_file(PAIRS / "asym.pcap.gz", ests, use_sidecar=False),
            score_file(PAIRS / "asym_rcv.pcap.gz", ests, use_sidecar=False),
            score_file(PAIRS / "mid_mid.pcap.gz", ests, use_sidecar=False))


def test_scores_and_diagnostics_carry_the_label_off_the_sender_only(pair):
    sender, receiver, tap = pair
    for fr in sender.replay.flows:
        assert not any(NOT_REPRODUCIBLE in s for s in fr.scores.values())
        assert "ack_timing_seen_at" not in fr.diagnostics and NOT_REPRODUCIBLE not in fr.diagnostics
    for sc, vantage in ((receiver, "receiver"), (tap, "mid_path")):
        off = [fr for fr in sc.replay.flows if fr.vantage != "sender"]  # (iperf3's control data is sent from here)
        assert off
        for fr in sc.replay.flows:
            if fr.vantage == "sender":
                assert not any(NOT_REPRODUCIBLE in s for s in fr.scores.values())
                continue
            assert fr.vantage == vantage
            assert {n for n, s in fr.scores.items() if NOT_REPRODUCIBLE in s} == LABELLED
            assert set(fr.diagnostics[NOT_REPRODUCIBLE]) == LABELLED
            assert fr.diagnostics["ack_timing_seen_at"] == vantage
            lines = explain(fr.diagnostics, fr.scores)
            # the share is said to be the capture point's, not reported as if it were the sender's
            assert any(line.startswith("ACK intervals under 100 µs as the ACKs passed") and "not the sender's"
                       in line for line in lines)
            assert sum(line.startswith(("be: not reproducible", "crb: not reproducible")) for line in lines) == 2
        agg = sc.replay.scores
        assert agg["be"]["not_reproducible_flows"] == len(off)
        assert "not_reproducible_flows" not in agg["re"] and isinstance(agg["be"]["mean_bps"], float)


def test_the_table_marks_them_and_never_stars_them(pair):
    _, receiver, _ = pair
    fr = next(f for f in receiver.replay.flows if f.flow_id == 2)
    names, _, cells = score_cells(fr.scores, False)
    assert [n for n in names if n.endswith(NOT_REPRODUCIBLE_MARK)] == [n + NOT_REPRODUCIBLE_MARK for n in ("be", "crb")]
    for n, row in zip(names, cells, strict=True):
        if n.endswith(NOT_REPRODUCIBLE_MARK):
            assert not any(c.endswith("*") for c in row), n
    html = render([receiver])
    assert html.count(NOT_REPRODUCIBLE_MARK.strip()) >= 2 and "be: not reproducible from this vantage" in html


def test_json_and_csv_label_them_per_estimator():
    rcv = str(PAIRS / "asym_rcv.pcap.gz")
    runner = CliRunner()
    doc = json.loads(runner.invoke(app, ["score", rcv, "--format", "json", "--no-sidecar"]).stdout)
    flow = next(f for f in doc["captures"][0]["flows"] if f["flow_id"] == 2)
    assert {n for n, s in flow["scores"].items() if s.get(NOT_REPRODUCIBLE)} == LABELLED
    text = runner.invoke(app, ["score", rcv, "--format", "csv", "--no-sidecar"]).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    labelled = {r["estimator"] for r in rows if r["flow_id"] == "2" and r[NOT_REPRODUCIBLE]}
    assert labelled == LABELLED


def test_rankings_leave_them_out_unless_asked(pair):
    sender, receiver, _ = pair
    per_flow = {(str(sc.path), fr.flow_id): fr.scores for sc in (sender, receiver) for fr in sc.replay.flows
                if fr.flow_id == 2}
    assert len(per_flow) == 2
    default = board(per_flow)
    assert default["left_out"] == {"be": 1, "crb": 1} and default["include_not_reproducible"] is False
    comp = default["scores"]["composite_error"]["estimators"]
    assert comp["be"]["flows"] == 1 and comp["re"]["flows"] == 2  # the sender side's BE alone
    asked = board(per_flow, include_not_reproducible=True)
    assert asked["scores"]["composite_error"]["estimators"]["be"]["flows"] == 2
    assert asked["left_out"] == {"be": 1, "crb": 1}
    # only receiver-side flows: BE is in no ranking at all
    only_rcv = board({k: v for k, v in per_flow.items() if "rcv" in k[0]})["scores"]["composite_error"]
    assert "rank" not in only_rcv["estimators"]["be"] and only_rcv["estimators"]["be"]["wins"] == 0
    # the CLI's combined summary says so, and ranks them with the flag
    runner = CliRunner()
    files = [str(PAIRS / "asym.pcap.gz"), str(PAIRS / "asym_rcv.pcap.gz")]
    out = runner.invoke(app, ["score", *files, "--no-sidecar", "--no-legend"]).stdout
    assert "left out as not reproducible" in out
    out = runner.invoke(app, ["score", *files, "--no-sidecar", "--no-legend", "--rank-not-reproducible"]).stdout
    assert "ranked as asked (--rank-not-reproducible)" in out


def test_aggregate_counts_the_label_instead_of_averaging_it():
    got = aggregate([{"mean_bps": 1.0, NOT_REPRODUCIBLE: "why"}, {"mean_bps": 3.0}])
    assert got == {"flows": 2, "not_reproducible_flows": 1, "mean_bps": 2.0}


def test_compare_leaves_them_out_unless_asked():
    files = [str(PAIRS / "asym.pcap.gz"), str(PAIRS / "asym_rcv.pcap.gz")]
    runner = CliRunner()
    out = runner.invoke(app, ["compare", *files]).stdout
    assert "left out as not reproducible from their vantage" in out and "be on 1 flow(s)" in out
    out = runner.invoke(app, ["compare", *files, "--rank-not-reproducible"]).stdout
    assert "ranked as asked (--rank-not-reproducible)" in out


@pytest.mark.parametrize("capture", sorted(p.name for p in PAIRS.glob("*_*.pcap.gz")))
def test_every_flow_of_the_testbed_pairs_is_labelled_exactly_off_the_sender(capture):
    """Issue #27's acceptance: on every receiver-side and tapped capture kept in tests/data/pairs, every replayed
    flow not captured at its sender carries the label for BE and CRB (and only for them); sender flows none."""
    sc = score_file(PAIRS / capture, [E.create(n) for n in E.DEFAULT_ORDER], use_sidecar=False, allow_vantage=True)
    off = 0
    for fr in sc.replay.flows:
        labelled = {n for n, s in fr.scores.items() if NOT_REPRODUCIBLE in s}
        assert labelled == (LABELLED if fr.vantage != "sender" else set()), (capture, fr.flow_id, fr.vantage)
        off += fr.vantage != "sender"
    assert off >= 1
