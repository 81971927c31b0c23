"""BBR in the loop (sim/bbr.py and the modules it uses): its steps against values worked by hand from Linux's
net/ipv4/tcp_bbr.c and lib/win_minmax.c, and whole runs against ns-3.37's ``TcpBbr`` (tests/data/ns3/bbr_grid.json,
``testbed/ns3/regenerate.py --bbr``), and the what-if's self-check on the repository's BBR captures (Linux 6.18
senders)."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.sim import bbr_layout as B
from ackreplay.sim import layout as L
from ackreplay.sim.bbr import bbr_main
from ackreplay.sim.bbr_cycle import reset_probe_bw_mode, update_gains
from ackreplay.sim.bbr_model import update_model
from ackreplay.sim.bbr_policer import lt_bw_sampling
from ackreplay.sim.bbr_window import HIGH_GAIN, quantization_budget
from ackreplay.sim.minmax import minmax_reset, minmax_running_max
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state, simulate
from ackreplay.sim.state import SimState
from tests.sim.ns3_scenarios import BBR_RUNS, compare_bbr, medians
from tests.whatif.self_checks import DATA, Checked, checked

RTT = 0.04


def bbr_state(rate_bps: float = 10e6) -> SimState:
    """One BBR flow's arrays at its start on a 10 Mbit/s, 40 ms path (nothing sent)."""
    return build_state(Link(rate_bps, buffer_packets=100), [FlowSpec("bbr", RTT)], SimConfig(1.0))


def test_the_bandwidth_filter_is_lib_win_minmax() -> None:
    """Nichols' windowed max over 10 rounds (``minmax_running_max``), worked by hand: a lower sample in the first
    quarter window is not kept; after a quarter window it becomes the second best, after half the third; once the
    best is 10 rounds old the second takes over; a higher sample resets all three."""
    row = np.zeros(6)
    minmax_reset(row, 0, 1.0, 5.0)
    got = [minmax_running_max(row, 0, 10.0, t, v) for t, v in
           ((2.0, 3.0), (3.0, 4.0), (5.0, 3.0), (7.0, 2.0), (12.0, 1.0), (16.0, 0.5), (17.0, 9.0))]
    assert got == [5.0, 5.0, 5.0, 5.0, 3.0, 2.0, 9.0]
    assert list(row) == [17.0, 9.0] * 3


@pytest.mark.parametrize(("pacing_seg_s", "bdp", "probing", "want"), [
    (863.0, 50.0, False, 56.0),   # 10 Mbit/s: 1.25 MB/s ≥ 150 kB/s, 1.2 kB a ms: 2 segments a quantum, +6
    (863.0, 51.0, False, 58.0),   # … rounded up to even
    (863.0, 51.0, True, 60.0),    # … +2 in PROBE_BW's probing phase
    (100.0, 50.0, False, 54.0),   # 145 kB/s < bbr_min_tso_rate (150 kB/s): 1 segment a quantum, +3, even
    (8633.0, 50.0, False, 74.0),  # 100 Mbit/s: 12.5 MB/s >> 10 = 12 207 B, 8 segments a quantum, +24
])
def test_the_quantization_budget_is_linuxs(pacing_seg_s: float, bdp: float, probing: bool, want: float) -> None:
    s = bbr_state()
    s.bbr[0, B.PACING_RATE] = pacing_seg_s
    s.bbr[0, B.MODE], s.bbr[0, B.CYCLE_IDX] = (B.PROBE_BW, 0.0) if probing else (B.STARTUP, 0.0)
    assert quantization_budget(s, 0, bdp) == want


def test_probe_bw_starts_at_a_random_phase_never_the_draining_one() -> None:
    """``CYCLE_LEN − 1 − prandom_u32_max(7)`` then one step: phases 0 and 2–7, never 1 (gain 0.75)."""
    s = bbr_state()
    phases = set()
    for _ in range(300):
        reset_probe_bw_mode(s, 0)
        phases.add(int(s.bbr[0, B.CYCLE_IDX]))
    assert phases == {0, 2, 3, 4, 5, 6, 7}


