"""Senders without SACK (NewReno's recovery, RFC 6582, as Linux runs it: sim/dupacks.py) and without timestamps
(Karn's rule for RTT samples), against the SACK sender on the same path."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.sim import layout as L
from ackreplay.sim.engine import run_loop, seed_random
from ackreplay.sim.model import FlowSpec, Link, SimConfig, SimError, build_state, simulate
from ackreplay.sim.sender import samples_rtt

#: 10 Mbit/s, 60 ms, a 25-packet buffer (half the BDP): NewReno's slow start ends with a burst of ~55 drops.
LINK = Link(10e6, buffer_packets=25, overhead_bytes=52)


def _first_recovery(sack: bool) -> tuple[float, int, int, float]:
    """When the first recovery started and how long it lasted (s, to 10 ms: the run is deterministic, so the state
    at t is that of a run that ends at t), its retransmissions, timeouts, and the SRTT at its end."""
    start = None
    for t in np.arange(0.05, 5.0, 0.01):
        st = build_state(LINK, [FlowSpec("newreno", 0.06, sack=sack)], SimConfig(float(t)))
        seed_random(1)
        run_loop(st)
        in_rec = st.fi[0, L.IN_REC] == 1
        if in_rec and start is None:
            start = float(t)
        if start is not None and not in_rec:
            return float(t) - start, int(st.fi[0, L.RETRANS]), int(st.fi[0, L.TIMEOUTS]), float(st.fs[0, L.SRTT])
    raise AssertionError("the first recovery did not end in 5 s")


def test_without_sack_a_burst_of_drops_is_repaired_one_per_round_trip() -> None:
    """RFC 6582: each partial ACK retransmits the next hole, so k drops in a window take about k round trips;
    with SACK they all go out in the first round trips. No timeout either way (every partial ACK restarts the
    timer)."""
    took_sack, retx_sack, to_sack, _ = _first_recovery(True)
    took, retx, timeouts, srtt = _first_recovery(False)
    assert retx_sack > 30 and retx >= retx_sack - 5
    assert timeouts == 0 and to_sack == 0
    assert took_sack < 4 * 0.08
    assert 0.8 * retx * srtt <= took <= 1.3 * retx * srtt


def test_with_one_loss_a_window_the_sender_without_sack_recovers_as_the_sack_one() -> None:
    """CUBIC (with HyStart) on a 1-BDP buffer loses one segment a window: NewReno's recovery repairs it in one
    round trip as SACK's does, so goodput agrees within 1 % and the loss events within one (8 in 20 s: where the
    windows' whole segments fall moves one event)."""
    link = Link(10e6, buffer_bytes=50000, overhead_bytes=66)
    runs = [simulate(link, [FlowSpec("cubic", 0.04, sack=sack, timestamps=ts)], SimConfig(20.0)).flows[0]
            for sack, ts in ((True, True), (False, True), (False, False))]
    for r in runs[1:]:
        assert r.goodput_bps == pytest.approx(runs[0].goodput_bps, rel=0.01)
        assert abs(r.loss_events - runs[0].loss_events) <= 1 and r.timeouts == 0


@pytest.mark.parametrize(("timestamps", "retransmitted", "sampled"),
                         [(True, True, True), (True, False, True), (False, True, False), (False, False, True)])
def test_without_timestamps_an_ack_of_a_retransmission_gives_no_rtt_sample(timestamps: bool, retransmitted: bool,
                                                                          sampled: bool) -> None:
    """Karn's rule (RFC 6298 §3): without timestamps the ACK's timing cannot tell which transmission it answers."""
    st = build_state(LINK, [FlowSpec("newreno", 0.06, timestamps=timestamps)], SimConfig(1.0))
    assert samples_rtt(st, 0, 2, retransmitted, 0.5) is sampled
    assert samples_rtt(st, 0, 0, False, 0.5) is False


def test_the_options_leave_a_sack_run_unchanged_and_runs_deterministic() -> None:
    """The SACK sender's figures do not depend on the timestamps flag on a loss-free ACK path where every segment
    is sent once (no retransmission to be ambiguous about); a run without SACK is deterministic for its seed."""
    link = Link(10e6, buffer_packets=40, loss=0.002)
    a = simulate(link, [FlowSpec("newreno", 0.05, sack=False, timestamps=False)], SimConfig(10.0, seed=3)).flows[0]
    b = simulate(link, [FlowSpec("newreno", 0.05, sack=False, timestamps=False)], SimConfig(10.0, seed=3)).flows[0]
    assert (a.delivered_bytes, a.loss_events, a.retransmissions) == (b.delivered_bytes, b.loss_events,
                                                                     b.retransmissions)
    clean = Link(10e6, buffer_packets=10_000)
    on, off = (simulate(clean, [FlowSpec("cubic", 0.05, timestamps=ts)], SimConfig(5.0)).flows[0]
               for ts in (True, False))
    assert on.delivered_bytes == off.delivered_bytes and on.retransmissions == off.retransmissions == 0


def test_a_flows_receive_window_holds_its_sender_and_no_other() -> None:
    """``FlowSpec.rwnd_segments``: 20 segments on a 10 Mbit/s, 60 ms path (a BDP of 52) give 20 segments a round
    trip (3.9 Mbit/s of payload, within 5 %), and the flow beside it keeps the run's window (it takes the rest of
    the link, and its queue leaves the first less). A window outside [1, the run's] is a ``bad_flow``."""
    link = Link(10e6, buffer_packets=100, overhead_bytes=52)
    one = simulate(link, [FlowSpec("newreno", 0.06, rwnd_segments=20)], SimConfig(10.0)).flows[0]
    assert one.goodput_bps == pytest.approx(20 * 1448 * 8 / 0.06, rel=0.05)
    pair = simulate(link, [FlowSpec("newreno", 0.06, rwnd_segments=20), FlowSpec("newreno", 0.06)],
                    SimConfig(10.0)).flows
    assert pair[0].goodput_bps <= one.goodput_bps * 1.001  # (the other's queue lengthens its round trip)
    assert pair[1].goodput_bps > 1.3 * pair[0].goodput_bps
    for bad in (0, 16385):
        with pytest.raises(SimError) as err:
            simulate(link, [FlowSpec("newreno", 0.06, rwnd_segments=bad)], SimConfig(1.0))
        assert err.value.code == "bad_flow"


def test_without_sack_the_receive_window_stops_new_data_while_a_hole_waits() -> None:
    """The window ends at the cumulative ACK + the window: while NewReno repairs a burst of drops one hole a round
    trip, the cumulative ACK stays at the next hole, and a sender whose receiver's window is a few BDPs runs into
    it — no new data for the rest of the recovery (Linux's ``tcp_rwnd_limited`` on the testbed's run of
    ``pairs/nosack``'s scenario: 97 % of 0.5–1.0 s, docs/whatif.md) — where an unbounded one keeps the link busy."""
    free = simulate(LINK, [FlowSpec("newreno", 0.06, sack=False)], SimConfig(4.0)).flows[0]
    held = simulate(LINK, [FlowSpec("newreno", 0.06, sack=False, rwnd_segments=150)], SimConfig(4.0)).flows[0]
    assert held.goodput_bps < 0.9 * free.goodput_bps
    with_sack = [simulate(LINK, [FlowSpec("newreno", 0.06, rwnd_segments=w)], SimConfig(4.0)).flows[0].goodput_bps
                 for w in (150, 16384)]
    assert with_sack[0] == pytest.approx(with_sack[1], rel=0.05)  # (SACK's recovery is over in a round trip or two)
