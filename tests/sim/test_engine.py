"""The simulation on cases checkable by hand: a full link, a fixed window's standing queue, the busy-link rule
of the seed-004 model (docs/estimators.md), determinism, bad input, and H-TCP's growth and backoff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ackreplay.path.analytic import busy_link
from ackreplay.sim.htcp import (
    H_BETA,
    H_EPOCH_B,
    H_EPOCH_T,
    H_LAST_CONG,
    H_MAXRTT,
    H_MINRTT,
    H_OPEN,
    H_PREV_THR,
    htcp_increment,
    htcp_ssthresh,
)
from ackreplay.sim.layout import CWND, N_FS
from ackreplay.sim.model import CONTROLS, LOSS_BASED, FlowSpec, Link, SimConfig, SimError, simulate

RATE, RTT, MSS, WIRE = 10e6, 0.06, 1448, 1500
#: Packets of 1500 bytes in the 10 Mbit/s × 60 ms path.
BDP = RATE * RTT / 8 / WIRE
PAYLOAD_RATE = RATE * MSS / WIRE


def _delivered(control: str, buffer: float, until: float) -> int:
    link = Link(RATE, buffer_packets=round(buffer * BDP), overhead_bytes=WIRE - MSS)
    return simulate(link, [FlowSpec(control, RTT)], SimConfig(until, mss=MSS)).flows[0].delivered_bytes


def utilisation(control: str, buffer: float, t0: float = 10.0, t1: float = 40.0) -> float:
    """Goodput over [t0, t1] (past slow start) over the link's payload rate: the run is deterministic, so the
    bytes delivered by t0 are those of a run that ends at t0."""
    return (_delivered(control, buffer, t1) - _delivered(control, buffer, t0)) * 8 / (t1 - t0) / PAYLOAD_RATE


def test_one_newreno_flow_fills_a_link_whose_buffer_holds_a_bdp() -> None:
    assert utilisation("newreno", 1.2) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize(("control", "decrease"), [("newreno", 0.5), ("stcp", 0.125)])
def test_the_busy_link_rule_splits_full_from_idle(control: str, decrease: float) -> None:
    """``B ≥ b/(1−b)·BDP`` keeps the link busy (utilisation 1); well below it the link idles after each loss."""
    threshold = decrease / (1 - decrease)
    above, below = 1.3 * threshold, 0.25 * threshold
    assert busy_link(decrease, above) and not busy_link(decrease, below)
    assert utilisation(control, above) == pytest.approx(1.0, abs=0.01)
    assert utilisation(control, below) < 0.97


def test_htcps_adaptive_backoff_keeps_a_small_buffer_busy() -> None:
    """At B = 0.3·BDP H-TCP's β = RTTmin/RTTmax ≈ 1/1.3 ≈ 0.77 just drains the queue it built (Leith & Shorten
    §3): the link stays full, where NewReno's halving (threshold 1·BDP) leaves it idle after each loss."""
    assert utilisation("htcp", 0.3) == pytest.approx(1.0, abs=0.01)
    assert utilisation("newreno", 0.3) < 0.95


def test_a_fixed_window_stands_its_excess_over_the_bdp_in_the_queue() -> None:
    """The receive window caps cwnd at W: W − BDP packets wait at the bottleneck (±2: delayed ACKs release
    segments in pairs)."""
    window = 80
    link = Link(RATE, buffer_packets=200, overhead_bytes=WIRE - MSS)
    flow = simulate(link, [FlowSpec("newreno", RTT)], SimConfig(10.0, mss=MSS, rwnd_segments=window)).flows[0]
    late = flow.series["t"] > 5.0
    queue = flow.series["queue_bytes"][late] / WIRE
    assert flow.loss_events == 0
    assert np.median(queue) == pytest.approx(window - BDP, abs=2.0)
    assert flow.mean_queue_delay_s == pytest.approx((window - BDP) * WIRE * 8 / RATE, rel=0.1)


@pytest.mark.parametrize("control", CONTROLS)
def test_a_run_is_deterministic_for_its_seed(control: str) -> None:
    link = Link(RATE, buffer_packets=25, loss=0.002)

    def run(seed: int) -> tuple[int, int, int, float]:
        fl = simulate(link, [FlowSpec(control, RTT), FlowSpec("newreno", 2 * RTT, 0.5)],
                      SimConfig(5.0, seed=seed)).flows[0]
        return fl.delivered_bytes, fl.loss_events, fl.retransmissions, fl.p95_queue_delay_s

    assert run(7) == run(7)
    assert run(7) != run(8)  # the random losses fall elsewhere


def test_every_control_reports_its_figures() -> None:
    """The loss-based controls side by side on half a BDP of buffer. (BBR among them takes 5.9 of the 9.6
    Mbit/s and leaves BIC and STCP waiting for their timers at the run's end, without the ACK that would give them
    the series' last point: BBR v1 beside loss-based flows in a shallow buffer; its own figures:
    tests/sim/test_bbr.py.)"""
    link = Link(RATE, buffer_bytes=int(0.5 * BDP * WIRE))
    res = simulate(link, [FlowSpec(c, RTT) for c in LOSS_BASED], SimConfig(10.0, samples=100))
    total = sum(f.goodput_bps for f in res.flows)
    assert 0.8 * PAYLOAD_RATE < total <= PAYLOAD_RATE * 1.001
    for f in res.flows:
        assert f.loss_events >= 1 and f.retransmissions >= f.loss_events - f.timeouts
        assert 0 <= f.mean_queue_delay_s <= f.p95_queue_delay_s + 1e-4
        assert f.p95_queue_delay_s <= 0.5 * BDP * WIRE * 8 / RATE + 1e-3  # the buffer's own bound
        assert len(f.series["t"]) == 100 and np.all(np.diff(f.series["t"]) > 0)
        assert np.all(f.series["queue_bytes"] <= 0.5 * BDP * WIRE + WIRE)


