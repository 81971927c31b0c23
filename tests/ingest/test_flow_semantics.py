"""Per-flow semantics on hand-built conversations: each test scripts the packets and states the answer.

Sender 10.0.0.1:40000 sends data to 10.0.0.2:5201; times in ms; MSS 1000 unless said otherwise.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackreplay.ingest import ingest_capture
from ackreplay.ingest import tcpflow as tf
from tests import pcapgen as g
from tests.ingest.naive import infer_mss

MSS = 1000


def run(tmp_capture, conv: g.Conv, **kw):
    cap = ingest_capture(tmp_capture(conv.pcap()), **kw)
    data = [s for s in cap.flows if s.sender.endswith(":40000")]
    assert len(data) == 1, cap.flows
    return cap, cap.flow(data[0].flow_id)


def bulk(conv: g.Conv, n: int, t0: float = 11.0, rtt: float = 10.0) -> None:
    """n segments sent 1 ms apart, each ACKed one RTT later."""
    for i in range(n):
        conv.send(t0 + i, i * MSS, MSS)
        conv.ack(t0 + i + rtt, (i + 1) * MSS)


def test_sequence_numbers_wrap_at_2_32(tmp_capture):
    conv = g.Conv(isn=2**32 - 5500, irs=2**32 - 10)
    conv.handshake(0, 10, mss=MSS)
    bulk(conv, 12)
    _cap, f = run(tmp_capture, conv)
    assert f.acks["acked"].sum() == 12 * MSS
    assert f.segments["seq"].to_list() == [i * MSS for i in range(12)]
    assert f.summary.retransmissions == 0 and f.summary.bytes == 12 * MSS


def test_handshake_gives_first_rtt_and_mss(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 25, mss=1460, ts=True)
    conv.send(26, 0, 1448, opts=g.opt_ts(2, 1))
    conv.ack(56, 1448, opts=g.opt_ts(9, 2))
    _, f = run(tmp_capture, conv)
    s = f.summary
    assert s.mss == 1448 and s.mss_source == "syn_minus_timestamps"  # 1460 − 12 (both SYNs carry TS)
    assert s.handshake_rtt_s == pytest.approx(0.025)
    assert s.vantage == "sender"
    row = f.acks.row(0, named=True)
    assert row["rtt"] == pytest.approx(0.030)  # data at 26 ms, ACK at 56 ms
    assert row["rttmin"] == pytest.approx(0.025)  # the SYN-ACK sample is the running minimum


def test_tso_super_segments_with_ip_length_zero(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=1448)
    sizes = [4344, 2896, 1448, 4344]
    seq = 0
    for i, n in enumerate(sizes):
        conv.send(11 + i, seq, n, total_len=0)  # IP total length 0: length from the wire
        seq += n
    conv.ack(30, seq)
    _, f = run(tmp_capture, conv)
    assert f.segments["len"].to_list() == sizes
    assert f.acks["acked"].to_list() == [seq]  # the client's handshake ACK is the sender's: not a row
    assert f.summary.mss == 1448


def test_mid_connection_capture_infers_mss_from_payload_not_super_segments(tmp_capture):
    conv = g.Conv()
    seq = 0
    for i in range(40):  # no SYN: host-side capture with GSO: sizes are multiples of 1448
        n = (2896, 4344, 1448, 2896)[i % 4]
        conv.send(i, seq, n)
        seq += n
        conv.ack(i + 0.5, seq)
    _, f = run(tmp_capture, conv)
    assert (f.summary.mss, f.summary.mss_source) == (1448, "payload_divisor")
    assert not f.summary.syn_seen


def test_snaplen_truncated_packets_keep_ip_lengths(tmp_capture):
    conv = g.Conv(snaplen=60)  # Ethernet 14 + IP 20 + TCP 20 + 6: options and payload cut
    conv.handshake(0, 10, mss=MSS, ts=True)
    for i in range(5):
        conv.send(11 + i, i * MSS, MSS, opts=g.opt_ts(10 + i, 1))
        conv.ack(21 + i, (i + 1) * MSS, opts=g.opt_ts(50 + i, 10 + i))
    _, f = run(tmp_capture, conv)
    assert f.segments["len"].to_list() == [MSS] * 5
    assert f.acks["acked"].sum() == 5 * MSS
    assert f.summary.options_truncated_packets > 0


def test_flight_subtracts_sacked_bytes(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(10):
        conv.send(11 + i, i * MSS, MSS)
    base = conv.isn + 1
    # cumulative ACK of 1000, SACK of [2000, 5000): outstanding 10000 − 1000 − 3000
    conv.ack(25, 1 * MSS, opts=g.opt_sack([(base + 2000, base + 5000)]))
    _, f = run(tmp_capture, conv)
    last = f.acks.row(-1, named=True)
    assert (last["flight"], last["sacked"]) == (6000, 3000)


def test_delivered_bytes_follow_linux_westwood_acked_count(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(6):
        conv.send(11 + i, i * MSS, MSS)
    conv.ack(21, MSS)  # advances 1 MSS: d = 1000
    for k in range(3):
        conv.ack(22 + k, MSS)  # three duplicate ACKs: d = MSS each, accounted = 3000
    conv.send(25, MSS, MSS)  # fast retransmit
    conv.ack(35, 6 * MSS)  # cumulative 5000 > MSS: pays back 3000 → d = 2000
    conv.ack(36, 6 * MSS, win=1000)  # window update: not a duplicate, delivers 0
    _, f = run(tmp_capture, conv)
    rows = f.acks.select("acked", "dup", "d").rows()
    assert rows == [(1000, False, 1000), (0, True, 1000), (0, True, 1000), (0, True, 1000),
                        (5000, False, 2000), (0, False, 0)]
    ep = f.episodes.row(0, named=True)
    assert (ep["kind"], ep["dupacks_before"], ep["recover_seq"]) == ("fast_retransmit", 3, 6 * MSS)
    assert ep["end_t"] is not None and ep["decision_ack_row"] == 3  # state after the third dupack
    assert f.summary.retransmissions == 1 and f.summary.dupacks == 3


def test_karn_no_rtt_from_retransmitted_bytes(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.send(300, 0, MSS)  # retransmission after a silence: a timeout
    conv.ack(310, MSS)
    _, f = run(tmp_capture, conv)
    assert f.acks["rtt"].to_list()[-1] is None  # ambiguous: no sample (Karn)
    ep = f.episodes.row(0, named=True)
    assert ep["kind"] == "timeout" and ep["silence_s"] == pytest.approx(0.289, abs=1e-3)


def test_tsecr_gives_rtt_when_seq_matching_cannot(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS, ts=True)
    conv.send(11, 0, MSS, opts=g.opt_ts(100, 1))
    conv.send(300, 0, MSS, opts=g.opt_ts(130, 1))  # retransmission carries a new TSval
    conv.ack(320, MSS, opts=g.opt_ts(9, 130))  # echoes the retransmission's TSval
    _, f = run(tmp_capture, conv)
    assert f.acks["rtt"].to_list()[-1] == pytest.approx(0.020)


def test_rto_inside_fast_recovery_opens_a_timeout_episode(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(8):
        conv.send(11 + i, i * MSS, MSS)
    conv.ack(21, MSS)
    for k in range(3):
        conv.ack(25 + k, MSS)  # three duplicate ACKs
    conv.send(28, MSS, MSS)  # fast retransmit
    conv.send(500, MSS, MSS)  # the same bytes again 472 ms later, no ACK advance: an RTO
    conv.ack(510, 8 * MSS)
    _, f = run(tmp_capture, conv)
    kinds = f.episodes["kind"].to_list()
    assert kinds == ["fast_retransmit", "timeout"]
    first, second = f.episodes.rows(named=True)
    assert first["end_t"] == pytest.approx(second["start_t"])
    assert second["silence_s"] == pytest.approx(0.479)  # since the last advancing ACK at 21 ms
    assert f.summary.fast_retransmit_events == 1 and f.summary.timeout_events == 1


def test_sack_based_recovery_after_one_dupack_is_fast_retransmit(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(5):
        conv.send(11 + i, i * MSS, MSS)
    base = conv.isn + 1
    conv.ack(22, 0, opts=g.opt_sack([(base + 1000, base + 2000)]))  # one dupack with SACK
    conv.send(22.1, 0, MSS)
    _, f = run(tmp_capture, conv)
    assert f.episodes["kind"].to_list() == ["fast_retransmit"]


def test_zero_window_probes_and_keepalives_are_not_retransmissions(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.ack(21, MSS, win=0)  # receiver's buffer full
    for k in range(3):
        conv.send(200 + 200 * k, MSS, 1)  # zero-window probe: the next byte, repeated
    conv.ack(900, MSS, win=8000)
    conv.send(901, MSS, MSS)
    conv.ack(911, 2 * MSS)
    conv.send(5000, 2 * MSS - 1, 1)  # keepalive: one old byte below the cumulative ACK
    conv.ack(5010, 2 * MSS)
    _, f = run(tmp_capture, conv)
    kinds = f.segments["kind"].to_list()
    assert kinds.count("zero_window_probe") == 3 and kinds.count("keepalive") == 1
    assert f.summary.retransmissions == 0 and f.summary.loss_events == 0
    assert (f.summary.zero_window_probes, f.summary.keepalives) == (3, 1)


def test_a_keepalive_repeated_before_any_ack_is_a_keepalive(tmp_capture):
    """A capture that starts mid-connection with keep-alives: before any ACK the cumulative ACK is unknown, and a
    byte repeating the last byte sent is a keep-alive (tshark's rule), not a retransmission."""
    conv = g.Conv()
    conv.send(0, 5 * MSS - 1, 1)  # the first keep-alive: the capture's first segment (new to it)
    conv.send(10_000, 5 * MSS - 1, 1)  # repeated: a keep-alive
    conv.ack(10_010, 5 * MSS)
    conv.send(10_020, 5 * MSS, MSS)
    conv.ack(10_030, 6 * MSS)
    _, f = run(tmp_capture, conv)
    assert f.segments["kind"].to_list() == ["new", "keepalive", "new"]
    assert (f.summary.retransmissions, f.summary.keepalives) == (0, 1)


@pytest.mark.parametrize(("late_us", "retransmissions"), [(2, 0), (5000, 1)])
def test_an_ack_recorded_just_before_its_data_makes_no_retransmission(tmp_capture, late_us, retransmissions):
    """A receiving host with GRO: the ACK of a coalesced segment is recorded 2 µs before the segment. Its bytes
    are the original's, recorded late — not a retransmission, no loss episode. 5 ms later they would be a
    retransmission of bytes the capture missed."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.ack(12, MSS)
    conv.ack(20, 4 * MSS)  # recorded before the data it acknowledges
    conv.send(20 + late_us / 1000, MSS, 3 * MSS)
    conv.send(21 + late_us / 1000, 4 * MSS, MSS)
    conv.ack(22 + late_us / 1000, 5 * MSS)
    _, f = run(tmp_capture, conv)
    assert f.summary.retransmissions == retransmissions and f.summary.loss_events == retransmissions


def test_fin_byte_is_not_data(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS, flags=g.ACK | g.FIN)
    conv.ack(21, MSS + 1, flags=g.ACK | g.FIN)  # ACKs the data and the FIN
    _, f = run(tmp_capture, conv)
    assert f.acks["acked"].sum() == MSS and f.summary.bytes == MSS


def test_port_reuse_splits_connections(tmp_capture):
    first = g.Conv(isn=1000)
    first.handshake(0, 10, mss=MSS)
    bulk(first, 3)
    second = g.Conv(isn=900_000)
    second.handshake(1000, 10, mss=MSS)
    bulk(second, 5, t0=1011)
    conv = g.Conv(records=first.records + second.records)
    cap = ingest_capture(tmp_capture(conv.pcap()))
    data = [s for s in cap.flows if s.sender.endswith(":40000")]
    assert cap.stats.connections == 2 and [s.bytes for s in data] == [3 * MSS, 5 * MSS]


def test_reordered_capture_timestamps_are_sorted(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    bulk(conv, 6)
    recs = sorted(conv.records, key=lambda r: r.ts_ns)  # bulk() writes ACKs ahead of later data
    ordered = ingest_capture(tmp_capture(g.Conv(records=recs).pcap(), "ordered.pcap"))
    assert ordered.stats.timestamp_reorders == 0
    recs[5], recs[6] = recs[6], recs[5]  # written out of order (multi-queue capture)
    shuffled = ingest_capture(tmp_capture(g.Conv(records=recs).pcap(), "shuffled.pcap"))
    assert shuffled.stats.timestamp_reorders == 1
    assert shuffled.acks.drop("flow_id").equals(ordered.acks.drop("flow_id"))


def test_equal_timestamps_keep_file_order(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.send(11, MSS, MSS)
    conv.ack(21, MSS)
    conv.ack(21, 2 * MSS)  # same instant: stays an ordered pair of rows
    _, f = run(tmp_capture, conv)
    assert f.acks.filter(pl.col("acked") > 0)["ack"].to_list() == [MSS, 2 * MSS]


# ---- the independent audit's findings (issue #10), one scripted conversation each


def test_rto_after_a_partial_ack_inside_fast_recovery_opens_a_timeout_episode(tmp_capture):
    """Corrected §1.2: the silence runs from the later of the previous transmission and the last ACK that
    advanced. Segments 1 and 3 are lost; SACK recovery resends both at once; the resent 3 is lost again;
    the partial ACK for 1 arrives after 3 was resent (it restarts the timer, it does not rule the RTO out);
    300 ms of silence later 3 goes again: an RTO (before the fix: never, since an ACK had advanced)."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(8):
        conv.send(11 + i, i * MSS, MSS)
    base = conv.isn + 1
    conv.ack(21, MSS)
    for k in range(3):  # dupacks SACKing 2 and 4..
        conv.ack(23 + k, MSS, opts=g.opt_sack([(base + 4 * MSS, base + (5 + k) * MSS),
                                               (base + 2 * MSS, base + 3 * MSS)]))
    conv.send(26, MSS, MSS)  # fast retransmit of 1
    conv.send(26.5, 3 * MSS, MSS)  # and of 3 (SACK hole)
    conv.ack(37, 3 * MSS, opts=g.opt_sack([(base + 4 * MSS, base + 8 * MSS)]))  # partial ACK, after 3 went
    conv.send(340, 3 * MSS, MSS)  # 3 again, 303 ms after the partial ACK: RTO
    conv.ack(350, 8 * MSS)
    _, f = run(tmp_capture, conv)
    assert f.episodes["kind"].to_list() == ["fast_retransmit", "timeout"]
    second = f.episodes.row(1, named=True)
    assert second["silence_s"] == pytest.approx(0.303)  # since the partial ACK at 37 ms


def test_no_rtt_sample_spans_bytes_the_capture_never_saw_sent(tmp_capture):
    """Karn when the first transmission is missing: the capture starts mid-connection with bytes 0..1000
    outstanding (their transmission not captured); the ACK covering them and the next segment gives no
    seq/ack sample. A later, clean ACK does."""
    conv = g.Conv()
    conv.send(0, MSS, MSS)  # the first packet seen: bytes 1000..2000 (0..1000 were sent before)
    conv.ack(5, 0)  # the receiver's cumulative ACK is still at 0
    conv.ack(30, 2 * MSS)  # covers 0..1000 (never seen sent) and 1000..2000 (sent at 0 ms)
    conv.send(31, 2 * MSS, MSS)
    conv.ack(61, 3 * MSS)
    _, f = run(tmp_capture, conv)
    assert f.acks["rtt"].to_list() == [None, None, pytest.approx(0.030)]


def test_no_rtt_sample_spans_a_hole_the_receiver_reported(tmp_capture):
    """Bytes the receiver reported missing (duplicate ACKs) were sent again, whether or not the capture
    shows it (a tap that dropped it, an MPTCP reinjection): the ACK that fills the hole gives no seq/ack
    sample — before the fix it gave one from the first transmission, 0.5 s here."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    for i in range(5):
        conv.send(11 + i, i * MSS, MSS)
    conv.ack(21, MSS)
    for k in range(3):
        conv.ack(22 + k, MSS)  # segment 1 missing; its retransmission is not in the capture
    conv.ack(511, 5 * MSS)
    conv.send(512, 5 * MSS, MSS)
    conv.ack(522, 6 * MSS)
    _, f = run(tmp_capture, conv)
    rtts = f.acks["rtt"].to_list()
    assert rtts[-2] is None  # the hole filled by an unseen retransmission
    assert rtts[-1] == pytest.approx(0.010)


def test_mptcp_subflows_give_no_multi_second_rtt_samples():
    """The audit's case: mptcpanalyzer's client_2 took seq/ack samples across reinjected ranges (1.6–2.1 s
    on flows whose RTT is ~0.11 s) and its srtt rose 3–6× too high."""
    from tests.conftest import SHARED

    cap = ingest_capture(SHARED / "public" / "pypi-mptcpanalyzer-0.3.2__client_2.pcap")
    worst = cap.acks.filter(pl.col("rtt").is_not_null() & (pl.col("rtt") > 1.0))
    assert len(worst) == 0, worst.select("flow_id", "t_rel", "rtt")


@pytest.mark.parametrize("mss", [16312, 65483])
def test_mss_without_syn_above_9000_is_the_common_payload(tmp_capture, mss):
    """BIG TCP and loopback captures: segments of 16312 or 65483 bytes are the MSS, not a super-segment
    of an assumed 1460 (the old fallback)."""
    conv = g.Conv()
    for i in range(30):
        conv.send(i, i * mss, mss, total_len=0 if mss > 65000 else None)
        conv.ack(i + 0.5, (i + 1) * mss)
    conv.send(30, 30 * mss, 700)  # a short tail segment
    _, f = run(tmp_capture, conv)
    assert (f.summary.mss, f.summary.mss_source) == (mss, "payload_mode")


def test_sack_scoreboard_keeps_more_than_64_blocks(tmp_capture):
    """Every other segment of 300 lost: 150 SACK blocks outstanding, each reported once (four per ACK,
    as receivers do). Flight is what is really outstanding; with the old 64-block scoreboard the lowest
    blocks were forgotten and flight over-estimated."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    n = 300
    for i in range(n):
        conv.send(11 + i * 0.01, i * MSS, MSS)
    base = conv.isn + 1
    blocks = [(base + i * MSS, base + (i + 1) * MSS) for i in range(1, n, 2)]  # 1, 3, 5, … received
    for k in range(0, len(blocks), 4):
        conv.ack(30 + k * 0.01, 0, opts=g.opt_sack(blocks[k:k + 4]))
    _, f = run(tmp_capture, conv)
    last = f.acks.row(-1, named=True)
    assert last["sacked"] == 150 * MSS
    assert last["flight"] == n * MSS - 150 * MSS


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([1, 100, 512, 536, 1000, 1448, 2896, 4344, 8688, 9000, 65483, 65535, 65536, 70000,
                                 131072]) | st.integers(1, 200_000), max_size=80))