def _round(s: SimState, now: float, rate: float) -> None:
    """An ACK that starts a round with a valid rate sample of ``rate`` segments/s, nothing in flight."""
    b = s.bbr[0]
    b[B.RS_PRIOR_DELIVERED] = b[B.NEXT_RTT_DELIVERED]
    b[B.DELIVERED] += 10.0
    b[B.DELIVERED_STAMP] = now
    b[B.RS_DELIVERED], b[B.RS_INTERVAL] = rate / 16.0, 1.0 / 16.0  # (exact in binary)
    b[B.RS_APP_LIMITED], b[B.RS_LOSSES], b[B.RS_RTT], b[B.RS_ACKED] = 0.0, 0.0, -1.0, 2.0
    update_model(s, 0, now, True)


def test_the_pipe_is_full_after_three_rounds_without_25_percent_more() -> None:
    """``bbr_check_full_bw_reached`` over rounds of 100, 200, 240, 250, 260, 260, 260 segments/s: full_bw 100,
    200, 200 (240 < 250: one), 250 (250 ≥ 250: none), then three rounds under 312.5 — the pipe is full. STARTUP
    ends: DRAIN's ssthresh is the in-flight target at gain 1, ⌈260 · 0.04⌉ = 11 + 3 quanta of 2 = 18 (the initial
    pacing rate, 2.89 · 10 / 40 ms, is over 150 kB/s, and 1 kB a ms: 2 segments a quantum); nothing in flight, so
    DRAIN ends at once in PROBE_BW at gain 1 or 1.25 (a random phase, never 0.75), cwnd gain 2."""
    s = bbr_state()
    assert s.bbr[0, B.PACING_RATE] == pytest.approx(HIGH_GAIN * 10 / RTT * 0.99)
    seen = []
    for k, rate in enumerate((100.0, 200.0, 240.0, 250.0, 260.0, 260.0, 260.0)):
        _round(s, 0.1 * (k + 1), rate)
        seen.append((s.bbr[0, B.FULL_BW], s.bbr[0, B.FULL_BW_CNT], s.bbr[0, B.MODE]))
    assert seen[:-1] == [(100.0, 0, B.STARTUP), (200.0, 0, B.STARTUP), (200.0, 1, B.STARTUP),
                         (250.0, 0, B.STARTUP), (250.0, 1, B.STARTUP), (250.0, 2, B.STARTUP)]
    assert s.bbr[0, B.FULL_BW_REACHED] == 1.0 and s.bbr[0, B.MODE] == B.PROBE_BW
    assert s.fs[0, L.SSTHRESH] == 18.0
    assert s.bbr[0, B.PACING_GAIN] in (1.0, 1.25) and s.bbr[0, B.CWND_GAIN] == 2.0


def test_a_recovery_conserves_packets_for_a_round_then_restores_cwnd() -> None:
    """``bbr_set_cwnd_to_recover_or_restore``: entering recovery with 30 in flight, cwnd 40 noted (``bbr_ssthresh``),
    an ACK delivering 1 and 2 newly lost: cwnd = flight + delivered = 31, packet conservation, a round starts now.
    The next ACK, 1 more lost, 1 delivered, flight 29: max(31 − 1, 29 + 1) = 30. The ACK ending the recovery: the
    cwnd from before it, max(30, 40) = 40, then the full pipe's growth by what it delivered, min(40 + 1, target
    ⌈500 · 0.04 · 2⌉ = 40 + 3 quanta of 2 = 46) = 41."""
    s = bbr_state()
    b, fi = s.bbr[0], s.fi[0]
    b[B.FULL_BW_REACHED], b[B.MODE], b[B.CYCLE_IDX] = 1.0, B.PROBE_BW, 2.0
    b[B.PACING_GAIN], b[B.CWND_GAIN], b[B.PACING_RATE] = 1.0, 2.0, 500.0
    b[B.BW_FILTER + 1], b[B.BW_FILTER + 3], b[B.BW_FILTER + 5] = 500.0, 500.0, 500.0
    b[B.DELIVERED], b[B.PRIOR_CWND], s.fs[0, L.CWND] = 1000.0, 40.0, 40.0
    steps = ((1, 30, 2, 31.0, 1.0), (1, 29, 1, 30.0, 1.0), (0, 29, 0, 41.0, 0.0))
    for in_rec, flight, lost, cwnd, conserving in steps:
        fi[L.IN_REC], fi[L.PIPE] = in_rec, flight
        b[B.RS_PRIOR_STAMP], b[B.RS_LOSSES], b[B.RS_RTT] = B.NO_STAMP, float(lost), -1.0
        bbr_main(s, 0, 1.0, 1)
        assert (s.fs[0, L.CWND], b[B.CONSERVATION]) == (cwnd, conserving)
        if in_rec and lost == 2:
            assert b[B.NEXT_RTT_DELIVERED] == 1001.0


