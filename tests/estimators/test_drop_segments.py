"""The captured drops numbered by segment (``ackreplay.path.flow_evidence``, docs/path.md "Random-loss rate"): a
retransmitted super-segment (TSO/GSO, seen by a host capture before the NIC cut it) resends each of the segments it
carries, and every one is a drop the replay must meet; the flow's first byte is the lowest sequence its data
carried, also where that lies below the capture's reference (a retransmission of data acknowledged before the
capture's first packet), so no such drop falls before the first segment."""

from __future__ import annotations

from itertools import islice

import numpy as np
import polars as pl

from ackreplay.ingest import ingest_capture
from ackreplay.path.flow_evidence import _drops, _first_byte, flow_parts
from ackreplay.path.links import LinkInfo
from ackreplay.replay.engine import flow_rows
from ackreplay.whatif.captured import CapturedFlow
from ackreplay.whatif.flows import wire_loss_rate
from tests.conftest import ROOT, SHARED

MSS = 1000
NEW, RETX = 0, 1


def _flow(rows: list[tuple[float, int, int, int]]) -> tuple[np.ndarray, ...]:
    """One flow's segment rows (time, sequence, payload, kind) as the kernels' columns."""
    st, seq, ln, kind = (np.array(c, dt) for c, dt in zip(zip(*rows, strict=True),
                                                           (np.float64, np.int64, np.int64, np.uint8), strict=True))
    return st, seq, ln, kind


def _numbered(rows: list[tuple[float, int, int, int]],
              episodes: list[float]) -> tuple[int, list[int], list[int], list[int]]:
    """The flow's first byte; each drop's segment and episode; what each episode's count of retransmissions
    (0 here: ingest's count of rows is added to) gains from the super-segments."""
    st, seq, ln, kind = _flow(rows)
    count, base = _first_byte(seq, ln, kind, MSS)
    seg = np.full(count, -99, np.int64)
    ep = np.full(count, -99, np.int64)
    retx = np.zeros(len(episodes), np.int64)
    _drops(st, seq, ln, kind, np.array(episodes, np.float64), base, MSS, seg, ep, retx)
    return base, seg.tolist(), ep.tolist(), retx.tolist()


def test_a_retransmitted_super_segment_is_a_drop_of_each_segment_it_carries() -> None:
    rows = [(0.00, 0, 4 * MSS, NEW), (0.01, 4 * MSS, 4 * MSS, NEW),  # two GSO sends of four segments each
            (0.05, MSS, 3 * MSS, RETX),  # segments 1, 2 and 3 resent in one super-segment
            (0.06, 5 * MSS, MSS, RETX),  # segment 5 alone
            (0.20, 6 * MSS, MSS + 1, RETX)]  # a segment and one byte more: two segments touched
    base, seg, ep, more = _numbered(rows, [0.05, 0.20])
    assert base == 0
    assert seg == [1, 2, 3, 5, 6, 7]
    assert ep == [0, 0, 0, 0, 1, 1]
    assert more == [2, 1]  # beyond the one transmission ingest counts for each


def test_a_segment_sized_retransmission_is_one_drop_as_before() -> None:
    rows = [(0.0, k * MSS, MSS, NEW) for k in range(8)] + [(0.1, 3 * MSS, MSS, RETX), (0.2, 3 * MSS, MSS, RETX)]
    assert _numbered(rows, [0.1]) == (0, [3, 3], [0, 0], [0])


def test_data_below_the_reference_numbers_the_segments_from_its_first_byte() -> None:
    # the capture's first packet acknowledged byte 0, the sender then resent the two segments before it
    rows = [(0.00, 0, MSS, NEW), (0.01, MSS, MSS, NEW), (0.05, -2 * MSS, 2 * MSS, RETX)]
    base, seg, ep, _ = _numbered(rows, [0.05])
    assert base == -2 * MSS
    assert seg == [0, 1]  # not -2 and -1, before the first segment, where the replay would not meet them
    assert ep == [0, 0]


def test_a_flow_without_data_resends_nothing() -> None:
    _, seq, ln, kind = _flow([(0.0, 0, 0, NEW), (0.1, 0, 0, NEW)])
    assert _first_byte(seq, ln, kind, MSS) == (0, 0)