def test_mss_from_the_size_histogram_equals_the_sorted_sizes(lens: list[int]) -> None:
    """The analysis infers the MSS from a histogram of payload sizes, every size above 65535 in one bin; the
    result is ``infer_mss`` of the sizes themselves."""
    arr = np.array(lens, np.int64)
    if not len(arr):
        return
    binned = np.minimum(arr, tf.SIZE_BINS - 1)
    uniq, cnt = np.unique(binned, return_counts=True)
    assert tf.mss_from_counts(uniq, cnt, len(uniq), len(arr)) == infer_mss(arr)


def test_bytes_sent_counts_a_gap_only_once_an_ack_covers_it(tmp_capture):
    """A segment 3 kB above the highest sequence sent: the capture missed 3 kB, or the number is a jump. Those bytes
    count as sent once the receiver's cumulative ACK covers them — until then, what the capture shows sent is the
    segments' payload (bytes sent ≤ payload seen + the holes the ACKs prove)."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.ack(21, MSS)
    conv.send(22, 4 * MSS, MSS)  # bytes 1000..4000 not in the capture
    _, f = run(tmp_capture, conv)
    assert (f.summary.bytes_sent, f.summary.bytes, f.summary.invalid) == (2 * MSS, MSS, "")
    conv.ack(32, 5 * MSS)  # the receiver has everything below 5000: the gap was sent
    _, f = run(tmp_capture, conv)
    assert (f.summary.bytes_sent, f.summary.bytes, f.summary.invalid) == (5 * MSS, 5 * MSS, "")


def test_bytes_sent_counts_the_part_of_a_gap_a_retransmission_fills(tmp_capture):
    """Segments at 0 and 4000, then 2000..3000 sent (a retransmission: below the highest sequence): of the gap
    1000..4000, its middle was seen sent, its ends were not — and an ACK of 1500 proves 1000..1500."""
    conv = g.Conv()
    conv.handshake(0, 10, mss=MSS)
    conv.send(11, 0, MSS)
    conv.send(12, 4 * MSS, MSS)
    conv.send(13, 2 * MSS, MSS)
    conv.ack(21, MSS + 500)
    _, f = run(tmp_capture, conv)
    assert f.summary.retransmissions == 1
    assert f.summary.bytes_sent == 3 * MSS + 500  # 0..1500, 2000..3000, 4000..5000
    conv.send(30, MSS + 500, 500)  # fills 1500..2000 (the gap's start, what the ACK left)
    conv.send(31, 3 * MSS, 2 * MSS)  # 3000..5000: the rest of the gap and a resend
    _, f = run(tmp_capture, conv)
    assert f.summary.bytes_sent == 5 * MSS and f.summary.invalid == ""


def test_a_stray_segment_far_ahead_is_not_bytes_sent(tmp_capture):
    """A lone data packet 251 MB above the SYN and nothing acknowledged (an Arkime test capture): 8 bytes were sent,
    not 251 MB — whose goodput over 1 ms was 2 Tbit/s, and the flow broke the invariants."""
    c = g.Conv()
    c.raw(0, True, 1000, 0, g.SYN)
    c.raw(1, True, 1001 + 251_658_111, 0, g.ACK | 0x20, length=8)  # (URG)
    _, f = run(tmp_capture, c)
    assert (f.summary.bytes_sent, f.summary.bytes, f.summary.invalid) == (8, 8, "")
    assert f.summary.goodput_bps == pytest.approx(8 * 8 / 0.001, rel=1e-3)  # (float epoch seconds)


def test_a_synack_recorded_after_data_lowers_rttmin_never_raises_it(tmp_capture):
    """The SYN-ACK recorded only after the data was timed (5 ms): the SYN→SYN-ACK time (40 ms) is the handshake's
    round trip, and RTTmin stays at the smaller sample — it was set to the handshake's, above a sample."""
    conv = g.Conv()
    conv.raw(0, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS))
    conv.send(1, 0, MSS)
    conv.ack(6, MSS)
    conv.raw(40, False, 5000, 1001, g.SYN | g.ACK, opts=g.opt_mss(MSS))
    conv.raw(40.01, True, 1001 + MSS, 5001, g.ACK)  # (the client answers at once: a sender-side capture)
    conv.send(41, MSS, MSS)
    conv.ack(47, 2 * MSS)
    _, f = run(tmp_capture, conv)
    s = f.summary
    assert (s.vantage, s.handshake_rtt_s) == ("sender", pytest.approx(0.040))
    assert s.rttmin_s == pytest.approx(0.005) and f.acks["rttmin"].to_list() == pytest.approx([0.005, 0.005])


def test_payload_on_a_syn_is_data(tmp_capture):
    """TCP Fast Open (RFC 7413): the request rides on the SYN, from the byte after the ISN; the SYN-ACK acknowledges
    it. A request carried in the SYN alone made no flow."""
    conv = g.Conv()
    conv.raw(0, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS), length=300)
    conv.raw(10, False, 5000, 1301, g.SYN | g.ACK, opts=g.opt_mss(MSS))
    conv.raw(10.01, True, 1301, 5001, g.ACK)
    conv.send(11, 300, MSS)
    conv.ack(21, 300 + MSS)
    _, f = run(tmp_capture, conv)
    assert f.segments["seq"].to_list() == [0, 300] and f.segments["len"].to_list() == [300, MSS]
    s = f.summary
    assert (s.data_segments, s.bytes, s.bytes_sent, s.retransmissions, s.invalid) == (2, 300 + MSS, 300 + MSS, 0, "")
