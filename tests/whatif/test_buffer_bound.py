"""A buffer the capture bounds from below only (no loss followed a full queue): the bound, the deepest queue the flow
built (``whatif.figures.buffer_seen``), and the buffer the what-if takes, the least consistent with the capture
(``whatif.runs.consistent_range``), against the testbed's queue limit on every capture of the repository and the
hold-out set with a known buffer where the path leaves the buffer null (docs/whatif.md, "Refusals")."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache

import pytest

from ackreplay.core.capture_scoring import build_estimators, score_file
from ackreplay.whatif.figures import buffer_seen, flight_room, shared_flight
from ackreplay.whatif.flows import flight_by_flow, room_of
from ackreplay.whatif.runs import consistent_range
from tests.estimators.path_calibration import truth_of
from tests.whatif.self_checks import DATA, Checked, checked

#: Every capture with a known buffer whose largest flow's path leaves the buffer null with a bound from below (as
#: measured: the others' paths give a buffer, or no bound — no capacity, or a loss after a full queue).
BOUNDED = ("paths/r12_rtt40_b4_loss", "pairs/dloss", "holdout/h04_cubic_r25_rtt18_b04_l03",
           "limits/bbr_app_blk64", "limits/bbr_sndbuf64", "limits/cubic_app_blk32", "limits/cubic_sndbuf130",
           "limits/cubic_sndbuf_small", "limits/reno_rwnd_ws0", "limits/reno_sndbuf90")
#: Of them, the bulk senders the self-check re-enacts (the others are withheld as not bulk): the bound, as measured
#: (wire bytes), and the least buffer their re-enactment does not overflow.
RE_ENACTED = {"paths/r12_rtt40_b4_loss": (146_057, 183_239), "pairs/dloss": (89_091, 104_658),
              "holdout/h04_cubic_r25_rtt18_b04_l03": (6_799, 22_430)}


def true_buffer(name: str) -> float:
    """The testbed's queue limit (bytes), as the path's calibration takes it."""
    meta = DATA / f"{name}.json"
    return truth_of(meta)["buffer_over_bdp"] * float(json.loads(meta.read_text())["bdp_bytes"])


@cache
def bound_of(name: str) -> float | None:
    capture = DATA / f"{name}.pcap.gz"
    sc = score_file(capture, build_estimators(["newreno"], {}), keep_series=False)
    by_id = sc.ingest.flows.by_id()
    fr = max(sc.replay.flows, key=lambda fr: by_id[fr.flow_id].bytes)
    return buffer_seen(fr.path_parts, fr.path)


@pytest.mark.parametrize("name", BOUNDED)
def test_the_buffers_bound_from_below_never_exceeds_the_testbeds_buffer(name: str) -> None:
    """The deepest queue the flow built (its RTT samples' 98th percentile above their least) is a lower bound: on
    every such capture at most the testbed's queue limit (0.05–0.96 of it)."""
    bound = bound_of(name)
    assert bound is not None and 0 < bound <= true_buffer(name)


@pytest.mark.parametrize("name", sorted(RE_ENACTED))
def test_the_buffer_taken_is_the_least_the_re_enactment_does_not_overflow_and_no_deeper_than_the_truth(
        name: str) -> None:
    """The re-enacted sender overflows the bound on all three (the capture shows no overflow), so the buffer is
    taken at the least it does not overflow: above the bound, within its one-BDP range, never above the testbed's
    buffer (``h04`` 0.997 of it, ``r12`` 0.76, ``dloss`` 0.52: its flow never came near it)."""
    bound, least = RE_ENACTED[name]
    assert bound_of(name) == pytest.approx(bound, rel=0.01)
    got = checked(DATA / f"{name}.pcap.gz")
    assert isinstance(got, Checked) and got.path.buffer_bounded
    fig = got.path.central
    assert fig.buffer_bytes == pytest.approx(least, rel=0.01)
    assert bound < fig.buffer_bytes <= min(bound + fig.capacity_bps * fig.base_rtt_s / 8, true_buffer(name))
    assert got.check.passed, got.check


def test_a_capture_with_a_known_buffer_is_not_searched() -> None:
    """A buffer the path gives (losses at one level) is the path's: no bound, no search."""
    got = checked(DATA / "pairs" / "tapnear.pcap.gz")
    assert isinstance(got, Checked) and not got.path.buffer_bounded
    assert "buffer_bytes" not in got.path.assumed
    assert bound_of("pairs/tapnear") is None


def test_the_range_refuses_a_consistent_buffer_outside_it() -> None:
    """``PathRange.with_consistent_buffer`` asserts the search stayed within the bounded buffer's range."""
    got = checked(DATA / "pairs" / "dloss.pcap.gz")
    assert isinstance(got, Checked)
    lo, hi = got.path.ends["buffer_bytes"]
    with pytest.raises(ValueError, match="outside"):
        got.path.with_consistent_buffer(hi + 1.0, 7)
    with pytest.raises(ValueError, match="outside"):
        got.path.with_consistent_buffer(lo - 1.0, 7)
    assert got.path.buffer_bound is not None
    tight = replace(got.path, buffer_bound=replace(got.path.buffer_bound, room_bytes=lo + 1.0))
    with pytest.raises(ValueError, match="more than the captured flight could queue"):
        tight.with_consistent_buffer((lo + hi) / 2, 7, room_checked=True)


@pytest.mark.parametrize("name", sorted(RE_ENACTED))
def test_the_buffer_taken_is_no_deeper_than_the_captured_flight_could_fill(name: str) -> None:
    """A queue of B bytes needs B + BDP in flight: the least consistent buffer is searched no higher than what the
    flow's largest captured flight could queue beyond the BDP (``whatif.figures.flight_room``), and the range
    asserts it (``with_consistent_buffer``). On the three sender-side captures the room is seen and above the
    buffer taken."""
    got = checked(DATA / f"{name}.pcap.gz")
    assert isinstance(got, Checked) and got.path.buffer_bound is not None
    bb = got.path.buffer_bound
    assert bb.room_checked and bb.room_bytes is not None and bb.least_bytes is not None
    assert bb.seen_bytes < got.path.central.buffer_bytes == bb.least_bytes <= bb.room_bytes


def test_a_room_below_what_the_re_enactment_needs_leaves_the_buffer_at_its_bound() -> None:
    """Where every buffer the captured flight could fill is overflowed by the re-enactment, the search finds none
    consistent with the capture and the buffer stays at its bound (the self-check then says how far the
    re-enactment parts from the capture)."""
    got = checked(DATA / "pairs" / "dloss.pcap.gz")
    assert isinstance(got, Checked) and got.path.buffer_bound is not None
    bb = got.path.buffer_bound
    at_bound = replace(got.path, central=replace(got.path.central, buffer_bytes=bb.seen_bytes),
                       ends={**got.path.ends, "buffer_bytes": (bb.seen_bytes, got.path.ends["buffer_bytes"][1])},
                       buffer_bound=replace(bb, least_bytes=None, runs=0, room_bytes=bb.seen_bytes + 2_000.0))
    kept = consistent_range(at_bound, got.captured, got.sender, 1, got.cross)
    assert kept is at_bound and kept.central.buffer_bytes == bb.seen_bytes


def test_beside_cross_traffic_the_room_is_the_groups_flights_added() -> None:
    """Flows sharing a bottleneck fill one buffer: the room a bounded-below buffer is searched in is what their
    largest flights, added, could queue beyond the BDP — more than any member's own — and none where one member's
    flight was not seen or no flights are given."""
    sc = score_file(DATA / "pairs" / "two.pcap.gz", build_estimators(["newreno"], {}), keep_series=False)
    (group,) = sc.replay.path_groups
    members = [fr for fr in sc.replay.flows if fr.flow_id in group["flows"]]
    flights = flight_by_flow(sc.replay.flows)
    assert len(members) == 2 and all(fr.path_parts is not None for fr in members)
    total = sum(float(fr.path_parts.flight_bytes) for fr in members if fr.path_parts is not None)
    assert shared_flight(flights, group["flows"]) == total > 0
    for fr in members:
        room, flows = room_of(fr, group["flows"], flights)
        own = flight_room(fr.path_parts, fr.path)
        assert flows == 2 and room == flight_room(fr.path_parts, fr.path, total)
        assert room is not None and own is not None and room > own
        assert room_of(fr, group["flows"], None) == (None, 2)
        assert room_of(fr, group["flows"], {**flights, fr.flow_id: math.nan}) == (None, 2)
        assert room_of(fr, [fr.flow_id], flights) == (own, 1)


def test_beside_cross_traffic_the_search_is_held_under_the_room_too() -> None:
    """The room holds the search with cross traffic as without: a room below what the re-enactment needs beside a
    cross flow leaves the buffer at its bound, where without the room the search finds a deeper one."""
    got = checked(DATA / "pairs" / "dloss.pcap.gz")
    other = checked(DATA / "pairs" / "two.pcap.gz")
    assert isinstance(got, Checked) and isinstance(other, Checked) and got.path.buffer_bound is not None
    cross = other.cross[:1]
    bb = got.path.buffer_bound
    hi = got.path.ends["buffer_bytes"][1]
    at_bound = replace(got.path, central=replace(got.path.central, buffer_bytes=bb.seen_bytes),
                       ends={**got.path.ends, "buffer_bytes": (bb.seen_bytes, hi)},
                       buffer_bound=(free_bb := replace(bb, least_bytes=None, runs=0, room_bytes=None, room_flows=2)))
    free = consistent_range(at_bound, got.captured, got.sender, 1, cross)
    assert free is not at_bound and free.buffer_bound is not None and not free.buffer_bound.room_checked
    found = free.central.buffer_bytes
    assert bb.seen_bytes < found <= hi
    tight = replace(at_bound, buffer_bound=replace(free_bb, room_bytes=bb.seen_bytes + 2_000.0))
    assert bb.seen_bytes + 2_000.0 < found
    kept = consistent_range(tight, got.captured, got.sender, 1, cross)
    assert kept is tight and kept.central.buffer_bytes == bb.seen_bytes
    held = replace(at_bound, buffer_bound=replace(free_bb, room_bytes=found * 1.5))
    searched = consistent_range(held, got.captured, got.sender, 1, cross)
    assert searched.buffer_bound is not None and searched.buffer_bound.room_checked
    assert searched.central.buffer_bytes <= found * 1.5
    assert "the largest flights of the 2 flows sharing the bottleneck" in searched.assumed["buffer_bytes"]
