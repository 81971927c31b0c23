"""Issue #33 (3): reordering, retransmission and spurious retransmission told apart at every capture point
(``ingest.reordering``, D-SACKs in ``ingest.tcpflow``), with the counts of the sender side of the same flow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ackreplay.ingest import ingest_capture
from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.reordering import reordered_segments
from tests import pcapgen as g
from tests.conftest import SHARED

MSS = 1000
MS = 1_000_000
PAIRS = Path(__file__).parents[1] / "data" / "pairs"


def kernel(arrivals: list[tuple[float, int]], rtt_ms: float, tsvals: list[int] | None = None) -> list[bool]:
    """``reordered_segments`` of segments (arrival ms, segment number; MSS bytes each) given as they arrive, the
    kinds as ingest gives them (below the highest sequence seen: a retransmission)."""
    t = np.array([round(a * MS) for a, _ in arrivals], np.int64)
    seq = np.array([i * MSS for _, i in arrivals], np.int64)
    top = np.maximum.accumulate(seq + MSS)
    kind = np.where(seq < np.concatenate([[0], top[:-1]]), tf.SEG_RETX, tf.SEG_NEW)
    tsv = np.array(tsvals if tsvals is not None else [-1] * len(arrivals), np.int64)
    return reordered_segments(t, seq, np.full(len(t), MSS, np.int64), kind.astype(np.int64), tsv,
                              round(rtt_ms * MS)).tolist()


def test_a_hole_filled_within_the_rtt_is_reordering_later_a_retransmission():
    # segment 2 arrives 1 ms after 3 (40 ms RTT): reordered; segment 6 fills its hole 45 ms on: retransmission
    got = kernel([(0, 0), (1, 1), (2, 3), (3, 2), (4, 4), (5, 5), (6, 7), (51, 6)], rtt_ms=40)
    assert got == [False, False, False, True, False, False, False, False]
    # bytes seen before are a retransmission however soon they come again
    assert kernel([(0, 0), (1, 1), (1.5, 1)], rtt_ms=40) == [False, False, False]
    # without a round trip, timing cannot tell: a retransmission
    assert kernel([(0, 0), (1, 2), (2, 1)], rtt_ms=-1) == [False, False, False]


def test_tsval_tells_an_original_sent_earlier_from_a_retransmission():
    # 2 ms late, but its TSval is below the segment that overtook it: an original, whatever the timing
    assert kernel([(0, 0), (1, 2), (60, 1)], rtt_ms=40, tsvals=[10, 12, 11]) == [False, False, True]
    # within the RTT, but a TSval above the segment that opened the hole: sent after it, a retransmission (sent on a
    # timer before the hole's news could reach the sender: the testbed pair "two")
    assert kernel([(0, 0), (1, 2), (3, 1)], rtt_ms=40, tsvals=[10, 12, 13]) == [False, False, False]
    # the same tick: the timing decides; across the 32-bit wrap of the TSval clock too
    assert kernel([(0, 0), (1, 2), (3, 1)], rtt_ms=40, tsvals=[2**32 - 2, 1, 1]) == [False, False, True]
    assert kernel([(0, 0), (1, 2), (3, 1)], rtt_ms=40, tsvals=[2**32 - 2, 1, 0]) == [False, False, True]


def receiver_capture(arrivals: list[tuple[float, int]], n: int, dsack: dict[int, int] | None = None) -> g.Conv:
    """A capture at the receiver (the server) of a 40 ms path: the SYN-ACK leaves 0.05 ms after the SYN, the
    handshake's ACK arrives 40 ms later; data segment ``i`` of ``arrivals`` arrives at the given ms and its ACK (the
    highest in-order byte, SACK blocks above it; a D-SACK for the repeated segment in ``dsack``) leaves 0.05 ms
    later."""
    conv = g.Conv()
    syn_opts = g.opt_mss(MSS) + g.opt_sackok()
    conv.raw(0, True, conv.isn, 0, g.SYN, opts=syn_opts)
    conv.raw(0.05, False, conv.irs, conv.isn + 1, g.SYN | g.ACK, opts=syn_opts)
    conv.raw(40.05, True, conv.isn + 1, conv.irs + 1, g.ACK)
    got: set[int] = set()
    for k, (t, i) in enumerate(arrivals):
        conv.send(t, i * MSS, MSS)
        repeat = i in got
        got.add(i)
        cum = next(j for j in range(n + 1) if j not in got)
        blocks = [(i * MSS, (i + 1) * MSS)] if repeat and (dsack or {}).get(k) else []
        blocks += [(j * MSS, (j + 1) * MSS) for j in sorted(got) if j > cum][:3]
        opts = g.opt_sack([(conv.isn + 1 + lo, conv.isn + 1 + hi) for lo, hi in blocks]) if blocks else b""
        conv.ack(t + 0.05, cum * MSS, opts=opts)
    return conv


def test_receiver_side_counts_what_the_sender_sent(tmp_capture):
    """At the receiver: segment 50 arrives 1 ms after 51 (reordered: no loss episode), segment 100 is lost and
    its retransmission arrives 42 ms after the hole appeared (one episode), segment 150 arrives twice, the copy
    reported by a D-SACK (a spurious retransmission)."""
    n = 200
    order = [i for i in range(n) if i != 100]
    order[50], order[51] = 51, 50
    arrivals = [(41.0 + k, i) for k, i in enumerate(order)]
    arrivals.append((41.0 + 100 + 42, 100))
    arrivals.append((41.0 + 150 + 0.5, 150))
    arrivals.sort()
    copy = max(k for k, (_, i) in enumerate(arrivals) if i == 150)
    cap = ingest_capture(tmp_capture(receiver_capture(arrivals, n, dsack={copy: 1}).pcap()))
    (flow,) = [f for f in cap.flows if f.sender.endswith(":40000")]
    assert flow.vantage == "receiver" and flow.capture_position == pytest.approx(1.0, abs=0.01)
    assert (flow.retransmissions, flow.spurious_retransmissions, flow.reordered_segments) == (2, 1, 1)
    assert flow.loss_events == 2  # the loss and the spurious copy; not the reordering
    kinds = cap.flow(flow.flow_id).segments.filter(pl.col("seq") == 50 * MSS)["kind"].cast(pl.String).to_list()
    assert kinds == ["reordered"]


def test_at_the_sender_a_hole_filled_at_once_is_still_a_retransmission(tmp_capture):
    """A sender does not reorder its own segments: a segment below the highest sent is sent again (§1.2)."""
    conv = g.Conv()
    conv.handshake(0, 40, mss=MSS)
    for k, i in enumerate([0, 1, 3, 2, 4]):
        conv.send(41 + k, i * MSS, MSS)
    conv.ack(81, 2 * MSS)
    conv.ack(86, 5 * MSS)
    cap = ingest_capture(tmp_capture(conv.pcap()))
    (flow,) = [f for f in cap.flows if f.sender.endswith(":40000")]
    assert flow.vantage == "sender" and (flow.retransmissions, flow.reordered_segments) == (1, 0)


#: Retransmissions lost again before the capture point (seen sent at the sender, never at the other end): in
#: ``two``, 244749 was sent three times and arrived once; ``bbrloss``: README, 244 sent, 239 arrived.
LOST_AGAIN = {("two", "10.201.1.1:40001"): 1, ("bbrloss", "10.227.1.1:40001"): 5}


@pytest.mark.parametrize("name", ["aloss", "asym", "bbrloss", "dloss", "labels", "nosack", "nots", "two", "mid",
                                  "midloss", "tap5", "tapfar", "tapnear"])
def test_testbed_pairs_count_the_senders_retransmissions_from_the_other_end(name):
    """The same flows captured at the sender and at the receiver or a tap (tests/data/pairs): the other end's
    retransmissions are the sender's but those lost again before it, none of them reordered (the testbed's path
    keeps the order), the spurious ones the same."""
    other = next(p for p in PAIRS.glob(f"{name}_*.pcap.gz"))
    sides = [{f.sender: f for f in ingest_capture(p).flows if f.data_segments > 1000}
             for p in (PAIRS / f"{name}.pcap.gz", other)]
    assert sides[0].keys() == sides[1].keys()
    for sender, s in sides[0].items():
        o = sides[1][sender]
        assert o.vantage != "sender" and o.reordered_segments == 0
        assert o.retransmissions == s.retransmissions - LOST_AGAIN.get((name, sender), 0)
        assert o.spurious_retransmissions == s.spurious_retransmissions


def window_limited_receiver(n: int, idle_at: int | None, rtt_ms: float = 40.0, window: int = 4) -> g.Conv:
    """A capture at the receiver (the server) of a sender held by a ``window``-segment receive window, without
    timestamps: segment ``i`` leaves the sender when the ACK that opened the window for it arrives, so it arrives
    one round trip after that ACK left — except from segment ``idle_at`` on, the window's worth of data the
    application gave the sender 1 s later (an idle gap longer than an RTO)."""
    conv = g.Conv()
    syn_opts = g.opt_mss(MSS) + g.opt_sackok()
    conv.raw(0, True, conv.isn, 0, g.SYN, opts=syn_opts)
    conv.raw(0.05, False, conv.irs, conv.isn + 1, g.SYN | g.ACK, opts=syn_opts)
    conv.raw(rtt_ms + 0.05, True, conv.isn + 1, conv.irs + 1, g.ACK)
    arrive: list[float] = []
    for i in range(n):
        t = rtt_ms + 1.0 + i if i < window else arrive[i - window] + 0.05 + rtt_ms
        if idle_at is not None and idle_at <= i < idle_at + window:
            t += 1000.0
        arrive.append(t)
    for i, t in sorted(enumerate(arrive), key=lambda it: it[1]):
        conv.send(t, i * MSS, MSS)
        conv.ack(t + 0.05, (i + 1) * MSS, win=window * MSS)
    return conv


def test_rtt_samples_carry_their_source_and_an_idle_senders_window_release_is_not_one(tmp_capture):
    for idle_at in (None, 40):
        cap = ingest_capture(tmp_capture(window_limited_receiver(80, idle_at).pcap()))
        (flow,) = [f for f in cap.flows if f.sender.endswith(":40000")]
        assert flow.vantage == "receiver" and flow.reconstruction_sound
        acks = cap.flow(flow.flow_id).acks
        sampled = acks.filter(pl.col("rtt").is_not_null())
        assert set(sampled["rtt_source"].cast(pl.String).to_list()) == {"window"}
        assert sampled["rtt"].to_numpy() == pytest.approx(0.040, abs=0.0002)  # the path's, never the application's
        after_idle = acks.filter(pl.col("ack").is_between(41 * MSS, 44 * MSS))  # the window sent after the gap
        assert len(after_idle) == 4 and after_idle["rtt"].is_null().all() == (idle_at is not None)
    assert acks.filter(pl.col("rtt").is_null())["rtt_source"].is_null().all()


def test_sender_side_rtt_sources(tmp_capture):
    """The handshake's ACK (the server sends), a Karn-clean seq/ack match, and the TSecr echo where Karn forbids
    the match (the bytes were sent twice)."""
    conv = g.Conv()
    conv.handshake(0, 20, mss=MSS, ts=True)
    conv.send(21, 0, MSS, opts=g.opt_ts(10, 1))
    conv.ack(41, MSS, opts=g.opt_ts(20, 10))  # seq/ack: 20 ms
    conv.send(42, MSS, MSS, opts=g.opt_ts(11, 20))
    conv.send(70, MSS, MSS, opts=g.opt_ts(12, 20))  # sent again: Karn
    conv.ack(95, 2 * MSS, opts=g.opt_ts(21, 12))  # TSecr names the second copy: 25 ms
    cap = ingest_capture(tmp_capture(conv.pcap()))
    (flow,) = [f for f in cap.flows if f.sender.endswith(":40000")]
    acks = cap.flow(flow.flow_id).acks
    assert acks["rtt_source"].cast(pl.String).to_list() == ["seq", "ts"]
    assert acks["rtt"].to_list() == [pytest.approx(0.020), pytest.approx(0.025)]


@pytest.mark.parametrize(("sender_side", "other_side"), [
    ("generated/s06_cubic_1f_10M_rtt40_buf1bdp_2sides.pcap",
     "generated/s06_cubic_1f_10M_rtt40_buf1bdp_2sides_rcv.pcap"),
    ("public/pypi-mptcpanalyzer-0.3.2__client_2.pcap", "public/pypi-mptcpanalyzer-0.3.2__server_2.pcap"),
])
def test_shared_pairs_count_the_senders_retransmissions_from_the_other_end(sender_side, other_side):
    """The shared captures' pairs (their MANIFEST): a Linux bulk flow at both ends, and the mptcpanalyzer subflows
    captured on both hosts (behind egress delays: taps near each end). Retransmissions and reordering agree on
    every data flow of the client; a D-SACK can be seen at the receiver's host alone (11.0.0.1:39755: its ACK
    did not reach the client's capture), so spurious retransmissions are at least the sender side's."""
    sides = [{f.sender: f for f in ingest_capture(SHARED / name).flows if f.sender.startswith(("10.", "11."))
              and f.data_segments > 20} for name in (sender_side, other_side)]
    assert sides[0].keys() == sides[1].keys() and sides[0]
    for sender, s in sides[0].items():
        o = sides[1][sender]
        assert (o.retransmissions, o.reordered_segments) == (s.retransmissions, s.reordered_segments)
        assert o.spurious_retransmissions >= s.spurious_retransmissions
