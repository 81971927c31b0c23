"""The what-if's inputs: which algorithms it accepts, the path's figures and ranges (or the refusal naming the
figure), the captured sender's control from the capture's metadata."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from ackreplay.whatif.algorithms import ALGORITHMS, check_algorithms
from ackreplay.whatif.captured import (
    DEFAULT_SENDER,
    MAX_IDLE_SHARE,
    CapturedFlow,
    SenderControl,
    ns3_competitor,
    sender_control,
)
from ackreplay.whatif.cross import CrossFlow, cross_flows, metadata_cross
from ackreplay.whatif.errors import WhatIfError
from ackreplay.whatif.figures import SPREAD, buffer_seen, off_level_loss, path_range
from ackreplay.whatif.runs import (
    NS3_OVERHEAD,
    PACED_HYSTART,
    run_one,
    self_check,
    sender_params,
    sim_config,
    what_if,
)
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
PATH: dict[str, Any] = {"capacity_bps": 10e6, "base_rtt_s": 0.04, "buffer_bytes": 12500.0, "random_loss_rate": 0.001,
        "confidence": "high", "evidence": {}}


def test_the_controls_are_accepted_and_westwood_means_westwood_plus() -> None:
    assert check_algorithms(["cubic", "Westwood", "westwood_plus", "newreno"]) == ["cubic", "westwood_plus", "newreno"]
    assert check_algorithms(list(ALGORITHMS)) == list(ALGORITHMS)


def test_the_westwood_family_is_accepted_to_decide_in_the_loop() -> None:
    assert check_algorithms(["tibet", "BE", "newbr", "cubic"]) == ["tibet", "be", "newbr", "cubic"]


def test_bbr_is_accepted_and_bbr_bw_means_bbr() -> None:
    """BBR runs whole in the loop (sim/bbr.py); ``bbr_bw``, the replay's name of its bandwidth filter, asks for it.
    It is not among the default runs (the loss-based controls)."""
    assert check_algorithms(["bbr_bw", "cubic", "BBR"]) == ["bbr", "cubic"]
    assert "bbr" not in ALGORITHMS


def test_what_cannot_be_in_control_is_refused_with_what_is_accepted() -> None:
    with pytest.raises(WhatIfError) as err:
        check_algorithms(["cubic", "vegas"])
    assert err.value.code == "unknown_algorithm" and "unknown algorithm 'vegas'" in err.value.message
    assert "accepted: newreno, westwood_plus, cubic, bic, stcp, hstcp, htcp, bbr, abse, re, be" in err.value.message
    assert "bbr_bw" not in err.value.message


def test_the_path_gives_the_link_and_each_figure_its_calibrated_range() -> None:
    rng = path_range(PATH, mss=1448, overhead_bytes=66)
    link = rng.central.link()
    assert (link.rate_bps, link.buffer_bytes, link.loss, link.overhead_bytes) == (10e6, 12500, 0.001, 66)
    assert rng.central.payload_bps == pytest.approx(10e6 * 1448 / 1514)
    for key, spread in SPREAD.items():
        lo, hi = rng.ends[key]
        assert lo == pytest.approx(PATH[key] * (1 - spread)) and hi == pytest.approx(PATH[key] * (1 + spread))
    tags = [tag for tag, _ in rng.variants()]
    assert len(tags) == 8 and "capacity_bps:low" in tags and "random_loss_rate:high" in tags
    moved = dict(rng.variants())["buffer_bytes:high"]
    assert moved.buffer_bytes == pytest.approx(12500 * 1.25) and moved.capacity_bps == 10e6


@pytest.mark.parametrize(("change", "code", "named"), [
    ({"buffer_bytes": None}, "path_incomplete", "buffer_bytes"),
    ({"capacity_bps": None, "base_rtt_s": None}, "path_incomplete", "capacity_bps, base_rtt_s"),
    ({"confidence": "low"}, "path_low_confidence", "confidence is low"),
])
def test_an_incomplete_or_unsure_path_is_refused_naming_the_figure(change: dict, code: str, named: str) -> None:
    path = {**PATH, **change, "evidence": {"buffer_bytes": "null: no loss in the capture, so the buffer never "
                                                           "overflowed"}}
    with pytest.raises(WhatIfError) as err:
        path_range(path, mss=1448, overhead_bytes=66)
    assert err.value.code == code and named in err.value.message
    if "buffer_bytes" in change:
        assert "no loss in the capture" in err.value.message
    with pytest.raises(WhatIfError) as err:
        path_range(None, mss=1448, overhead_bytes=66)
    assert err.value.code == "path_incomplete"


def test_the_flows_sharing_the_bottleneck_are_cross_traffic_from_their_start() -> None:
    me = {"flow_id": 1, "sender": "10.0.0.1:40001", "start_t": 100.0}
    others = [{"flow_id": 3, "sender": "10.0.0.1:40003", "start_t": 98.5},
              {"flow_id": 5, "sender": "10.0.0.1:40005", "start_t": 104.0}]
    controls = {"10.0.0.1:40003": SenderControl("newreno", "metadata"), "10.0.0.1:40005": SenderControl("cubic", "x")}
    cross = cross_flows(me, others, controls.__getitem__)
    assert [(c.flow_id, c.control, c.offset_s) for c in cross] == [(3, "newreno", -1.5), (5, "cubic", 4.0)]
    bbr = cross_flows(me, others, lambda _: SenderControl("bbr", "the capture's metadata"))
    assert [c.control for c in bbr] == ["bbr", "bbr"]
    with pytest.raises(WhatIfError) as err:
        cross_flows(me, others, lambda _: SenderControl("vegas", "given"))
    assert err.value.code == "shared_bottleneck" and "flow 3" in err.value.message and "vegas" in err.value.message


def test_cross_flows_from_a_pacing_senders_host_pace() -> None:
    """Pacing is the host's (its qdisc, its sockets' default control): a flow sent from the captured sender's host
    paces when that sender did; one from another host, or beside a sender that did not pace, does not."""
    me = {"flow_id": 1, "sender": "10.0.0.1:40001", "start_t": 0.0}
    others = [{"flow_id": 3, "sender": "10.0.0.1:40003", "start_t": 0.0},
              {"flow_id": 5, "sender": "10.0.0.2:40005", "start_t": 0.0}]
    ctl = lambda _: SenderControl("cubic", "x")  # noqa: E731
    assert [c.paced for c in cross_flows(me, others, ctl, paced=True)] == [True, False]
    assert [c.paced for c in cross_flows(me, others, ctl)] == [False, False]


def test_a_paced_linux_sender_runs_paced_with_the_current_hystart_rounds() -> None:
    """Paced: every Linux sender paces, CUBIC with HyStart's rounds from the first ACK (``hystart`` 2); ns-3
    senders keep ns-3's stack, unpaced senders the engine's defaults. Pacing moves the run."""
    assert sender_params("cubic", ns3=False, paced=True) == {"hystart": PACED_HYSTART}
    assert sender_params("newreno", ns3=False, paced=True) == {}
    assert sender_params("cubic", ns3=False, paced=False) == {}
    assert sender_params("cubic", ns3=True, paced=True) == {"ns3": 1.0}
    fig = path_range(PATH, mss=1448, overhead_bytes=66).central
    plain, _ = run_one(fig, "newreno", 5.0, 1)
    paced_run, _ = run_one(replace(fig, paced=True), "newreno", 5.0, 1)
    assert paced_run.segments_sent != plain.segments_sent or paced_run.loss_events != plain.loss_events


def test_cross_traffic_takes_its_share_from_its_start() -> None:
    """Two CUBIC flows, the other starting 1 s earlier, on 10 Mbit/s: each gets about half after the first
    seconds; alone, the flow's share is 1."""
    fig = path_range(PATH, mss=1448, overhead_bytes=66).central
    alone, share_alone = run_one(fig, "cubic", 20.0, 1)
    shared, share = run_one(fig, "cubic", 20.0, 1, cross=[CrossFlow(3, "cubic", "x", -1.0)])
    assert share_alone == 1.0 and 0.3 < share < 0.6
    assert shared.goodput_bps < 0.7 * alone.goodput_bps


