"""Receiver-side captures rebuilt as the sender saw them (ESTIMATORS.md §7, issue #10).

The same flow captured at both ends (shared capture s06: sender and receiver side) must score alike
from either side; hand-built receiver-side conversations check the mechanics (RTT from TSval echoes,
flight from the data that arrives within one srtt) and that a flow without the evidence is not replayed
by default.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ackreplay.estimators as E
from ackreplay.core.scoring import score_file
from ackreplay.ingest import ingest_capture
from tests import pcapgen as g
from tests.conftest import SHARED

S06 = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides.pcap"
S06_RCV = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides_rcv.pcap"
MSS = 1000


def _bulk(path):
    sc = score_file(path, [E.create(n) for n in E.DEFAULT_ORDER], use_sidecar=False)  # no --allow-vantage
    (flow,) = [f for f in sc.ingest.flows if f.bytes > 1_000_000]
    (rep,) = [r for r in sc.replay.flows if r.flow_id == flow.flow_id]
    return sc, flow, rep


def test_s06_receiver_side_is_rebuilt_replayed_by_default_and_scores_like_the_sender_side():
    _, s_flow, s_rep = _bulk(S06)
    _, r_flow, r_rep = _bulk(S06_RCV)
    assert (s_flow.vantage, r_flow.vantage) == ("sender", "receiver")
    assert r_flow.reconstruction == "receiver_side" and r_flow.reconstruction_sound
    assert r_flow.confidence == "medium" and "return path" in r_flow.confidence_note
    # RTTs as the sender saw them (the receiver's own data→ACK time is a few µs)
    assert r_flow.rttmin_s == pytest.approx(s_flow.rttmin_s, rel=0.05)
    assert r_flow.srtt_s == pytest.approx(s_flow.srtt_s, rel=0.10)
    assert r_flow.loss_events == pytest.approx(s_flow.loss_events, rel=0.10)
    for name, s in s_rep.scores.items():
        r = r_rep.scores[name]
        assert r["decisions"] == pytest.approx(s["decisions"], rel=0.10), name
        if name == "be":
            continue  # return-path ACK compression, invisible at the receiver: below
        assert r["mean_bps"] == pytest.approx(s["mean_bps"], rel=0.10), name
    # BE (Tustin with pairing) over-estimates on ACKs that arrive compressed: the sender side has 3× the
    # sub-100 µs ACK intervals of the receiver side (the return path bunched them) and BE's mean is 30 %
    # higher there; from the receiver, that compression cannot be seen (documented in docs/ingest.md).
    share = {}
    for path, flow in ((S06, s_flow), (S06_RCV, r_flow)):
        t = ingest_capture(path).acks.filter(pl.col("flow_id") == flow.flow_id)["t_ns"].to_numpy()
        share[path] = float((np.diff(t) < 100_000).mean())
    assert share[S06] > 2 * share[S06_RCV]
    assert s_rep.scores["be"]["mean_bps"] > r_rep.scores["be"]["mean_bps"]


def receiver_side(ts: bool, n: int = 200, rtt_ms: int = 40) -> g.Conv:
    """A capture at the receiver: data segment i arrives at 11 + i ms, its ACK leaves 0.05 ms later. With
    timestamps, ACK i carries TSval 1000 + i and the data arriving at 11 + i ms echoes the ACK that left
    ``rtt_ms`` earlier (the sender sent it when that ACK reached it)."""
    conv = g.Conv()
    for i in range(n):
        echo = 1000 + i - rtt_ms if i >= rtt_ms else 0
        conv.send(11 + i, i * MSS, MSS, opts=g.opt_ts(500 + i, echo) if ts else b"")
        conv.ack(11 + i + 0.05, (i + 1) * MSS, opts=g.opt_ts(1000 + i, 500 + i) if ts else b"")
    return conv


def test_receiver_side_rtt_and_flight_rebuilt_from_tsval_echoes(tmp_capture):
    cap = ingest_capture(tmp_capture(receiver_side(ts=True).pcap()))
    (flow,) = [f for f in cap.flows if f.sender.endswith(":40000")]
    assert flow.vantage == "receiver" and flow.reconstruction_sound
    acks = cap.acks.filter(pl.col("flow_id") == flow.flow_id)
    steady = acks.slice(40, 200 - 80)  # a full window of data echoes behind and ahead
    assert steady["rtt"].to_numpy() == pytest.approx(0.040, abs=1e-6)  # one round trip, not 0.05 ms
    assert steady["flight"].to_list() == [40 * MSS] * len(steady)  # the data that left before the ACK arrived
    assert flow.rttmin_s == pytest.approx(0.040, abs=1e-6)


def test_receiver_side_without_timestamps_or_handshake_is_not_replayed_unless_asked(tmp_capture):
    path = tmp_capture(receiver_side(ts=False).pcap())
    ests = [E.create("be"), E.create("re")]
    sc = score_file(path, ests, use_sidecar=False)
    (flow,) = [f for f in sc.ingest.flows if f.sender.endswith(":40000")]
    assert flow.vantage == "receiver" and flow.reconstruction == "receiver_side" and not flow.reconstruction_sound
    assert "without usable timestamps and without the handshake" in sc.replay.skipped[flow.flow_id]
    forced = score_file(path, ests, use_sidecar=False, allow_vantage=True)
    assert [f.flow_id for f in forced.replay.flows] == [flow.flow_id]


# ---- pairs made with the capture testbed (tests/data/pairs/README.md): both ends of the same flows

PAIRS = Path(__file__).resolve().parents[1] / "data" / "pairs"
#: Estimators whose receiver-side mean may miss the sender side's by more than 10 %, and why (asserted below):
#: BE's paired Tustin filter turns the ACK compression of the return path into over-estimates, and CRB
#: uses BE whenever it classifies the path as uncongested; from the receiver, that compression is unseen.
RETURN_PATH_COMPRESSION = {"be", "crb"}


def _pair_scores(name: str):
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    s = score_file(PAIRS / f"{name}.pcap.gz", ests, use_sidecar=False)
    r = score_file(PAIRS / f"{name}_rcv.pcap.gz", ests, use_sidecar=False)  # default: no --allow-vantage
    key = {f.flow_id: (f.sender, f.receiver) for f in r.ingest.flows}
    out = []
    for sf in s.ingest.flows:
        if sf.bytes < 1_000_000:
            continue  # iperf3's control connections
        (rf,) = [f for f in r.ingest.flows if key[f.flow_id] == (sf.sender, sf.receiver)]
        srep = next(x for x in s.replay.flows if x.flow_id == sf.flow_id)
        rrep = [x for x in r.replay.flows if x.flow_id == rf.flow_id]
        out.append((sf, rf, srep, rrep[0] if rrep else None, s, r))
    return out


@pytest.mark.parametrize("name", ["asym", "dloss", "aloss", "two", "nosack"])
def test_testbed_pairs_with_timestamps_score_alike_from_either_end(name):
    """Asymmetric delay (10/30 ms), 1 % random data loss, 5 % random ACK loss, two flows (cubic and reno),
    SACK off: every receiver-side bulk flow is rebuilt, replayed by default, has the sender side's loss
    events within 10 % and each estimator's mean within 10 % (BE and CRB: see RETURN_PATH_COMPRESSION)."""
    pairs = _pair_scores(name)
    assert pairs
    for sf, rf, srep, rrep, s, r in pairs:
        assert rf.vantage == "receiver" and rf.reconstruction_sound and rf.confidence == "medium"
        assert rrep is not None, r.replay.skipped
        assert rf.loss_events == pytest.approx(sf.loss_events, rel=0.10, abs=0.5)
        assert rf.rttmin_s == pytest.approx(sf.rttmin_s, rel=0.05)
        for est, sc in srep.scores.items():
            if est in RETURN_PATH_COMPRESSION:
                continue
            assert rrep.scores[est]["mean_bps"] == pytest.approx(sc["mean_bps"], rel=0.10), (name, est)
            assert rrep.scores[est]["decisions"] == pytest.approx(sc["decisions"], rel=0.10, abs=0.5), (name, est)
        # the exception's cause: more sub-100 µs ACK intervals where the ACKs arrive than where they leave
        gaps = {}
        for cap, flow in ((s, sf), (r, rf)):
            t = cap.ingest.acks.filter(pl.col("flow_id") == flow.flow_id)["t_ns"].to_numpy()
            gaps[cap is s] = float((np.diff(t) < 100_000).mean())
        assert gaps[True] > gaps[False]
        assert srep.scores["be"]["mean_bps"] > rrep.scores["be"]["mean_bps"]


