"""CUBIC's HyStart (sim/hystart.py, Linux tcp_cubic.c): its two exits on hand-built states, and in the loop a
deep buffer's slow start ended before the first loss (Linux's default), none with ns-3's settings."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.sim import layout as L
from ackreplay.sim.hystart import HS_DMIN, HS_FOUND, HS_ROUND, hystart_ack
from ackreplay.sim.model import FlowSpec, Link, SimConfig, simulate
from tests.sim.test_engine import BDP, MSS, RATE, RTT, WIRE

DMIN = 0.040  # delay_min: the delay exit's threshold is 40 + clamp(40/8, 4, 16) = 45 ms


def _state(cwnd: float = 20.4) -> tuple[np.ndarray, np.ndarray]:
    """A CUBIC flow in slow start past hystart_low_window, SRTT 40 ms, delay_min 40 ms, snd_una past the
    round's end (the next ACK starts a round)."""
    fs = np.zeros((1, L.N_FS))
    fi = np.zeros((1, L.N_FI), np.int64)
    fs[0, L.CWND], fs[0, L.SSTHRESH], fs[0, L.SRTT], fs[0, HS_DMIN] = cwnd, np.inf, DMIN, DMIN
    fi[0, L.UNA], fi[0, L.NXT] = 1, 21
    return fs, fi


def _acks(fs: np.ndarray, fi: np.ndarray, times: np.ndarray, delay: float, paced: bool = False,
          early_rounds: bool = False) -> int:
    """Feed ACKs with one RTT sample each; the index of the ACK that ended slow start (−1: none)."""
    for k, t in enumerate(times):
        hystart_ack(fs, fi, 0, float(t), delay, -1.0, float(MSS), paced, early_rounds)
        if fs[0, HS_FOUND] > 0:
            return k
    return -1


def test_the_ack_train_ends_slow_start_past_half_delay_min() -> None:
    """ACKs 1 ms apart (≤ 2 ms: a train) from 1 s: the train outlasts (delay_min + 1 ms of allowed ACK delay)/2
    = 20.5 ms at the ACK of 1.021 s (the 22nd); ssthresh = cwnd in whole segments (20)."""
    fs, fi = _state()
    assert _acks(fs, fi, 1.0 + 0.001 * np.arange(40), DMIN) == 21
    assert fs[0, L.SSTHRESH] == 20.0


def test_a_paced_senders_train_must_outlast_the_whole_delay_min() -> None:
    """A socket marked for pacing (``FlowSpec.pacing``) does not halve the train's threshold (``threshold >>= 1``
    only for ``SK_PACING_NONE``): the same ACKs 1 ms apart end slow start past 41 ms, at the ACK of 1.042 s."""
    fs, fi = _state()
    assert _acks(fs, fi, 1.0 + 0.001 * np.arange(60), DMIN, paced=True) == 42


@pytest.mark.parametrize(("early_rounds", "round_start"), [(False, 0.0), (True, 1.0)])
def test_rounds_below_the_low_window_start_only_from_linux_6_14(early_rounds: bool, round_start: float) -> None:
    """An ACK past the round's end at a cwnd of 12: Linux 5.7–6.13 (``hystart`` 1) start no round below
    ``hystart_low_window``; from 6.14 (``hystart`` 2) the round starts there all the same."""
    fs, fi = _state(cwnd=12.0)
    _acks(fs, fi, np.array([1.0]), DMIN, early_rounds=early_rounds)
    assert fs[0, HS_ROUND] == round_start


def test_acks_further_apart_than_2_ms_are_no_train() -> None:
    fs, fi = _state()
    assert _acks(fs, fi, 1.0 + 0.003 * np.arange(40), DMIN) == -1
    assert fs[0, L.SSTHRESH] == np.inf


@pytest.mark.parametrize(("delay", "ended_at"), [(0.046, 8), (0.044, -1)])
def test_the_delay_increase_ends_slow_start_after_eight_samples(delay: float, ended_at: int) -> None:
    """No train (3 ms apart); every RTT sample of the round at 46 ms: above 45 ms, so the check after the first
    8 samples (HYSTART_MIN_SAMPLES), the 9th ACK, ends slow start; at 44 ms it never does."""
    fs, fi = _state()
    assert _acks(fs, fi, 1.0 + 0.003 * np.arange(40), delay) == ended_at


def test_below_the_low_window_or_once_found_nothing_happens() -> None:
    fs, fi = _state(cwnd=15.0)
    assert _acks(fs, fi, 1.0 + 0.001 * np.arange(40), 0.060) == -1
    assert fs[0, L.SSTHRESH] == np.inf


def _run(hystart: float, ns3: bool) -> tuple[int, float]:
    link = Link(RATE, buffer_packets=round(8 * BDP), overhead_bytes=WIRE - MSS)
    flow = simulate(link, [FlowSpec("cubic", RTT, params={"hystart": hystart})],
                    SimConfig(8.0, mss=MSS, ns3_ack_counting=ns3)).flows[0]
    return flow.loss_events, float(np.max(flow.series["cwnd"]))


def test_a_deep_buffers_slow_start_ends_before_the_first_loss() -> None:
    """Buffer 8·BDP, 8 s: with HyStart CUBIC leaves slow start when the queue's delay passes 7.5 ms (about 306
    segments) and meets no loss — it then grows 5 % a round, Linux's least growth before the first loss, to a
    largest window of 464 segments; without it slow start overshoots to 902 and loses (3 loss events). ns-3's
    settings run without it (ns-3's own HyStart has other thresholds)."""
    losses, top = _run(1.0, ns3=False)
    no_losses, no_top = _run(0.0, ns3=False)
    assert losses == 0 and no_losses >= 1
    assert top < 0.6 * no_top
    assert _run(1.0, ns3=True) == (no_losses, no_top)