def test_a_null_random_loss_beside_overflows_is_zero_up_to_the_off_level_losses() -> None:
    level = 12500 * 8 / 10e6  # the overflow level's queueing delay
    high = off_level_loss([level, level * 1.05, level * 0.2, math.nan], [2, 3, 4, 1], 12500, 10e6, 1000)
    assert high == pytest.approx(5 / 1000)  # the episode at 0.2× and the one without a queue figure
    # over the segments whose fate shows: less those the two episodes at the level decide
    exposed = off_level_loss([level, level * 1.05, level * 0.2, math.nan], [2, 3, 4, 1], 12500, 10e6, 1000,
                             [120, 80, 30, 20])
    assert exposed == pytest.approx(5 / 800)
    # the episodes at the level decide every segment: nothing bounds the rate (not 5 / 5)
    assert off_level_loss([level, level * 0.2], [2, 5], 12500, 10e6, 1000, [1000, 0]) is None
    assert off_level_loss([level], [2], None, 10e6, 1000) is None
    rng = path_range({**PATH, "random_loss_rate": None}, mss=1448, overhead_bytes=66, random_loss_high=high)
    assert rng.central.random_loss_rate == 0.0 and rng.ends["random_loss_rate"] == (0.0, high)
    assert "random_loss_rate" in rng.assumed
    with pytest.raises(WhatIfError, match="random_loss_rate"):
        path_range({**PATH, "random_loss_rate": None}, mss=1448, overhead_bytes=66)


