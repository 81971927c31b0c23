"""Linux's HyStart replayed over an ACK stream (tests/whatif/hystart_replay.py, docs/whatif.md "The end of the
first slow start"): the two tests on hand-built ACKs, and the receiver's quick ACKs in a captured slow start."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.whatif.hystart_replay import Ack, acks_of, hystart_exit, slow_start_end

MSS = 1448


def _acks(gaps_s: list[float], rtts_s: list[float]) -> list[Ack]:
    """One segment an ACK, each round's end one flight ahead (cwnd doubles a round)."""
    out, t, una = [], 0.0, 0
    for gap, rtt in zip(gaps_s, rtts_s, strict=True):
        t += gap
        una += MSS
        out.append(Ack(t, 1, rtt, rtt, 2 * una, una))
    return out


def test_the_ack_train_fires_past_half_delay_min_and_a_gap_over_2_ms_breaks_it() -> None:
    """40 ms RTT, one ACK every 1.2 ms, each round ending one flight ahead: from cwnd 16 the rounds start at the
    7th, 15th and 31st ACK (37.2 ms); the third runs past delay_min/2 = 20 ms at the 48th (57.6 ms, cwnd 57). One
    2.5-ms gap in that round (at its 11th ACK) keeps the train from firing for the rest of it."""
    found = hystart_exit(_acks([0.0012] * 60, [0.040] * 60))
    assert found is not None and (found.test, found.cwnd) == ("train", 57)
    assert abs(found.t - 0.0576) < 1e-9
    gaps = [0.0012] * 40 + [0.0025] + [0.0012] * 19
    assert hystart_exit(_acks(gaps, [0.040] * 60)) is None


def test_the_delay_test_fires_at_the_ninth_sample_above_delay_min_plus_an_eighth() -> None:
    """delay_min 40 ms: the threshold is 45 ms; samples at 46 ms end slow start at a round's 9th (the first round
    from cwnd 16 holds 8 ACKs; the second's 9th is the 23rd ACK, cwnd 32), samples at 44 ms never."""
    rtts = [0.040] * 6 + [0.046] * 30
    found = hystart_exit(_acks([0.003] * 36, rtts), train=False)
    assert found is not None and (found.test, found.cwnd) == ("delay", 32)
    assert hystart_exit(_acks([0.003] * 36, [0.040] * 6 + [0.044] * 30), train=False) is None


def test_the_linux_receiver_acks_every_segment_through_the_first_slow_start() -> None:
    """pairs/nosack (Linux receiver, 10 Mbit/s, 40 ms): at least 85 % of the ACKs of new data in the first
    0.35 s cover one segment (105 of 116), where a delayed-ACK receiver covers two with most."""
    early = [a for a in acks_of(ROOT / "tests" / "data" / "pairs" / "nosack.pcap.gz", 40001) if a.t < 0.35]
    assert len(early) > 100
    assert sum(a.segments == 1 for a in early) >= 0.85 * len(early)
    assert all(a.rtt_last <= a.rtt_first for a in early)


def test_the_end_of_slow_start_is_where_the_sender_sends_one_segment_for_each_acknowledged() -> None:
    """Hand-built: two segments sent for each acknowledged until 60 are outstanding, then one: the end is read
    at 60. On the captures: ``pairs/nosack`` left slow start at 85 segments outstanding (its kernel's HyStart at a
    cwnd of 88, tests/data/kernel/nosack), ``pairs/nots`` at 111, and ``nots``' scenario run again on the testbed
    (tests/data/kernel/nots_r1) at 84."""
    acks, una, nxt = [], 0, 40 * MSS
    for k in range(80):
        una += MSS
        nxt += (2 if nxt - una < 60 * MSS else 1) * MSS
        acks.append(Ack(0.001 * k, 1, 0.04, 0.04, nxt, una))
    found = slow_start_end(acks)
    assert found is not None and abs(found.outstanding - 60) <= 1
    data = ROOT / "tests" / "data"
    ends = [slow_start_end(acks_of(path, 40001, mss), mss)
            for path, mss in ((data / "pairs" / "nosack.pcap.gz", 1448), (data / "pairs" / "nots.pcap.gz", 1460),
                              (data / "kernel" / "nots_r1.pcap.gz", 1460))]
    assert [round(e.outstanding) if e else None for e in ends] == [85, 111, 84]


def test_linux_6_14_rounds_replayed_over_the_captures_give_the_kernels_exits() -> None:
    """Rounds from the first ACK on (Linux 6.14's fix; the testbed runs 6.18) replayed over the captured ACK
    streams end slow start where the kernel did: `pairs/nosack` at 89 segments (the kernel's counters in the
    scenario's `nosack_mib` run: 88), `paths/r5_rtt100_b2` at 169 (the kernel's own counters in `r5_mib`: 168;
    the capture's flight stopped at 169–174), `paths/r3_rtt300_b1` at 170 (its flight stopped at 171); with
    rounds only from a cwnd of 16 the delay test fires at 104 on r5's, where the kernel's flight went on."""
    data = ROOT / "tests" / "data"
    expected = {"pairs/nosack": 89, "paths/r5_rtt100_b2": 169, "paths/r3_rtt300_b1": 170}
    for name, cwnd in expected.items():
        acks = acks_of(data / f"{name}.pcap.gz", 40001)
        found = hystart_exit(acks, halving=False, early_rounds=True)
        assert found is not None and (found.test, found.cwnd) == ("delay", cwnd), (name, found)
    old = hystart_exit(acks_of(data / "paths" / "r5_rtt100_b2.pcap.gz", 40001), halving=False)
    assert old is not None and old.cwnd == 104