def _lt_ack(s: SimState, now: float, delivered: float, lost: float, round_start: bool, losses: bool) -> None:
    b = s.bbr[0]
    b[B.DELIVERED_STAMP], b[B.DELIVERED], b[B.LOST_TOTAL] = now, delivered, lost
    b[B.ROUND_START], b[B.RS_LOSSES], b[B.RS_APP_LIMITED] = float(round_start), float(losses), 0.0
    lt_bw_sampling(s, 0)


def test_two_lossy_intervals_at_one_rate_mean_a_policer() -> None:
    """``bbr_lt_bw_sampling``: sampling starts at the first loss (100 delivered, 1.0 s); after 4 rounds a loss ends
    the interval — 100 more delivered, 25 lost (25 % ≥ 50/256) in 0.2 s: 500 segments/s; the next, 95 delivered and
    25 lost in 0.2 s: 475, within 1/8 of 500 — a policer: BBR paces at their mean, 487.5, gain 1, and after 48
    rounds of PROBE_BW drops it and cycles again."""
    s = bbr_state()
    b = s.bbr[0]
    b[B.MODE] = B.PROBE_BW
    _lt_ack(s, 1.0, 100.0, 0.0, False, True)
    assert b[B.LT_SAMPLING] == 1.0 and b[B.LT_DELIVERED] == 100.0
    for start, delivered, lost in ((1.0, 200.0, 25.0), (1.2, 295.0, 50.0)):
        for k in range(4):
            _lt_ack(s, start + 0.01 * (k + 1), delivered - 10.0, lost - 5.0, True, False)
        _lt_ack(s, start + 0.2, delivered, lost, False, True)
    assert b[B.LT_USE] == 1.0 and b[B.LT_BW] == pytest.approx(487.5) and b[B.PACING_GAIN] == 1.0
    update_gains(s, 0)
    assert b[B.PACING_GAIN] == 1.0
    for k in range(48):
        _lt_ack(s, 2.0 + 0.01 * k, 400.0 + k, 50.0, True, False)
    assert b[B.LT_USE] == 0.0 and b[B.LT_BW] == 0.0 and b[B.MODE] == B.PROBE_BW


def test_probe_rtt_holds_four_packets_for_200_ms_once_min_rtt_is_10_s_old() -> None:
    """One flow, 10 Mbit/s, 40 ms, 1 BDP of buffer, 12 s: no RTT sample goes below the handshake's (the base RTT),
    so min_rtt expires 10 s after the start; PROBE_RTT then holds cwnd at 4 for 200 ms and a round (the flight
    must first fall to 4: a round), and cwnd is restored; never before."""
    res = simulate(Link(10e6, buffer_packets=34), [FlowSpec("bbr", RTT)], SimConfig(12.0, samples=1200))
    t, cwnd = res.flows[0].series["t"], res.flows[0].series["cwnd"]
    low = t[cwnd <= 4.0]
    assert len(low) > 0 and 9.99 < low.min() < 10.1  # (the series' times are sums of 0.01 s steps)
    assert 0.2 <= low.max() - low.min() <= 0.35
    assert cwnd[t > low.max() + 0.05].min() > 30


def test_probe_rtt_comes_back_every_10_s_though_the_least_rtt_repeats() -> None:
    """Linux refreshes min_rtt only on an RTT *below* the least (``<``, the 2020 fix "tcp: only postpone PROBE_RTT
    if RTT is < current min_rtt estimate"), so PROBE_RTT comes back 10 s after the last refresh: over 25 s, twice,
    the second 9.9–10.6 s after the first (10.36 s here; ``<=``, which an RTT equal to the least refreshes, put it
    at 10.43 s)."""
    res = simulate(Link(10e6, buffer_packets=34), [FlowSpec("bbr", RTT)], SimConfig(25.0, samples=2500))
    t, cwnd = res.flows[0].series["t"], res.flows[0].series["cwnd"]
    low = t[cwnd <= 4.0]
    assert len(low) > 0 and 9.99 < low.min() < 10.1
    second = low[low > 15.0]
    assert len(second) > 0 and 19.9 < second.min() < 20.6