def test_the_sender_control_comes_from_the_option_the_metadata_or_linuxs_default(tmp_path) -> None:
    testbed = DATA / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz"
    got = sender_control(testbed, "10.223.1.1:40001")
    assert (got.algorithm, got.ns3) == ("cubic", False) and "cubic_1f_10M_rtt40_buf025bdp.json" in got.source
    assert sender_control(testbed.with_name("cubic_1f_10M_rtt40_buf025bdp_rcv.pcap.gz"), "x:40001").algorithm == "cubic"
    reno = sender_control(DATA / "limits" / "reno_bulk.pcap.gz", "10.0.0.1:1")
    assert reno.algorithm == "newreno"
    bic = sender_control(DATA / "ns3" / "bic_1f_bdp1.pcap.gz", "10.1.1.1:49153")
    assert (bic.algorithm, bic.ns3) == ("bic", True)
    competitor = sender_control(DATA / "ns3" / "cubic_2f_bdp1.newreno.pcap.gz", "10.1.2.1:49153")
    assert competitor.algorithm == "newreno"
    assert sender_control(testbed, "x:1", "Reno") == SenderControl("newreno", "given", False)
    # a control given for an ns-3 capture runs on ns-3's stack, with ns-3's H-TCP and CUBIC
    assert sender_control(DATA / "ns3" / "htcp_1f_bdp1.pcap.gz", "x:1", "htcp") == SenderControl("htcp", "given", True)
    bare = tmp_path / "x.pcap"
    bare.write_bytes(b"")
    assert sender_control(bare, "x:1").algorithm == DEFAULT_SENDER == "cubic"
    assert "assumed" in sender_control(bare, "x:1").source


def test_the_captured_flow_is_measured_as_the_simulation_measures() -> None:
    c = CapturedFlow.of({"delivery_rate_bps": 8e6, "bytes": 20_000_000, "data_segments": 10_000,
                         "retransmissions": 30, "loss_events": 10})
    assert c.span_s == pytest.approx(20.0) and c.loss_rate == pytest.approx(0.003)
    assert c.loss_event_rate == pytest.approx(0.5) and c.share == 1.0
    shared = CapturedFlow.of({"delivery_rate_bps": 8e6, "bytes": 3000}, [{"bytes": 1000}, {"bytes": 2000}])
    assert shared.share == pytest.approx(0.5)


