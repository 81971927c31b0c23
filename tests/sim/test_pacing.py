"""Linux's internal pacing in the loop (sim/pacing.py, ``FlowSpec.pacing``) and the retransmission timer Linux
restarts when it retransmits the first unacknowledged segment (``tcp_xmit_retransmit_queue``), on the path the
path inference gives `paths/r3_rtt300_b1` (3 Mbit/s, 300 ms, one BDP of buffer; docs/whatif.md, "The end of the
first slow start"): the testbed's sender paced, its second round's 20 segments spread over half a round trip, and
its first slow start ran on to a window near 170 segments — where the engine's unpaced sender, sending each
ACK's segments at once, builds a queue from its first rounds and leaves slow start at 144."""

from __future__ import annotations

import numpy as np

from ackreplay.sim import layout as L
from ackreplay.sim.engine import run_loop, seed_random
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state, simulate

# the inferred path of paths/r3_rtt300_b1 (capacity, base RTT, buffer, the receive window of its first recovery)
LINK = Link(2998414.0, buffer_bytes=111690, overhead_bytes=66)
RTT, MSS, RWND = 0.2988, 1448, 450


def _cubic(duration_s: float, pacing: bool, hystart: float = 1.0) -> tuple[float, float, int, int]:
    """CUBIC alone on the path: its cwnd at the end, its packets' mean queueing delay, loss events, timeouts."""
    f = simulate(LINK, [FlowSpec("cubic", RTT, params={"hystart": hystart}, pacing=pacing, rwnd_segments=RWND)],
                 SimConfig(duration_s, mss=MSS)).flows[0]
    return float(f.series["cwnd"][-1]), f.mean_queue_delay_s, f.loss_events, f.timeouts


def _exit_window(duration_s: float, pacing: bool, hystart: float) -> float:
    """CUBIC alone on the path, HyStart on: its ssthresh after ``duration_s`` — the window at which HyStart ended
    slow start (it sets ssthresh to cwnd there), once it has and before any loss; cwnd itself grows on from there,
    at least 5 % a round before the first loss (Linux's ``bictcp_update``)."""
    state = build_state(LINK, [FlowSpec("cubic", RTT, params={"hystart": hystart}, pacing=pacing, rwnd_segments=RWND)],
                        SimConfig(duration_s, mss=MSS))
    seed_random(1)
    run_loop(state)
    assert int(state.fi[0, L.LOSS_EVENTS]) == 0
    return float(state.fs[0, L.SSTHRESH])


def _send_times(pacing: bool, duration_s: float) -> np.ndarray:
    """When each segment left (NewReno's slow start: the same as CUBIC's before HyStart), from the send log."""
    state = build_state(LINK, [FlowSpec("newreno", RTT, external=True, pacing=pacing, rwnd_segments=RWND)],
                        SimConfig(duration_s, mss=MSS))
    seed_random(1)
    run_loop(state)
    return state.slog[0, :int(state.fi[0, L.SEND_N]), 0].copy()


def test_a_paced_sender_spreads_each_round_of_slow_start() -> None:
    """The initial window leaves at once either way (Linux paces from the tenth segment on); the second round's
    20 segments leave as the first round's ACKs come, within 32 ms unpaced, and at twice cwnd/SRTT paced: over
    157 ms, half the round trip."""
    unpaced, paced = _send_times(False, 0.62), _send_times(True, 0.62)
    assert np.ptp(unpaced[:10]) == np.ptp(paced[:10]) == 0.0

    def second_round(t: np.ndarray) -> np.ndarray:
        return t[(t > RTT) & (t < 2 * RTT)]

    assert len(second_round(unpaced)) == len(second_round(paced)) == 20
    assert np.ptp(second_round(unpaced)) < 0.04
    assert np.ptp(second_round(paced)) > 0.5 * RTT


def test_pacing_keeps_the_queue_empty_below_the_bdp_and_moves_hystarts_exit() -> None:
    """In the first second (cwnd below the BDP of 74 segments) the unpaced sender's bursts queue its packets 37 ms
    on average, the paced sender's 4 ms; HyStart's delay test, which reads that queue, ends slow start at 144
    segments unpaced and at 192 paced (the capture's own ACKs replayed through HyStart: about 200)."""
    assert _cubic(1.0, False)[1] > 0.03
    assert _cubic(1.0, True)[1] < 0.006
    assert int(_exit_window(1.8, False, 1.0)) == 144
    assert int(_exit_window(1.8, True, 1.0)) == 192


def test_hystarts_rounds_from_the_first_ack_move_its_exit_to_the_kernels() -> None:
    """With rounds tracked from the first ACK (Linux 6.14 on, ``hystart`` 2: sim/hystart.py) the rounds keep the
    initial window's alignment, and HyStart ends slow start at 176 segments, paced or not — the kernel's flight on
    this path stopped growing at 171 —, where rounds from a cwnd of 16 on leave at 144 (192 paced)."""
    assert int(_exit_window(2.0, False, 2.0)) == 176
    assert int(_exit_window(2.0, True, 2.0)) == 176


def test_the_head_retransmission_restarts_the_timer() -> None:
    """Paced, the slow start's overshoot and the next overflow drop the retransmission of the first unacknowledged
    segment; RACK marks it lost again a round trip later, and Linux, retransmitting the head, restarts the timer
    (``tcp_xmit_retransmit_queue``). Without that restart the 300-ms round trip outlasted the RTO twice (5 loss
    events, 2 timeouts); with it the 16.8 s have the capture's 3 loss events and no timeout."""
    _, _, events, timeouts = _cubic(16.8, True)
    assert (events, timeouts) == (3, 0)


def test_pacing_is_deterministic_and_off_by_default() -> None:
    spec = FlowSpec("cubic", RTT)
    assert spec.pacing is False
    assert _cubic(3.0, True) == _cubic(3.0, True)
