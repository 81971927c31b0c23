"""``scoring.limits``: what limited the sender, checked against the sender kernel's own accounting on testbed runs
(``tests/data/limits``, README there) and on hand-made flows, one per label."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ackreplay.estimators.flow_batch import FlowBatch
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.scoring.limits import (
    APP,
    CWND,
    LABELS,
    RWND,
    SNDBUF,
    UNKNOWN,
    FlowLimits,
    QueueBound,
    batch_limits,
    bounded_samples,
    fitted_blocks,
    flow_limits,
    grid_bounds,
    held_time,
    queue_bound,
    rising,
    robust_rtt_into,
    shares_of,
)
from tests.conftest import ROOT
from tests.scoring.kernel_states import agreement, clock_offset, kernel_labels, runs

DATA = ROOT / "tests" / "data" / "limits"
RUNS = runs(DATA)


# ---- against the kernel


def test_the_runs_are_there():
    """Every kind of run is kept, with both vantages for several (README's table)."""
    names = {p.name for p, _ in RUNS}
    assert len(RUNS) >= 12
    for kind in ("bulk", "rwnd", "sndbuf", "app", "pysend"):
        assert any(kind in n for n in names), kind
    for cc in ("cubic", "reno", "bbr"):
        assert any(n.startswith(cc) for n in names), cc
    assert sum(side == "rcv" for _, side in RUNS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize(("prefix", "side"), RUNS, ids=[f"{p.name}-{s}" for p, s in RUNS])
def test_limits_agree_with_the_kernel(prefix: Path, side: str):
    """Each label's share within 10 points of the kernel's share of samples, and the interval's label the
    kernel's (the most common state of its samples) for at least 90 % of the time."""
    a = agreement(prefix, side)
    assert a.worst_points <= 10.0, a.line()
    assert a.interval_share >= 0.90, a.line()
    assert abs(sum(a.shares.values()) - 1.0) <= 1e-12


def test_kernel_states_as_labels():
    """idle → app; pacing → cwnd when the data in hand fills the window, else the next non-pacing state."""
    def rec(state, infl=10, notsent=0, cwnd=20):
        return {"instant_state": state, "in_flight": infl, "notsent": notsent, "cwnd": cwnd, "mss": 1000}

    recs = [rec("cwnd"), rec("pacing", infl=15, notsent=8000), rec("pacing", infl=10, notsent=3000),
            rec("pacing", infl=5, notsent=2000), rec("sndbuf"), rec("idle"), rec("pacing", notsent=2000)]
    assert kernel_labels(recs) == ["cwnd", "cwnd", "sndbuf", "sndbuf", "sndbuf", "app", "cwnd"]


def test_receiver_samples_move_back_by_the_reverse_delay(tmp_path: Path):
    """The kernel's samples are compared on a receiver-side capture's axis less the run's reverse delay, on a
    sender-side one as they are."""
    prefix = tmp_path / "run"
    prefix.with_suffix(".json").write_text('{"rev_delay_ms": 27.5, "fwd_delay_ms": 30.0}')
    assert clock_offset(prefix, "snd") == 0.0
    assert clock_offset(prefix, "rcv") == pytest.approx(0.0275, abs=1e-12)


# ---- hand-made flows

MSS = 1000
RTT = 0.05


def flow(t, flight, acked=None, rtt=None, seg_t=None, seg_len=None, dup=None) -> FlowInputs:
    """A flow from per-ACK arrays (``rtt`` NaN = no sample; srtt/rttmin follow as ingest's would)."""
    t = np.asarray(t, float)
    n = len(t)
    acked = np.full(n, MSS) if acked is None else np.asarray(acked)
    rtt = np.full(n, RTT) if rtt is None else np.asarray(rtt, float)
    srtt, rmin = np.full(n, np.nan), np.full(n, np.nan)
    s = m = np.nan
    for i, r in enumerate(rtt):
        if r > 0:
            s = r if np.isnan(s) else 0.875 * s + 0.125 * r
            m = r if np.isnan(m) else min(m, r)
        srtt[i], rmin[i] = s, m
    inp = FlowInputs.from_arrays(t, acked, mss=MSS, srtt=srtt, rttmin=rmin, rtt=rtt, flight=flight, acked=acked)
    seg_t = t + 1e-5 if seg_t is None else np.asarray(seg_t, float)  # (by default one segment sent at each ACK)
    seg_len = np.full(len(seg_t), MSS) if seg_len is None else np.asarray(seg_len)
    return dataclasses.replace(inp, seg_t=seg_t, seg_len=np.asarray(seg_len, np.int64),
                               dup=np.zeros(n, bool) if dup is None else np.asarray(dup, bool))


def clocked(seconds: float, window: int, per_rtt: int | None = None) -> np.ndarray:
    """ACK times of a window-limited flow: ``per_rtt`` ACKs a round trip (the window's) for ``seconds``."""
    k = per_rtt or window
    return np.arange(0.0, seconds, RTT / k)


def share(lim: FlowLimits, label: int) -> float:
    return lim.shares[LABELS[label]]


def test_cwnd_on_a_standing_queue():
    """A window of 20 segments refilled at every ACK, every RTT sample 30 ms over the first: the network."""
    t = clocked(3.0, 20)
    rtt = np.where(t < 2 * RTT, RTT, RTT + 0.03)
    lim = flow_limits(flow(t, np.full(len(t), 19 * MSS), rtt=rtt))
    assert share(lim, CWND) > 0.95, lim.shares


def test_cwnd_on_losses():
    """A Reno sawtooth on an empty path (no queue): the window grows by a segment a round trip from 10 to 20, a
    loss (duplicate ACKs) halves it. Congestion (T-RAT), between the losses too — while a flight held flat at
    an empty path, without losses, is the application's."""
    t = clocked(4.0, 20)
    rtts = np.floor(t / RTT).astype(int)
    window = 10 + rtts % 11  # 10, 11, …, 20, 10, …
    dup = (rtts % 11 == 10) & (np.arange(len(t)) % 20 < 4)
    sawtooth = flow_limits(flow(t, (window - 1) * MSS, dup=dup))
    assert share(sawtooth, CWND) > 0.9, sawtooth.shares
    flat = flow_limits(flow(t, np.full(len(t), 19 * MSS)))
    assert share(flat, CWND) < 0.1, flat.shares


def test_duplicate_acks_as_a_sack_sender_counts_them():
    """A window creeping up from 14 to 20 segments, cut after each round of losses: the ACKs of those rounds do not
    move and SACK more each (a Linux receiver changes its advertised window on each out-of-order segment, so RFC
    5681, which wants the window unchanged, counts none of them duplicate). RFC 6675 counts each (new SACKed data,
    the cumulative ACK not moved): the loss rounds are the network's, as where RFC 5681's flag is set — labels
    the same interval by interval; without either, the rounds after each loss read as the sender's."""
    t = clocked(6.0, 20)
    rtts = np.floor(t / RTT).astype(int)
    window = 14 + np.minimum(rtts % 20, 12) // 2
    lossy = (rtts % 20 == 19) & (np.arange(len(t)) % 20 < 6)
    acked = np.where(lossy, 0, MSS)
    sacked = np.where(lossy, (np.arange(len(t)) % 20 + 1) * MSS, 0)
    by_sack = flow_limits(flow(t, (window - 1) * MSS, acked=acked), sacked=sacked)
    by_flag = flow_limits(flow(t, (window - 1) * MSS, acked=acked, dup=lossy))
    neither = flow_limits(flow(t, (window - 1) * MSS, acked=acked))
    assert np.array_equal(by_sack.code, by_flag.code) and share(by_sack, CWND) >= 0.8, by_sack.shares
    assert share(neither, CWND) <= share(by_sack, CWND) - 0.3, neither.shares


def test_rwnd_at_the_advertised_window():
    """19 segments in flight after each ACK of 1: 20 outstanding before it, the window the receiver advertises."""
    t = clocked(3.0, 20)
    inp = flow(t, np.full(len(t), 19 * MSS))
    lim = flow_limits(inp, rwnd=np.full(len(t), 20 * MSS))
    assert share(lim, RWND) > 0.95, lim.shares
    assert share(flow_limits(inp, rwnd=np.full(len(t), 40 * MSS)), RWND) == 0.0  # room: not the receiver
    assert share(flow_limits(inp), RWND) == 0.0  # no window known


def test_the_receive_window_at_the_first_duplicate_ack():
    """``loss_rwnd_bytes``: the window the ACK before the first duplicate ACK advertised (the receiver's window a
    recovery runs into); None without a duplicate ACK or without the windows."""
    t = clocked(3.0, 20)
    window = 30_000.0 + 1000.0 * np.arange(len(t))
    dup = np.zeros(len(t), bool)
    dup[[100, 101, 102, 400]] = True
    inp = flow(t, np.full(len(t), 19 * MSS), dup=dup)
    assert flow_limits(inp, rwnd=window).loss_rwnd_bytes == window[99]
    assert flow_limits(inp).loss_rwnd_bytes is None
    assert flow_limits(flow(t, np.full(len(t), 19 * MSS)), rwnd=window).loss_rwnd_bytes is None


def test_app_when_idle():
    """Bursts of one round trip, then a second with nothing outstanding: the idle seconds are the application's."""
    busy = [clocked(RTT, 10) + start for start in (0.0, 1.05, 2.1)]
    t = np.concatenate(busy)
    f = np.concatenate([np.r_[np.full(len(b) - 1, 5 * MSS), 0] for b in busy])
    lim = flow_limits(flow(t, f, seg_t=t[f > 0] + 1e-5))
    assert share(lim, APP) > 0.85, lim.shares
    idle = lim.label_at(np.array([0.5, 1.5]))
    assert list(idle) == [APP, APP]
    # nothing outstanding from each burst's last ACK to the next burst's first segment: 2 × 1 s of 2.15 s
    assert lim.idle_share == pytest.approx(2 * (1.05 - RTT + RTT / 10) / (t[-1] - t[0]), abs=0.02)
    assert flow_limits(flow(clocked(3.0, 20), np.full(len(clocked(3.0, 20)), 19 * MSS))).idle_share == 0.0


def test_app_below_the_window():
    """A steady trickle: segments below the MSS, flight at 3 segments, no queue, no loss."""
    t = clocked(3.0, 3)
    lim = flow_limits(flow(t, np.full(len(t), 2 * MSS), seg_len=np.full(len(t), 600)))
    assert share(lim, APP) > 0.95, lim.shares


def test_sndbuf_drains_and_refills():
    """A flight that drains with the ACKs to a third of its peak without sending, then refills in one burst,
    never idle, in full segments (a writer woken when a third of its buffer is free): the send buffer."""
    t_ack, flights, seg_t = [], [], []
    now = 0.0
    for _ in range(30):  # a cycle of 30 segments: burst, then 2 round trips of ACKs
        seg_t += [now + 1e-5 * i for i in range(20)]
        for k in range(20):
            now += 2 * RTT / 20
            t_ack.append(now)
            flights.append(30 - k - 1)
    lim = flow_limits(flow(t_ack, np.array(flights) * MSS, seg_t=seg_t))
    assert share(lim, SNDBUF) > 0.8, lim.shares
    # the same flight sent evenly (a segment at each ACK): not the buffer
    even = flow_limits(flow(t_ack, np.full(len(t_ack), 20 * MSS)))
    assert share(even, SNDBUF) < 0.1


def test_sndbuf_refills_at_the_acks():
    """A flight that swings by only 0.3 of its peak (30 segments, a refill of 9): refilled at the ACK that freed
    the space (a woken writer), the send buffer; the same refills 5 ms after the ACKs (an application writing on
    its own clock), the application — whatever the swing."""

    def refills(offset: float) -> FlowLimits:
        t_ack, flights, seg_t = [], [], []
        now = 0.0
        for _ in range(40):
            seg_t += [now + offset + 1e-5 * i for i in range(9)]
            for k in range(9):
                now += RTT / 9
                t_ack.append(now)
                flights.append(30 - k - 1)
        return flow_limits(flow(t_ack, np.array(flights) * MSS, seg_t=seg_t))

    assert share(refills(1e-4), SNDBUF) > 0.9
    assert share(refills(0.005), APP) > 0.9


def trains(windows: list[int], burst: int = 4, refill: float = 0.25) -> FlowLimits:
    """A flight refilled in trains at the ACKs: each round trip's window (``windows``, segments) acknowledged in
    ``burst`` back-to-back ACK bunches, each freeing ``refill`` of it, and sent again 10 µs after its ACK in one
    train (plus the round's growth on its last: the window's new segment). No queue, no loss, no segment below
    the MSS: the ACK-clocked refills of rule 10 whether a window or a woken writer sent them."""
    t_ack, flights, acked, seg_t = [], [], [], []
    for r, w in enumerate(windows):
        q = max(round(refill * w), 2)
        grow = windows[r + 1] - w if r + 1 < len(windows) else 0
        for j in range(burst):
            at = r * RTT + (j + 1) * RTT / burst
            t_ack.append(at)
            flights.append((w - q) * MSS)
            acked.append(q * MSS)
            seg_t += [at + 1e-5 * (i + 1) for i in range(q + (grow if j == burst - 1 else 0))]
    return flow_limits(flow(t_ack, np.array(flights, float), acked=np.array(acked), seg_t=seg_t))


def test_a_window_creeping_up_is_the_network_not_the_send_buffer():
    """A congestion window growing by a segment every second round trip (CUBIC's Reno-friendly 0.53 a round,
    in whole segments), refilled in trains at the ACKs (a quarter of it at a time, a swing of 0.25): Linux grows
    the window only when the flight filled it, so a flight that creeps up round after round is the window's —
    the network, not the writer's buffer (whose size is fixed). Before the creep test, rule 8's steady growth
    (half a segment every round) missed it and rule 10's ACK-clocked refills made it ``sndbuf``."""
    creeping = [25 + r // 2 for r in range(120)]
    assert share(trains(creeping), CWND) >= 0.9
    assert share(trains(creeping), SNDBUF) <= 0.1
    # the same trains with the flight held at a fixed size (the writer's buffer): the send buffer
    assert share(trains([30] * 80), SNDBUF) >= 0.9
    # at its cap, with a round refilled short now and then (the peaks scatter below the bound, then return
    # to it in one step): not a creep, the send buffer
    capped = [24 if r % 10 == 3 else 30 for r in range(80)]
    assert share(trains(capped), SNDBUF) >= 0.9
    # a growing flight that drains by half of it between its refills (a swing of 0.5: a woken writer's, not a
    # window's refilled at every ACK) is not taken by the creep test
    assert share(trains(creeping, burst=2, refill=0.5), SNDBUF) >= 0.9


def test_a_capture_at_the_sender_end_keeps_its_times():
    """A capture the ingest puts at the sender end (its share of the round trip up to ``END_SHARE``: the host's own
    turnaround) sees the send times: refills 20 µs after the ACKs that woke the writer stay at those ACKs (moved
    back by 0.005 × RTTmin = 250 µs they would land before them and count as not clocked)."""
    t_ack, flights, seg_t = [], [], []
    now = 0.0
    for _ in range(40):
        seg_t += [now + 2e-5 + 1e-5 * i for i in range(9)]
        for k in range(9):
            now += RTT / 9
            t_ack.append(now)
            flights.append(30 - k - 1)
    inp = flow(t_ack, np.array(flights) * MSS, seg_t=seg_t)
    at_end = flow_limits(inp, vantage_position=0.005)
    assert share(at_end, SNDBUF) > 0.9
    assert at_end.shares == flow_limits(inp, vantage_position=0.0).shares


def test_a_fitted_block_marks_the_intervals_to_its_last_arrival():
    """At the receiver a block of 20 segments, rebuilt as sent at once at 10 ms after an idle time, arrives from
    110 to 129 ms, one segment a millisecond (within 0.85 of the 50 ms round trip, no pause): it fitted the
    window, and its flight (its ACKs leave with the arrivals) lasts from the interval it starts in to the one its
    last segment arrived in, the third. A pause of 10 ms in it (a window that stopped the sender): not fitted."""
    b = np.array([0.0, 0.05, 0.1, 0.15, 0.2])
    seen = 0.11 + 1e-3 * np.arange(20)
    t = np.concatenate(([0.0], seen + 1e-4))
    f = SimpleNamespace(t=t, flight=np.concatenate(([0.0], MSS * np.arange(19, -1, -1.0))),
                        seg_t=0.01 + 1e-6 * np.arange(20), seg_seen=seen, seg_len=np.full(20, float(MSS)),
                        rref=np.full(len(t), RTT))
    assert fitted_blocks(b, f, 1 / 16, 0.85, 0.1) == pytest.approx([1.0, 1.0, 1.0, 0.0])
    f.seg_seen = np.where(np.arange(20) >= 10, seen + 0.01, seen)
    assert fitted_blocks(b, f, 1 / 16, 0.85, 0.1) == pytest.approx([0.0] * 4)


def test_flows_of_one_to_three_intervals_are_labelled():
    """A flow of a round trip or two (a short reply) has one label per interval like any other: the neighbour
    sums of rules 2 and 10 hold one value per interval whatever the count (``np.convolve(..., "same")`` gives 3
    for 1 or 2 intervals, which crashed the service's replay of a 30-segment capture)."""
    for seconds in (0.5 * RTT, 1.5 * RTT, 2.5 * RTT, 3.5 * RTT):
        t = clocked(seconds, 8)
        lim = flow_limits(flow(t, np.full(len(t), 6 * MSS), seg_t=t + 5e-5))
        assert abs(sum(lim.shares.values()) - 1.0) < 1e-9, (seconds, lim.shares)


def test_unknown_without_rtt_and_without_acks():
    t = clocked(1.0, 10)
    lim = flow_limits(flow(t, np.full(len(t), 5 * MSS), rtt=np.full(len(t), np.nan)))
    assert lim.shares == {"cwnd": 0.0, "rwnd": 0.0, "app": 0.0, "sndbuf": 0.0, "unknown": 1.0}
    assert flow_limits(flow([0.0], [0])).shares["unknown"] == 1.0  # one ACK: no time to share


# ---- the series and the API


def test_series_cover_the_flow_and_shares_sum_to_one():
    t = clocked(2.0, 20)
    lim = flow_limits(flow(t, np.full(len(t), 19 * MSS), rtt=np.where(t < 0.2, RTT, RTT + 0.02)))
    assert lim.start[0] == t[0] and lim.end[-1] == t[-1]
    assert np.all(lim.start[1:] == lim.end[:-1])
    assert np.allclose((lim.end - lim.start)[:-1], RTT, atol=0.025)  # one round trip each (the last cut)
    assert abs(sum(lim.shares.values()) - 1.0) < 1e-12
    runs_ = lim.runs()
    assert runs_[0][0] == t[0] and runs_[-1][1] == t[-1]
    assert all(a[2] != b[2] for a, b in itertools.pairwise(runs_))
    assert lim.labels()[0] in LABELS


def test_held_time_is_the_wait_for_the_first_ack_that_releases_data():
    """Rule 6's exception: from an interval's start to its first ACK when nothing was sent before it and data went
    out at it (within 1/16 of the robust RTT); else nothing."""
    b = np.array([0.0, 0.1, 0.2, 0.3])
    t = np.array([0.06, 0.08, 0.12, 0.25])
    rref = np.full(len(t), 0.1)
    # interval 0: data at its first ACK (0.0603: 0.3 ms after); 1: data at 0.15, not at its first ACK (0.12);
    # 2: sent before its first ACK (0.21, ACK at 0.25)
    seg_t = np.array([0.0603, 0.061, 0.15, 0.21, 0.25])
    assert held_time(b, t, seg_t, rref, 1 / 16) == pytest.approx([0.06, 0.0, 0.0], abs=1e-12)
    assert held_time(b, t, seg_t[seg_t > 0.1], rref, 1 / 16) == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    late = np.array([0.0603 + 0.007, 0.15])  # 7 ms after the ACK: more than 1/16 of 100 ms
    assert held_time(b, t, late, rref, 1 / 16)[0] == 0.0


def test_shares_of():
    s = shares_of(np.array([0.0, 1.0, 3.0]), np.array([1.0, 3.0, 4.0]), np.array([CWND, APP, CWND], np.int8))
    assert s == {"cwnd": 0.5, "rwnd": 0.0, "app": 0.5, "sndbuf": 0.0, "unknown": 0.0}


def test_shares_sum_to_one():
    """On random interval series (where plain divisions leave sums like 1.0000000000000002 in about a third of
    them) the shares sum to 1 within 1e-12, each of them the label's share within 1e-12."""
    rng = np.random.default_rng(34)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        length = rng.exponential(0.05, n)
        end = np.cumsum(length)
        code = rng.integers(0, len(LABELS), n).astype(np.int8)
        s = shares_of(end - length, end, code)
        assert list(s) == list(LABELS)
        assert abs(sum(s.values()) - 1.0) <= 1e-12
        exact = np.bincount(code, weights=length, minlength=len(LABELS)) / length.sum()
        assert np.allclose(list(s.values()), exact, rtol=0, atol=1e-12)


def test_robust_rtt_sets_an_idle_restarts_echo_aside():
    """Samples of idle time + RTT (a receiver-side reconstruction's first flight after an idle) are set aside;
    a change that lasts is followed."""
    t = np.arange(100) * 0.01
    r = np.full(100, 0.05)
    r[10:14] = 0.5  # an echo of the ACK before an idle period
    r[25:] = 0.12  # the path's RTT, doubled and more, for good (accepted once it has lasted 8 medians)
    out, kept = np.empty(100), np.empty(100)
    robust_rtt_into(t, r, np.nan, 1.8, 8.0, out, kept)
    assert np.all(out[10:14] == 0.05) and np.all(np.isnan(kept[10:14]))
    assert out[60] == 0.05 and out[-1] == pytest.approx(0.12)


def test_queue_bound_holds_idle_samples_not_a_shared_queue():
    """At the receiver: a sample taken across the sender's idle time comes down to RTTmin + the train so far; a
    round trip ending after a short gap (other flows' data between the flow's segments at a shared bottleneck)
    loses no more than that gap (two flows sharing a bottleneck kept their 20 ms queue)."""
    seg_len = np.full(12, 1000.0)
    alone = np.concatenate((np.arange(6) * 1e-3, 0.2 + np.arange(6) * 1e-3))  # an idle time of ~0.19 s
    qb = queue_bound(alone, seg_len, RTT)
    assert bounded_samples(np.array([alone[6]]), np.array([0.24]), alone, qb)[0] == pytest.approx(RTT)
    assert bounded_samples(np.array([alone[8] + 1e-4]), np.array([0.24]), alone, qb)[0] == pytest.approx(
        RTT + 2e-3 + 1e-4)  # (two segments into the train, the ACK 0.1 ms after the last)
    shared = np.cumsum(np.tile([1e-3, 1e-3, 1e-3, 3e-3], 3))  # every fourth gap: others' data at the bottleneck
    qb = queue_bound(shared, seg_len, RTT)
    assert bounded_samples(np.array([shared[4]]), np.array([RTT + 0.02]), shared, qb)[0] == pytest.approx(
        RTT + 0.02 - 3e-3)
    assert bounded_samples(np.array([shared[5]]), np.array([RTT]), shared, qb)[0] == RTT  # within: kept


def test_no_queue_bound_keeps_the_samples_as_infinite_bounds_do():
    """Data not seen after the bottleneck has no bound: the samples come out exactly as held to infinite bounds,
    finite, infinite and missing ones alike, before the first segment and after."""
    rng = np.random.default_rng(3)
    seg_t = np.sort(rng.random(500))
    t = np.sort(rng.random(800)) * 1.1 - 0.05
    rtt = rng.random(800) * 0.3
    rtt[::17], rtt[5::23], rtt[9::31] = np.nan, np.inf, -np.inf
    infinite = QueueBound(np.full(len(seg_t), np.inf), np.full(len(seg_t), np.inf))
    with np.errstate(invalid="ignore"):  # (inf − inf in the infinite bounds' arithmetic)
        want = bounded_samples(t, rtt, seg_t, infinite)
    got = bounded_samples(t, rtt, seg_t, QueueBound.unbounded(len(seg_t)))
    assert np.array_equal(got, want, equal_nan=True)


def test_grid_bounds():
    t = np.linspace(0, 1, 101)
    b = grid_bounds(t, np.full(101, 0.1), 0.005)
    assert b[0] == 0.0 and b[-1] == 1.0 and np.allclose(np.diff(b), 0.1)
    assert len(grid_bounds(t, np.full(101, 1e-9), 0.005)) == 201  # the shortest interval: 5 ms


def sack_free(n: int) -> dict[str, np.ndarray]:
    """The ACK columns a hand-made batch without SACK and window options carries (``ACK_COLUMNS``)."""
    return {"ack": np.cumsum(np.full(n, MSS)), "sacked": np.zeros(n, np.int64), "sack_lo": np.full(n, -1),
            "sack_hi": np.full(n, -1), "rwnd": np.full(n, -1)}


def test_batch_is_per_flow():
    """``batch_limits`` gives each flow of a batch what ``flow_limits`` gives it alone."""
    t1, t2 = clocked(1.0, 20), clocked(1.5, 4)
    acks = {"t_ns": (np.r_[t1, t2] * 1e9).astype(np.int64), "t": np.r_[t1, t2], "t_rel": np.r_[t1, t2],
            "d": np.full(len(t1) + len(t2), MSS), "acked": np.full(len(t1) + len(t2), MSS),
            "dup": np.zeros(len(t1) + len(t2), bool),
            "rtt": np.r_[np.where(t1 < 0.1, RTT, RTT + 0.03), np.full(len(t2), RTT)],
            "srtt": np.full(len(t1) + len(t2), RTT), "rttmin": np.full(len(t1) + len(t2), RTT),
            "flight": np.r_[np.full(len(t1), 19 * MSS), np.full(len(t2), 3 * MSS)],
            "tsval": np.full(len(t1) + len(t2), -1)}
    acks |= sack_free(len(t1) + len(t2))
    rwnd = np.r_[np.full(len(t1), 100 * MSS), np.full(len(t2), 4 * MSS)]
    batch = FlowBatch.build(acks, np.array([0, len(t1), len(t1) + len(t2)]), None, None, [MSS, MSS], [7, 9])
    got = batch_limits(batch, rwnd=rwnd)
    for i, lim in enumerate(got):
        lo, hi = batch.row_offsets[i], batch.row_offsets[i + 1]
        alone = flow_limits(batch.flow(i), rwnd=rwnd[lo:hi])
        assert np.array_equal(lim.code, alone.code) and lim.shares == alone.shares
    assert got[1].shares["rwnd"] > 0.9 and got[0].shares["rwnd"] == 0.0


def test_rows_and_events():
    """Per-row columns of a flow whose rows merge into events take each event's last row."""
    t = np.repeat(clocked(1.0, 10), 2)
    n = len(t)
    acks = {"t_ns": (t * 1e9).astype(np.int64), "t": t, "t_rel": t, "d": np.full(n, MSS), "acked": np.full(n, MSS),
            "dup": np.zeros(n, bool), "rtt": np.full(n, RTT), "srtt": np.full(n, RTT), "rttmin": np.full(n, RTT),
            "flight": np.full(n, 8 * MSS), "tsval": np.full(n, -1)} | sack_free(n)
    inp = FlowBatch.build(acks, np.array([0, n]), None, None, [MSS], [0]).flow(0)
    assert len(inp) == n // 2
    rwnd = np.tile([50 * MSS, 10 * MSS], n // 2)  # each event's last row: 10 segments, flight + acked = 10
    assert flow_limits(inp, rwnd=rwnd).shares["rwnd"] > 0.9
    with pytest.raises(ValueError, match="ACK rows"):
        flow_limits(inp, rwnd=np.zeros(3))
    assert LABELS.index("unknown") == UNKNOWN


def test_an_unknown_peak_breaks_the_creep_of_rule_8() -> None:
    """``rising``: a window creeping by 0.3 MSS an interval over eight intervals is rising at their end; one
    unknown peak (0) among them breaks it (as its docstring says), not skipped."""
    peaks = 10.0 + 0.3 * np.arange(10)
    calm = np.zeros(10)
    assert rising(peaks, calm, 4, 1.0, 0.4).tolist() == [False] * 7 + [True] * 3
    peaks[5] = 0.0
    assert not rising(peaks, calm, 4, 1.0, 0.4).any()