def test_the_flow_a_two_flow_ns3_capture_leaves_out_is_its_cross_traffic() -> None:
    """Each capture of an ns-3 pair holds one flow; the metadata names the other and the scenario starts it 0.5 s
    after the first."""
    [other] = metadata_cross(DATA / "ns3" / "cubic_2f_bdp1.pcap.gz")
    assert (other.flow_id, other.control, other.offset_s) == (None, "newreno", 0.5)
    assert "cubic_2f_bdp1.ns3.json" in other.source and other.as_dict()["flow_id"] is None
    [first] = metadata_cross(DATA / "ns3" / "cubic_2f_bdp1.newreno.pcap.gz")
    assert (first.control, first.offset_s) == ("cubic", -0.5)
    mine = ns3_competitor(DATA / "ns3" / "cubic_2f_bdp1.pcap.gz")
    assert mine is not None and mine.captured_share == pytest.approx(18889160 / (18889160 + 4852248))
    theirs = ns3_competitor(DATA / "ns3" / "cubic_2f_bdp1.newreno.pcap.gz")
    assert theirs is not None and theirs.captured_share == pytest.approx(4852248 / (18889160 + 4852248))
    assert metadata_cross(DATA / "ns3" / "cubic_1f_bdp1.pcap.gz") == []
    assert metadata_cross(DATA / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz") == [] == metadata_cross(None)


def test_an_ns3_sender_runs_with_ns3s_stack() -> None:
    cfg = sim_config(5.0, 1448, 1, ns3=True)
    assert cfg.ns3_ack_counting and cfg.min_rto_s == 1.0 and cfg.delack_timeout_s == 0.2
    assert not sim_config(5.0, 1448, 1, ns3=False).ns3_ack_counting and NS3_OVERHEAD == 54
    fig = path_range(PATH, mss=1448, overhead_bytes=66).central
    linux, _ = run_one(fig, "bic", 5.0, 1)
    ns3, _ = run_one(fig, "bic", 5.0, 1, ns3=True)
    assert ns3.delivered_bytes != linux.delivered_bytes


@pytest.mark.parametrize(("shares", "withheld"), [({"cwnd": 0.6, "app": 0.4}, False),
                                                  ({"cwnd": 0.3, "app": 0.3, "rwnd": 0.2, "sndbuf": 0.2}, True),
                                                  (None, False)])
def test_a_sender_not_limited_by_the_network_is_withheld_as_not_bulk(shares: dict[str, float] | None,
                                                                     withheld: bool) -> None:
    captured = CapturedFlow.of({"delivery_rate_bps": 8e6, "bytes": 2_000_000, "data_segments": 1400,
                                "retransmissions": 3, "loss_events": 2}, limits=shares)
    rng = path_range(PATH, mss=1448, overhead_bytes=66)
    check = self_check(rng, captured, SenderControl("cubic", "given"), 1)
    assert (check.code == "sender_not_bulk") is withheld
    if withheld:
        assert not check.passed and check.goodput_ratio is None and "the application 30 %" in check.reason
        doc = what_if(rng, captured, SenderControl("cubic", "given"), ["newreno"]).as_dict()
        assert doc["results"] == {} and doc["withheld_code"] == "sender_not_bulk"
        assert doc["withheld"].startswith("the sender cannot be re-enacted: the sender was not limited by the network")
    else:
        assert check.goodput_ratio is not None


@pytest.mark.parametrize(("idle", "withheld"), [(0.05, False), (0.09, False), (0.10, True), (0.2, True),
                                                (None, False)])
def test_a_sender_idle_beyond_the_goodput_tolerance_is_withheld_as_not_bulk(idle: float | None,
                                                                            withheld: bool) -> None:
    """Idle for a share s of its time, a flow gets 1/(1 − s) of its goodput from a sender with a backlog: beyond
    the 10 % goodput tolerance from s = 1/11 on, whatever its limit labels say."""
    captured = CapturedFlow.of({"delivery_rate_bps": 8e6, "bytes": 2_000_000, "data_segments": 1400,
                                "retransmissions": 3, "loss_events": 2}, limits={"cwnd": 0.7, "app": 0.3},
                               idle_share=idle)
    assert abs(MAX_IDLE_SHARE - 1 / 11) < 1e-12
    check = self_check(path_range(PATH, mss=1448, overhead_bytes=66), captured, SenderControl("cubic", "given"), 1)
    assert (check.code == "sender_not_bulk") is withheld
    assert (check.goodput_ratio is None) is withheld
    assert ("idle" in check.reason) is withheld
    assert captured.as_dict(1e7)["idle_share"] == idle


def test_a_buffer_bounded_below_only_is_taken_at_its_bound_with_a_range_one_bdp_deeper() -> None:
    """No loss followed a full queue: the buffer is at least the deepest queue the flow built. The what-if runs at
    that bound (the self-check too) and its buffer range reaches one BDP (10 Mbit/s × 40 ms = 50 kB) deeper; the
    document says so under ``assumed``. Capacity or base RTT missing is still refused."""
    rng = path_range({**PATH, "buffer_bytes": None}, mss=1448, overhead_bytes=66, buffer_low=20000.0)
    assert rng.central.buffer_bytes == 20000.0 and rng.ends["buffer_bytes"] == pytest.approx((20000.0, 70000.0))
    assert "at least 20000 B" in rng.assumed["buffer_bytes"]
    assert [tag for tag, _ in rng.variants() if tag.startswith("buffer")] == ["buffer_bytes:high"]
    with pytest.raises(WhatIfError) as err:
        path_range({**PATH, "buffer_bytes": None, "capacity_bps": None}, mss=1448, overhead_bytes=66,
                   buffer_low=20000.0)
    assert err.value.code == "path_incomplete" and "capacity_bps" in err.value.message


class _Parts:
    """The evidence ``buffer_seen`` reads (``PathParts``' fields)."""

    def __init__(self, deep: float, losses: list[float]) -> None:
        self.deep_queue_s, self.top_queue_s, self.wire_mss, self.loss_queue_s = deep, deep, 1514, losses


def test_the_buffers_lower_bound_is_the_deepest_queue_only_where_no_loss_followed_a_full_queue() -> None:
    """40 ms of queue at 10 Mbit/s is 50 kB: the bound without a loss, or with losses at low queues; none where the
    losses recur at the deepest queue (the buffer overflowed there: the inference refused it for another reason),
    where the buffer is known or the capacity is not."""
    path = {**PATH, "buffer_bytes": None}
    assert buffer_seen(_Parts(0.04, []), path) == pytest.approx(50000.0)
    assert buffer_seen(_Parts(0.04, [0.002, 0.003, 0.001]), path) == pytest.approx(50000.0)
    assert buffer_seen(_Parts(0.04, [0.039, 0.040, 0.041]), path) is None
    assert buffer_seen(_Parts(0.04, []), PATH) is None
    assert buffer_seen(_Parts(0.04, []), {**path, "capacity_bps": None}) is None
    assert buffer_seen(None, path) is None
