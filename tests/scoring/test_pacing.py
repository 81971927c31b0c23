"""``scoring.pacing``: whether the sender paced, from a sender-side capture's first slow start — on hand-made
flows and on the repository's captures (ns-3 and a Python sender: not paced; the Linux testbed's bulk senders,
whose sockets are marked for pacing: paced; a receiver-side capture: cannot tell)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from ackreplay.core.capture_scoring import build_estimators, score_file
from ackreplay.scoring.pacing import LATE_S, MIN_SEGMENTS, UNPACED, first_round_times, paced, paced_share
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
MSS = 1000


def slow_start(rounds: int, rtt: float, spread: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A slow start of ``rounds`` round trips from an initial window of 10 through a bottleneck that spaces the
    ACKs 2 ms apart: each ACK releases two segments, at once (``spread`` False: 20 and 40 µs after it) or paced
    (``spread``: the second 1 ms after it, halfway to the next ACK). Returns the ACK times, the segments' times and
    their sequence numbers."""
    seg_t = list(np.arange(10) * 1e-5)
    acks: list[float] = []
    for _ in range(rounds):
        start = seg_t[len(acks)] + rtt
        for k in range(len(seg_t) - len(acks)):
            a = start + 2e-3 * k
            acks.append(a)
            seg_t += [a + 2e-5, a + 1e-3 if spread else a + 4e-5]
    return np.asarray(acks), np.asarray(seg_t), np.arange(len(seg_t), dtype=np.int64) * MSS


def test_unpaced_segments_leave_at_their_acks():
    ack_t, seg_t, seq = slow_start(3, 0.2, spread=False)
    assert paced_share(ack_t, seg_t, seq, np.full(len(seq), MSS)) == 0.0
    assert not paced(0.0)


def test_paced_segments_leave_between_the_acks():
    ack_t, seg_t, seq = slow_start(3, 0.2, spread=True)
    share = paced_share(ack_t, seg_t, seq, np.full(len(seq), MSS))
    assert share == pytest.approx(0.5)  # every second segment waits for the pacing timer
    assert paced(share)


def test_only_up_to_the_first_retransmission():
    """A retransmission ends the stretch: what the sender does in its recovery does not count."""
    ack_t, seg_t, seq = slow_start(3, 0.2, spread=False)
    cut = UNPACED + MIN_SEGMENTS + 5
    late = seg_t[cut:] + 10 * LATE_S  # after the retransmission every segment is late
    seg_t = np.concatenate((seg_t[:cut], [seg_t[cut - 1] + 1e-5], late))
    seq = np.concatenate((seq[:cut], [seq[0]], seq[cut:]))
    assert paced_share(ack_t, seg_t, seq, np.full(len(seq), MSS)) == 0.0


def whole_first_round(seg_t: np.ndarray, seq: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The data segments' times up to the first retransmission, over every segment at once (the rule as stated)."""
    end = (seq + lens)[lens > 0]
    t = seg_t[lens > 0]
    before = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(end)[:-1]))
    again = np.flatnonzero(end <= before)
    return t[:again[0]] if len(again) else t


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 4096])
def test_first_round_read_in_chunks_is_the_whole_rule(chunk):
    """Reading the segments a growing chunk at a time stops where the rule over all of them does: at a
    retransmission in any chunk, on its boundary, after pure ACKs (no data) or with none at all."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 300))
        lens = np.where(rng.random(n) < 0.1, 0, MSS).astype(np.int64)
        seq = np.cumsum(lens) - lens
        if n and rng.random() < 0.7:  # a retransmission somewhere
            k = int(rng.integers(0, n))
            seq[k] = seq[int(rng.integers(0, k + 1))] - MSS * int(rng.integers(0, 3))
        seg_t = np.sort(rng.random(n))
        got = first_round_times(seg_t, seq, lens, chunk=chunk)
        want = whole_first_round(seg_t, seq, lens)
        if not len(lens[lens > 0]):
            assert got is None
        else:
            assert got is not None and np.array_equal(got, want)


def test_the_capture_cannot_tell():
    """Not taken at the sender, or too few segments after an ACK: None, taken as not paced."""
    ack_t, seg_t, seq = slow_start(3, 0.2, spread=True)
    lens = np.full(len(seq), MSS)
    assert paced_share(ack_t, seg_t, seq, lens, vantage_position=1.0) is None
    short = UNPACED + MIN_SEGMENTS - 1
    assert paced_share(ack_t, seg_t[:short], seq[:short], lens[:short]) is None
    assert paced_share(ack_t, seg_t[:0], seq[:0], lens[:0]) is None
    assert paced_share(ack_t, seg_t, seq[:0], lens) is None  # (no sequence numbers)
    assert not paced(None)


@cache
def share_of(name: str) -> float | None:
    sc = score_file(DATA / f"{name}.pcap.gz", build_estimators(["newreno"], {}), keep_series=False)
    by_id = sc.ingest.flows.by_id()
    fr = max(sc.replay.flows, key=lambda fr: by_id[fr.flow_id].bytes)
    assert fr.limits is not None
    return fr.limits.paced_share


@pytest.mark.parametrize("name", ["ns3/cubic_1f_bdp1", "ns3/htcp_2f_bdp1", "limits/cubic_pysend"])
def test_captures_of_senders_that_do_not_pace(name: str):
    assert share_of(name) == 0.0


@pytest.mark.parametrize("name", ["testbed/cubic_1f_10M_rtt40_buf025bdp", "paths/r5_rtt100_b2", "pairs/nosack",
                                  "limits/reno_bulk"])
def test_captures_of_the_testbeds_pacing_senders(name: str):
    share = share_of(name)
    assert share is not None and 0.1 <= share <= 0.6


def test_a_receiver_side_capture_cannot_tell():
    assert share_of("testbed/cubic_1f_10M_rtt40_buf025bdp_rcv") is None