def test_a_lone_flow_fills_the_link_with_a_small_queue() -> None:
    """10 Mbit/s, 40 ms (BDP 33 packets of 1500 bytes), 10 s: STARTUP queues up to its cwnd, 2.89 BDP and the
    quantization budget, less the BDP in the pipe — 70 packets at 0.2 s, within an 80-packet buffer, over a
    68-packet one (two loss events) — and DRAIN empties it; the flow delivers 99 % of the payload rate (9.65
    Mbit/s: 1448 of 1500 bytes) with a mean queue of 7 packets (each 1.25 probe adds a quarter BDP for a round,
    0.75 takes it back)."""
    for buffer, losses in ((80, 0), (68, 2)):
        res = simulate(Link(10e6, buffer_packets=buffer), [FlowSpec("bbr", RTT)], SimConfig(10.0))
        fl = res.flows[0]
        assert fl.goodput_bps / (10e6 * 1448 / 1500) > 0.98 and fl.loss_events == losses
        assert res.mean_queue_packets < 8
        queue = fl.series["queue_bytes"] / 1500
        assert fl.series["t"][np.argmax(queue)] < 0.5 and 65 <= queue.max() <= 70


# ns-3.37's TcpBbr, tests/data/ns3/bbr_grid.json: one flow, 10 Mbit/s, 60 ms, 20 s
BBR_NAMES = tuple(BBR_RUNS)
LOSSLESS = tuple(n for n in BBR_NAMES if BBR_RUNS[n]["loss"] == 0)
LOSSY = tuple(n for n in BBR_NAMES if BBR_RUNS[n]["loss"] > 0)


@pytest.mark.parametrize("name", LOSSLESS)
def test_without_random_loss_bbr_delivers_what_ns3s_tcpbbr_does(name: str) -> None:
    """One BBR flow alone at 0.5, 1 and 2 BDP against ns-3.37's ``TcpBbr``: goodput within 0.95–1.10 of ns-3's
    (1.062, 1.061, 1.001: at 0.5 and 1 BDP ns-3's sender timed out once after STARTUP's overflow — ns-3.37 has no
    RACK, so a lost retransmission waits for its 1-s RTO — where the loop's sender, as Linux's, repairs it), loss
    events within 2 of ns-3's (2, 2, 0 against 2, 2, 2), the mean backlog within 25 % of ns-3's (5.6, 6.6, 8.4
    packets against 5.1, 5.8, 10.8: deviations 10, 13 and 23 %)."""
    c = compare_bbr(name)
    assert 0.95 <= c.goodput_ratio <= 1.10, c
    assert abs(c.sim_losses - c.ns3_losses) <= 2, c
    assert c.queue_deviation <= 0.25, c


def test_the_lossless_medians_against_ns3() -> None:
    """Medians over the three lossless runs: goodput 6.1 % (ns-3's timeouts), loss events 0 %, mean queue 13 %."""
    goodput, losses, queue = medians(LOSSLESS, compare_bbr)
    assert goodput <= 0.07 and losses <= 0.01 and queue <= 0.15


@pytest.mark.parametrize("name", LOSSY)
def test_under_random_loss_ns3s_tcpbbr_parts_from_linuxs(name: str) -> None:
    """With 1 % random loss ns-3.37's ``TcpBbr`` delivers 3.5–5.0 Mbit/s of the 9.57 (10-draw means, 2.0–3.7
    timeouts a run), the loop's BBR 1.86–2.66 times that (91–94 loss events against 38–53): Linux's BBR keeps the
    link busy at this loss rate — the kernel's own run at 10 Mbit/s, 40 ms, 1 BDP and 1 % loss
    (tests/data/bbr/bbr_1f_10M_rtt40_buf1bdp_loss1pct) delivered 9.36 Mbit/s, 98 % of the payload rate, and the loop
    reproduces it (goodput ratio 1.012, loss events 1.077, over the capture's own drops:
    ``test_the_bbr_captures_self_check``). The departure is
    ns-3's, held here so that a change on either side shows: the loop at least 1.7 times ns-3's goodput."""
    c = compare_bbr(name)
    assert 1.7 <= c.goodput_ratio <= 2.9, c
    assert c.sim_bytes * 8 / (20.0 - 0.1) > 0.9 * 10e6 * 1448 / 1502