def test_a_host_captures_retransmitted_super_segments_resend_each_segment() -> None:
    """mptcpanalyzer's client capture (a host's, GSO on): 14 retransmissions above the MSS in 5 flows. Each flow's
    replayable drops are the segments its retransmissions carried, each super-segment's consecutive ones."""
    cap = ingest_capture(SHARED / "public" / "pypi-mptcpanalyzer-0.3.2__client_2.pcap")
    seg_rows, ep_rows, ack_rows = flow_rows(cap.segments), flow_rows(cap.episodes), flow_rows(cap.acks)
    supers = 0
    for s in cap.flows:
        segs = seg_rows(s.flow_id)
        retx = segs.filter((pl.col("kind").cast(pl.String) == "retransmission") & (pl.col("len") > 0))
        if not len(retx) or s.mss <= 0:
            continue
        carried = [-(-n // s.mss) for n in retx["len"].to_list()]
        supers += sum(c > 1 for c in carried)
        parts = flow_parts(s.flow_id, LinkInfo.of(s), ack_rows(s.flow_id), segs, ep_rows(s.flow_id))
        resent = [seg for seg, _ in parts.retransmissions]
        assert len(resent) == sum(carried), s.flow_id
        base = min(segs.filter(pl.col("len") > 0)["seq"].to_list())
        expected = [(q - base) // s.mss + j for q, c in zip(retx["seq"].to_list(), carried, strict=True)
                    for j in range(c)]
        assert resent == expected, s.flow_id
    assert supers == 14


def test_the_random_loss_rate_counts_a_super_segments_segments_on_both_sides() -> None:
    """On the same capture the rate's counts are the wire's: an episode's retransmissions are the segments its
    retransmissions resent, and a flow's data segments its rows plus what its super-segments carry beyond one;
    a flow without super-segments keeps ingest's counts."""
    cap = ingest_capture(SHARED / "public" / "pypi-mptcpanalyzer-0.3.2__client_2.pcap")
    seg_rows, ep_rows, ack_rows = flow_rows(cap.segments), flow_rows(cap.episodes), flow_rows(cap.acks)
    moved = 0
    for s in cap.flows:
        segs, eps = seg_rows(s.flow_id), ep_rows(s.flow_id)
        if s.mss <= 0 or not len(segs):
            continue
        data = segs.filter(pl.col("len") > 0)["len"].to_list()
        beyond = sum(-(-n // s.mss) - 1 for n in data)
        parts = flow_parts(s.flow_id, LinkInfo.of(s), ack_rows(s.flow_id), segs, eps)
        assert parts.data_segments == s.data_segments + beyond, s.flow_id
        counted = eps["retransmissions"].to_list() if len(eps) else []
        extra = [0] * len(counted)
        episodes = iter(ep for _, ep in parts.retransmissions)
        for n in segs.filter((pl.col("kind").cast(pl.String) == "retransmission") & (pl.col("len") > 0))["len"]:
            carried = -(-n // s.mss)
            ep, *_ = islice(episodes, carried)  # the episode of the drops it resent
            if 0 <= ep < len(extra):
                extra[ep] += carried - 1
        assert parts.loss_retx == [c + x for c, x in zip(counted, extra, strict=True)], s.flow_id
        moved += beyond > 0
    assert moved >= 5


def test_the_captured_loss_rate_beside_a_what_if_is_counted_on_the_wire() -> None:
    """The captured flow's loss rate the what-if shows beside its simulated ones (which count segments) counts a
    super-segment as its segments too: on the host capture it falls below the rows' ratio where super-segments were
    sent, and it is the rows' ratio on a capture without them (the testbed's)."""
    cap = ingest_capture(SHARED / "public" / "pypi-mptcpanalyzer-0.3.2__client_2.pcap")
    seg_rows, ep_rows, ack_rows = flow_rows(cap.segments), flow_rows(cap.episodes), flow_rows(cap.acks)
    lower = 0
    for s in cap.flows:
        if s.mss <= 0 or not s.data_segments or not s.retransmissions:
            continue
        segs = seg_rows(s.flow_id)
        parts = flow_parts(s.flow_id, LinkInfo.of(s), ack_rows(s.flow_id), segs, ep_rows(s.flow_id))
        rate = wire_loss_rate(parts)
        rows = s.retransmissions / s.data_segments
        assert rate == len(parts.retransmissions) / parts.data_segments
        assert CapturedFlow.of(s).on_the_wire(rate).loss_rate == rate
        lower += rate < rows - 1e-12
    assert lower >= 3
    plain = ingest_capture(ROOT / "tests" / "data" / "pairs" / "dloss.pcap.gz")
    s = max(plain.flows, key=lambda f: f.bytes)
    parts = flow_parts(s.flow_id, LinkInfo.of(s), flow_rows(plain.acks)(s.flow_id),
                       flow_rows(plain.segments)(s.flow_id), flow_rows(plain.episodes)(s.flow_id))
    assert s.retransmissions > 0 and wire_loss_rate(parts) == s.retransmissions / s.data_segments