def test_testbed_pair_without_timestamps_is_replayed_with_low_confidence():
    """No timestamps and a sender never held by the receive window (Linux autotuning): RTT samples cannot be
    timed from the receiver, so they are held at the handshake's round trip (queueing delay unseen) —
    replayed by default but labelled low confidence; the rate-only estimators still agree."""
    ((sf, rf, srep, rrep, _, _),) = _pair_scores("nots")
    assert rf.reconstruction_sound and rf.confidence == "low" and "handshake" in rf.reconstruction_evidence
    assert rrep is not None
    assert rf.srtt_s == pytest.approx(rf.rttmin_s, rel=0.01) and rf.srtt_s < 0.6 * sf.srtt_s  # base RTT, no queueing
    for est in ("tibet", "tibet_tx"):
        assert rrep.scores[est]["mean_bps"] == pytest.approx(srep.scores[est]["mean_bps"], rel=0.10)


@pytest.mark.parametrize("name", ["mid", "midloss"])
def test_testbed_mid_path_taps_score_like_the_sender_side(name):
    """A tap between two delay stages (testbed/run_scenario.sh --tap-delay: 15/15 ms on the sender's side of
    a 10/10 ms router; and 5/20 ms with 1 % data loss): classified mid_path from the handshake split,
    rebuilt, replayed by default, with the sender side's RTTmin and loss events and every estimator's
    mean within 10 % — BE and CRB aside (ACK spacing differs at the tap)."""
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    s = score_file(PAIRS / f"{name}.pcap.gz", ests, use_sidecar=False)
    m = score_file(PAIRS / f"{name}_mid.pcap.gz", ests, use_sidecar=False)
    (sf,) = [f for f in s.ingest.flows if f.bytes > 1_000_000]
    (mf,) = [f for f in m.ingest.flows if (f.sender, f.receiver) == (sf.sender, sf.receiver)]
    assert mf.vantage == "mid_path" and mf.reconstruction == "mid_path" and mf.reconstruction_sound
    assert "tap" in mf.vantage_evidence and "handshake split at the tap" in mf.reconstruction_evidence
    assert mf.rttmin_s == pytest.approx(sf.rttmin_s, rel=0.05)
    assert mf.loss_events == sf.loss_events
    srep = next(x for x in s.replay.flows if x.flow_id == sf.flow_id)
    mrep = next(x for x in m.replay.flows if x.flow_id == mf.flow_id)
    for est, sc in srep.scores.items():
        if est in RETURN_PATH_COMPRESSION:
            continue
        assert mrep.scores[est]["mean_bps"] == pytest.approx(sc["mean_bps"], rel=0.10), (name, est)
        assert abs(mrep.scores[est]["decisions"] - sc["decisions"]) <= 1, (name, est)


def test_every_bulk_data_flow_of_the_public_captures_is_replayed_by_default():
    """Issue #10: real-world traces give a table. Every flow of the public captures carrying 64 kB or more
    with at least two ACKs is replayed without --allow-vantage (sender side, or rebuilt)."""
    ests = [E.create("re"), E.create("tibet")]
    for path in sorted((SHARED / "public").iterdir()):
        sc = score_file(path, ests, use_sidecar=False)
        replayed = {f.flow_id for f in sc.replay.flows}
        for f in sc.ingest.flows:
            if f.bytes >= 65536 and f.acks >= 2:
                assert f.flow_id in replayed, (path.name, f.flow_id, sc.replay.skipped.get(f.flow_id))