@pytest.mark.parametrize(("link", "flows", "code"), [
    (Link(RATE), [FlowSpec("newreno", RTT)], "no_buffer"),
    (Link(0.0, buffer_packets=10), [FlowSpec("newreno", RTT)], "bad_rate"),
    (Link(RATE, buffer_packets=10, loss=1.5), [FlowSpec("newreno", RTT)], "bad_loss"),
    (Link(RATE, buffer_packets=10), [FlowSpec("reno2", RTT)], "unknown_control"),
    (Link(RATE, buffer_packets=10), [FlowSpec("cubic", -1.0)], "bad_flow"),
    (Link(RATE, buffer_packets=10), [FlowSpec("cubic", RTT, params={"gamma": 1.0})], "unknown_parameter"),
    (Link(RATE, buffer_packets=10), [], "no_flows"),
])
def test_bad_input_is_a_sim_error_with_a_code(link: Link, flows: list[FlowSpec], code: str) -> None:
    with pytest.raises(SimError) as err:
        simulate(link, flows, SimConfig(1.0))
    assert err.value.code == code


def _htcp_row(**state: float) -> np.ndarray:
    fs = np.zeros((1, N_FS))
    fs[0, CWND] = 100.0
    fs[0, H_OPEN] = 1.0
    for name, value in state.items():
        fs[0, {"minrtt": H_MINRTT, "maxrtt": H_MAXRTT, "last": H_LAST_CONG, "beta": H_BETA, "epoch_t": H_EPOCH_T,
               "epoch_b": H_EPOCH_B, "prev": H_PREV_THR}[name]] = value
    return fs


@pytest.mark.parametrize(("since", "rttmin", "beta", "alpha"), [
    (0.5, 0.1, 0.5, 1.0),    # Δ ≤ Δ_L: standard growth
    (3.0, 0.1, 0.5, 22.0),   # 1 + 10·2 + (2/2)² = 22, RTT 100 ms: unscaled
    (3.0, 0.05, 0.5, 11.0),  # scaled by RTTmin/100 ms
    (3.0, 0.1, 0.8, 8.8),    # α = 2(1 − β)·α(Δ)
    (1.2, 0.01, 0.5, 1.0),   # the scaled factor is never below 1
])
def test_htcp_grows_by_alpha_of_the_time_since_the_last_loss(since: float, rttmin: float, beta: float,
                                                               alpha: float) -> None:
    fs = _htcp_row(minrtt=rttmin, last=10.0, beta=beta)
    assert htcp_increment(fs, 0, 100.0, 10.0 + since) == pytest.approx(alpha)  # a window's ACKs: α segments


@pytest.mark.parametrize(("epoch_bytes", "rttmax", "beta"), [
    (1.0e6, 0.1, 0.6),    # throughput as before: RTTmin/RTTmax
    (1.3e6, 0.1, 0.5),    # 30 % more than before: beta_min
    (1.0e6, 0.065, 0.8),  # RTTmin/RTTmax 0.92 clamped to beta_max
])
def test_htcp_backs_off_by_the_replays_rule(epoch_bytes: float, rttmax: float, beta: float) -> None:
    fs = _htcp_row(minrtt=0.06, maxrtt=rttmax, epoch_t=9.0, epoch_b=epoch_bytes, prev=1.0e6)
    assert htcp_ssthresh(fs, 0, 10.0, 0.5, 0.8, 0.2) == pytest.approx(100.0 * beta)
    assert fs[0, H_LAST_CONG] == 10.0 and fs[0, H_EPOCH_B] == 0.0 and fs[0, H_PREV_THR] == epoch_bytes


_SMALL_RUN = """
import json
from ackreplay.sim.model import FlowSpec, Link, SimConfig, simulate
res = simulate(Link(10e6, buffer_packets=20, loss=0.003), [FlowSpec("cubic", 0.05), FlowSpec("htcp", 0.08, 0.2),
                                                          FlowSpec("newreno", 0.06, 0.1, sack=False, timestamps=False)],
               SimConfig(2.0, seed=5))
print(json.dumps([res.events, res.mean_queue_packets] + [[f.delivered_bytes, f.loss_events, f.retransmissions,
                  f.mean_queue_delay_s, f.series["cwnd"].tolist()] for f in res.flows]))
"""


def test_the_compiled_loop_computes_what_plain_python_does() -> None:
    """The compiled loop (on borrowed views of its arrays, sim/borrow.py) and the same code run as plain Python
    (``NUMBA_DISABLE_JIT=1``) give the same figures, to the last bit."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    runs = [subprocess.run([sys.executable, "-c", _SMALL_RUN], env={**env, "NUMBA_DISABLE_JIT": jit}, cwd=root,
                           capture_output=True, text=True, check=True, timeout=600).stdout for jit in ("0", "1")]
    assert json.loads(runs[0]) == json.loads(runs[1])