# The self-check on the repository's BBR captures (Linux 6.18 senders): (folder/capture, passed, goodput ratio,
# loss-event ratio; the three with random loss over the capture's own drops, replayed), each ratio held within
# 0.03 (the runs are deterministic; the margin leaves room for the path inference's last digits)
SELF_CHECKS = [
    ("pairs/bbrloss", True, 0.933, 0.986),
    ("bbr/bbr_1f_10M_rtt40_buf2bdp", True, 1.009, 1.000),
    ("bbr/bbr_1f_10M_rtt40_buf1bdp_loss1pct", True, 1.012, 1.077),
    ("bbr/bbr_1f_10M_rtt40_buf1bdp_loss05pct_rcv", True, 0.952, 0.720),
    ("bbr/bbr_2f_20M_rtt20_buf1bdp", True, 0.945, 1.270),
    ("bbr/bbr_cubic_2f_10M_rtt40_buf2bdp", True, 0.958, 1.000),
    ("limits/bbr_bulk", False, 1.007, 0.154),
    ("paths/r8_rtt40_cross", False, 0.794, 0.706),
]


@pytest.mark.parametrize(("name", "passed", "goodput", "losses"), SELF_CHECKS)
def test_the_bbr_captures_self_check(name: str, passed: bool, goodput: float, losses: float) -> None:
    """Re-enacted BBR against the captured Linux BBR flow. Two are not reproduced, and the loop was not tuned to
    them (docs/whatif.md, "BBR"): on ``limits/bbr_bulk`` (10 Mbit/s, 40 ms, 1 BDP) the goodput is the kernel's but
    the kernel lost 13 times where the loop loses twice (in STARTUP): the kernel's BBR held 55–64 segments in
    flight at cwnd 78–82 — a standing queue of 20–30 packets —, the loop's 38 at cwnd 76: the kernel's bandwidth
    estimate sat 1.6–2.3 % above the link's payload rate (``bbr_bw``'s medians 9.74 and 9.81 Mbit/s in ``ss`` on the
    testbed's 10-Mbit/s single-flow runs, against 9.59), so it paced faster than the link drains; on
    ``paths/r8_rtt40_cross`` (BBR beside CUBIC and Reno, 8 Mbit/s, 1 BDP) the captured BBR flow took more of the
    link than the loop's (0.79 of its goodput, 12 loss events against 17)."""
    got = checked(DATA / f"{name}.pcap.gz")
    assert isinstance(got, Checked), got
    c = got.check
    assert c.algorithm == "bbr" and c.passed == passed, c
    assert c.goodput_ratio == pytest.approx(goodput, abs=0.03), c
    assert c.loss_rate_ratio == pytest.approx(losses, abs=0.03), c
    assert c.code == (None if passed else "not_reproduced")


def test_bbr_senders_their_application_or_receiver_held_are_not_re_enacted() -> None:
    """The BBR captures whose sender was not a bulk one: iperf3 at 5 Mbit/s is withheld as not bulk (the
    application 97 % of the time); the receive-window-limited run's path lacks a figure (refused); the Python
    sender's idle and 1-Mbit/s trickle phases (2 s of its 8) are read by the limits as the application's 28 % of
    the time and idle 6.7 %, under both thresholds, so it is re-enacted as a bulk sender and not reproduced (1.34
    of its goodput): the limits analysis' call (scoring/limits.py), not BBR's."""
    rate = checked(DATA / "bbr" / "bbr_1f_10M_rtt40_buf2bdp_bitrate5M.pcap.gz")
    assert isinstance(rate, Checked) and rate.check.code == "sender_not_bulk", rate
    rwnd = checked(DATA / "bbr" / "bbr_1f_10M_rtt40_buf2bdp_rwnd.pcap.gz")
    assert not isinstance(rwnd, Checked) and rwnd.code == "path_incomplete"
    pysend = checked(DATA / "bbr" / "bbr_1f_10M_rtt40_buf2bdp_pysend.pcap.gz")
    assert isinstance(pysend, Checked) and pysend.check.code == "not_reproduced", pysend
    assert pysend.check.goodput_ratio == pytest.approx(1.34, abs=0.03)
