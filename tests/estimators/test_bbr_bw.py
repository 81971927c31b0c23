"""``bbr_bw``: Linux's delivery-rate sampler (tcp_rate.c) and BBRv1's bandwidth filter (tcp_bbr.c) replayed.

Against the kernel: testbed runs of Linux BBR senders (kernel 6.18; ``tests/data/bbr/``, provenance in its README;
one captured at the receiver), each with the sender's ``ss -tin`` polled every 15 ms — BBR's own ``bw``
(``bbr:(bw:…)``, the kernel's ``bbr_bw()`` times the MSS) on the capture's clock. At each poll the replayed
estimate (its value after the last ACK captured before the poll) must be within 5 % of the kernel's in the median
over the run, for every BBR flow; the share of polls within 5 % is checked too, at what each run reaches less a
margin (where it departs, and why: docs/estimators.md, ``bbr_bw``).

By hand: the windowed max (lib/win_minmax.c), the sampler on a few transmissions and ACKs (send and ACK phases,
the most recently sent range, SACK before the cumulative ACK, a retransmission's new record, samples shorter than
the minimum RTT), rounds and the 10-round window, the app-limited marks and what BBR does with them, the policer
model, and the decision at a loss.
"""

from __future__ import annotations

import csv
import math
from functools import cache

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.bandwidth import bbr
from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.ingest import ingest_capture
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "bbr"
#: Each run, and the share of the kernel's polls within 5 % that every BBR flow of it reaches at least.
RUNS = {
    "bbr_1f_10M_rtt40_buf2bdp": 0.99,
    "bbr_1f_10M_rtt40_buf1bdp_loss1pct": 0.99,
    "bbr_2f_20M_rtt20_buf1bdp": 0.6,
    "bbr_1f_10M_rtt40_buf2bdp_pysend": 0.95,
    "bbr_1f_10M_rtt40_buf2bdp_bitrate5M": 0.99,
    "bbr_1f_10M_rtt40_buf2bdp_rwnd": 0.95,
    "bbr_cubic_2f_10M_rtt40_buf2bdp": 0.95,
    "bbr_1f_10M_rtt40_buf1bdp_loss05pct_rcv": 0.95,  # captured at the receiver: the sender's view rebuilt
}


def kernel_bw(run: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per sender port: the poll times (epoch s) and the kernel's BBR bw (bit/s)."""
    out: dict[int, tuple[list[float], list[float]]] = {}
    with open(DATA / f"{run}.bbr_bw.csv", newline="") as f:
        for row in csv.DictReader(f):
            t, bw = out.setdefault(int(row["lport"]), ([], []))
            t.append(int(row["t_ns"]) / 1e9)
            bw.append(float(row["bbr_bw_bps"]))
    return {port: (np.array(t), np.array(bw)) for port, (t, bw) in out.items()}


@cache
def relative_differences(run: str) -> dict[int, np.ndarray]:
    """Per BBR flow (sender port): replayed/kernel − 1 at every poll after the flow's first estimate and up to
    its last ACK."""
    cap = ingest_capture(DATA / f"{run}.pcap.gz")
    out = {}
    for port, (t, kernel) in kernel_bw(run).items():
        s = next(x for x in cap.flows if x.sender.endswith(f":{port}"))
        data = cap.flow(s.flow_id)
        inp = FlowInputs.from_frames(data.acks, data.segments, s.mss)
        est = E.create("bbr_bw").series(inp) * 8
        k = np.searchsorted(inp.t_abs, t, side="right") - 1
        ok = (k >= 0) & (t <= inp.t_abs[-1])
        ours = est[k[ok]]
        have = ~np.isnan(ours)
        out[port] = ours[have] / kernel[ok][have] - 1
    return out


@pytest.mark.parametrize("run", RUNS)
def test_bbr_bw_matches_the_kernels_bbr_bw(run: str) -> None:
    rel = relative_differences(run)
    assert rel, run
    for port, r in rel.items():
        assert len(r) > 300, (run, port)
        assert float(np.median(np.abs(r))) <= 0.05, (run, port, float(np.median(np.abs(r))))
        assert float(np.mean(np.abs(r) <= 0.05)) >= RUNS[run], (run, port, float(np.mean(np.abs(r) <= 0.05)))


def test_the_kernels_margin_on_the_receive_window_run_is_its_unit() -> None:
    """Linux counts segments and reports ``bw`` as segments × MSS; replayed ``bbr_bw`` counts bytes. Where the
    receive window cuts segments short (``_rwnd``: 504-byte segments among the 1448-byte ones for 4.5 s) the two
    differ by the mean segment's share of the MSS, and by nothing else."""
    rel = relative_differences("bbr_1f_10M_rtt40_buf2bdp_rwnd")[40001]
    cap = ingest_capture(DATA / "bbr_1f_10M_rtt40_buf2bdp_rwnd.pcap.gz")
    s = next(x for x in cap.flows if x.sender.endswith(":40001"))
    seg = cap.flow(s.flow_id).segments.filter(cap.flow(s.flow_id).segments["t_rel"].is_between(0.3, 4.5))
    share = float(seg["len"].cast(float).mean()) / s.mss  # type: ignore[arg-type]  # 0.954
    assert float(np.median(rel)) == pytest.approx(share - 1, abs=0.001)


# ---- by hand

MSS = 1000


def flow(acks: list[tuple[float, int]], sends: list[tuple[float, int, int]], *, rttmin: float,
         d: list[int] | None = None, sack: dict[int, tuple[int, int, int]] | None = None,
         rwnd: list[int] | None = None) -> FlowInputs:
    """A flow from its ACK events ``(t, ack)`` and transmissions ``(t, seq, len)``; ``sack``: event → (sacked bytes,
    first block's start, end); ``d`` defaults to the bytes each ACK newly acknowledges."""
    t = np.array([a[0] for a in acks])
    ack = np.array([a[1] for a in acks], np.int64)
    blocks = np.array([(sack or {}).get(k, (0, -1, -1)) for k in range(len(t))], np.int64).reshape(-1, 3)
    d_ = np.array(d, np.int64) if d is not None else np.diff(ack, prepend=0)
    return FlowInputs.from_arrays(
        t, d_, mss=MSS, rttmin=np.full(len(t), rttmin), ack=ack, sacked=blocks[:, 0], sack_lo=blocks[:, 1],
        sack_hi=blocks[:, 2], rwnd=None if rwnd is None else np.array(rwnd, np.int64),
        segments=(np.array([x[0] for x in sends]), np.array([x[2] for x in sends]), np.array([x[1] for x in sends])))


def samples(inp: FlowInputs, **params: object) -> tuple[np.ndarray, np.ndarray]:
    """The series and, per event, the delivery-rate sample it took (``bbr.bbr_walk``'s trace): delivered bytes,
    interval (s), app-limited (0/1) and BBR's round count, NaN where the event gave no valid sample."""
    est = E.create("bbr_bw", **params)
    p = est.params
    n, ns = len(inp.t), len(inp.seg_t)
    out = np.empty(n)
    trace = np.full((n, 4), np.nan)
    bbr.bbr_walk(inp.t, inp.d, inp.ack, inp.sacked, inp.sack_lo, inp.sack_hi, inp.rwnd, inp.rttmin, inp.seg_t,
                 inp.seg_len, inp.seg_seq, inp.mss, p["rtt_window"], p["idle_gap"], p["app_limited"], p["policer"],
                 np.empty(ns, np.int64), np.empty(ns, np.int64), np.empty(ns, np.int64), np.empty((ns, 5)),
                 np.empty(bbr.STATE), np.empty(bbr.COUNTS, np.int64), np.empty(3, np.int64), trace, out)
    np.testing.assert_array_equal(out, est.series(inp))  # the same walk as replay's
    return out, trace


def test_windowed_max_as_lib_win_minmax() -> None:
    """Kathleen Nichols' three choices over a 10-round window, step by step as minmax_running_max runs."""
    mt, mv = np.zeros(3, np.int64), np.zeros(3)
    steps = [  # (round, sample, the windowed max after it, the three choices after it)
        (1, 5.0, 5.0, [(1, 5), (1, 5), (1, 5)]),  # a new max: every choice is it
        (2, 3.0, 5.0, [(1, 5), (1, 5), (1, 5)]),  # below all, within a quarter of the window: nothing moves
        (4, 3.0, 5.0, [(1, 5), (4, 3), (4, 3)]),  # a quarter passed (dt 3 > 10/4): a 2nd choice
        (7, 2.0, 5.0, [(1, 5), (4, 3), (7, 2)]),  # half passed (dt 6 > 5): a 3rd choice
        (12, 1.0, 3.0, [(4, 3), (7, 2), (12, 1)]),  # the max is 11 rounds old: the 2nd choice moves up
        (18, 1.0, 1.0, [(18, 1), (18, 1), (18, 1)]),  # the 2nd is 11 old too: both move up, twice
        (19, 6.0, 6.0, [(19, 6), (19, 6), (19, 6)]),
        (40, 2.0, 2.0, [(40, 2), (40, 2), (40, 2)]),  # nothing left in the window: reset to the sample
    ]
    for t, v, want, choices in steps:
        assert bbr.minmax_running_max(mt, mv, 10, t, v) == want
        assert list(zip(mt.tolist(), mv.tolist(), strict=True)) == choices, t


def test_sampler_counts_from_the_send_and_takes_the_longer_phase() -> None:
    # four 1000-byte segments at 0, 10, 20, 30 ms; each acknowledged alone at 100, 110, 120, 130 ms; RTTmin 100 ms
    inp = flow([(0.10, 1000), (0.11, 2000), (0.12, 3000), (0.13, 4000)],
               [(0.00, 0, 1000), (0.01, 1000, 1000), (0.02, 2000, 1000), (0.03, 3000, 1000)], rttmin=0.1)
    out, trace = samples(inp)
    # every segment was sent before any delivery (delivered 0 then, at the delivery clock's start 0 s): a sample is
    # all bytes delivered so far over the time since 0 — 1000/0.10, 2000/0.11, 3000/0.12, 4000/0.13
    np.testing.assert_allclose(trace[:, 0], [1000, 2000, 3000, 4000])
    np.testing.assert_allclose(trace[:, 1], [0.10, 0.11, 0.12, 0.13])
    assert trace[:, 2].tolist() == [1, 1, 1, 1]  # the first flight: Linux starts a connection app-limited
    assert math.isnan(out[0])  # the first event only opens the clock (its sample is in the filter)
    np.testing.assert_allclose(out[1:], [2000 / 0.11, 3000 / 0.12, 4000 / 0.13])  # each a new max


def test_ack_compression_is_bounded_by_the_send_phase() -> None:
    # A0, A1 at 0 s; A0 acked at 100 ms; B sent then, acked 50 ms later (its ACK came early): RTTmin 50 ms
    inp = flow([(0.10, 1000), (0.12, 2000), (0.15, 3000)],
               [(0.00, 0, 1000), (0.00, 1000, 1000), (0.10, 2000, 1000)], rttmin=0.05)
    out, trace = samples(inp)
    # B: delivered 1000 when sent (A0 at 0.10 s, sent at 0 s: B's send phase starts there) — send phase 0.10 − 0,
    # ACK phase 0.15 − 0.10 = 0.05: the longer, 0.10, gives 2000/0.10 (the ACK phase alone would say 40000)
    assert trace[2, 1] == pytest.approx(0.10) and trace[2, 0] == 2000
    assert out[2] == pytest.approx(20000.0)
    assert trace[2, 2] == 0  # B left after the first delivery: not app-limited
    # a sample shorter than the minimum RTT is dropped (tcp_rate_gen): with RTTmin 110 ms, A0's (0.10 s) and B's
    _, trace = samples(flow([(0.10, 1000), (0.12, 2000), (0.15, 3000)],
                            [(0.00, 0, 1000), (0.00, 1000, 1000), (0.10, 2000, 1000)], rttmin=0.11))
    assert np.isnan(trace[[0, 2], 1]).all() and trace[1, 1] == pytest.approx(0.12)


def test_sack_then_the_cumulative_ack_and_a_retransmission() -> None:
    # five segments at 0–40 ms; the second (seq 1000) lost, SACKed around; sent again at 150 ms; all acked at 250 ms
    inp = flow([(0.10, 1000), (0.12, 1000), (0.13, 1000), (0.14, 1000), (0.25, 5000)],
               [(0.00, 0, 1000), (0.01, 1000, 1000), (0.02, 2000, 1000), (0.03, 3000, 1000), (0.04, 4000, 1000),
                (0.15, 1000, 1000)], rttmin=0.1,
               sack={1: (1000, 2000, 3000), 2: (2000, 2000, 4000), 3: (3000, 2000, 5000)})
    out, trace = samples(inp)
    # delivered = ack + sacked: 1000, 2000, 3000, 4000, 5000; the SACKed segments (sent at 20, 30, 40 ms, delivered
    # 0 then) give 2000/0.12, 3000/0.13, 4000/0.14
    np.testing.assert_allclose(trace[:, 0], [1000, 2000, 3000, 4000, 1000])
    np.testing.assert_allclose(trace[1:4, 1], [0.12, 0.13, 0.14])
    # the cumulative ACK at 250 ms: the SACKed ones are skipped (marked delivered), the retransmission is the
    # sample — its record is of 150 ms: delivered 4000, last delivery 140 ms, latest delivered sent at 40 ms:
    # send phase 0.15 − 0.04 = 0.11, ACK phase 0.25 − 0.14 = 0.11; 1000 bytes in 0.11 s, a new round
    assert trace[4, 1] == pytest.approx(0.11) and trace[4, 2] == 0 and trace[4, 3] == 2
    assert out[4] == pytest.approx(4000 / 0.14)  # below the max: the max stays


def test_app_limited_after_an_idle_pipe_and_a_short_segment() -> None:
    # idle restart: everything acked at 100 ms, nothing sent until 500 ms (> idle_gap): that flight is app-limited;
    # sent again at the ACK's own time (600 ms, in response to it): not
    inp = flow([(0.10, 1000), (0.60, 2000), (0.70, 3000)],
               [(0.00, 0, 1000), (0.50, 1000, 1000), (0.60, 2000, 1000)], rttmin=0.05)
    _, trace = samples(inp)
    assert trace[:, 2].tolist() == [1, 1, 0]
    # a short segment (500 < MSS) that the receive window did not cut: the sender had less than a segment to send;
    # the bubble is what was delivered (1000) + in flight (1000): the segment of 1000 acked at 200 ms is still in
    # it, the short one too; cut at the window's edge (ack 1000 + rwnd 1500 = its end 2500) it is not app-limited
    acks, sends = [(0.10, 1000), (0.20, 2000), (0.21, 2500)], [(0.00, 0, 1000), (0.01, 1000, 1000), (0.11, 2000, 500)]
    _, trace = samples(flow(acks, sends, rttmin=0.05, rwnd=[10000] * 3))
    assert trace[:, 2].tolist() == [1, 1, 1]
    _, trace = samples(flow(acks, sends, rttmin=0.05, rwnd=[1500] * 3))
    assert trace[:, 2].tolist() == [1, 1, 0]


def test_app_limited_after_a_silence_the_window_allowed() -> None:
    """New data after a silence with the window open (tcp_rate_check_app_limited at the application's next write):
    four segments at 0 s, acked from 100 ms (the max then ~30.8 kB/s: a pacing interval of 32.5 ms); one more sent
    at the ACK of 110 ms (window-limited: not marked); the ACK of 120 ms opens the window and nothing is sent until
    300 ms — 190 ms after the last new data (> 4 intervals), 180 ms after that ACK (> 2): the sender had nothing
    queued, that segment's sample is app-limited."""
    acks = [(0.10, 1000), (0.11, 2000), (0.12, 3000), (0.13, 4000), (0.45, 5000), (0.50, 6000)]
    sends = [(0.00, 0, 1000), (0.00, 1000, 1000), (0.00, 2000, 1000), (0.00, 3000, 1000), (0.11, 4000, 1000)]
    _, trace = samples(flow(acks, [*sends, (0.30, 5000, 1000)], rttmin=0.05))
    assert trace[:, 2].tolist() == [1, 1, 1, 1, 0, 1]  # first flight, sent at an ACK, after the silence
    # sent at the ACK that opened the window (120 ms): a window-limited sender, not marked
    _, trace = samples(flow(acks, [*sends, (0.12, 5000, 1000)], rttmin=0.05))
    assert trace[:, 2].tolist() == [1, 1, 1, 1, 0, 0]
    # the receive window closed (the ACK of 130 ms allows up to 4000 + 1500 < 6000): its silence, not marked
    _, trace = samples(flow(acks, [*sends, (0.30, 5000, 1000)], rttmin=0.05, rwnd=[1500] * 6))
    assert trace[:, 2].tolist() == [1, 1, 1, 1, 0, 0]
    # in fast recovery (the segment at 4000 sent again after the ACK of 120 ms): the silence is the loss's
    _, trace = samples(flow(acks, [*sends, (0.125, 4000, 1000), (0.30, 5000, 1000)], rttmin=0.05))
    assert trace[5, 2] == 0


def receiver_side_send_times(sent: list[float], queued: list[float], tsval_base: int | None,
                             srtt: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """``bbr.send_times`` on a flow captured at its receiver: segments of 1000 bytes sent at ``sent`` (the sender's
    clock), 50 ms each way plus ``queued`` forward, each ACKed 0.1 ms after it arrives; ``srtt`` as ingest rebuilds
    it there (inflated by the sender's holding time), the minimum RTT 100 ms; TSvals in 1 ms ticks from
    ``tsval_base`` (32-bit, wrapping; None: no timestamps). Returns the send times and the truth on the ACKs' axis
    (the sender's clock less the return path's 50 ms)."""
    s, q = np.array(sent), np.array(queued)
    seg_t = s + 0.05 + q
    t = seg_t + 0.0001
    n = len(s)
    ack = (np.arange(n) + 1) * 1000
    tsval = (np.full(n, -1, np.int64) if tsval_base is None
             else (tsval_base + np.floor(s * 1000).astype(np.int64)) % (1 << 32))
    out, shift = np.empty(n), np.empty(n)
    bbr.send_times(t, ack, np.full(n, srtt), np.full(n, 0.1), seg_t, np.arange(n, dtype=np.int64) * 1000,
                   np.full(n, 1000, np.int64), tsval, shift, out)
    return out, s - 0.05


def test_send_times_off_the_sender_from_the_tsvals() -> None:
    """At the receiver a segment's send time is where its TSval puts it: the arrival less the minimum round trip,
    held within its 1 ms tick (a queued segment: at its tick's end, not 20 ms late); the smoothed RTT, which counts
    the sender's holding time as path delay, would put each 200 ms too early. The 32-bit clock may wrap."""
    sent, queued = [0.0, 0.0005, 0.2, 0.2005, 0.4, 0.4012], [0.0, 0.0, 0.0, 0.0, 0.02, 0.021]
    for base in (7000, (1 << 32) - 300):  # the second wraps at 0.3 s
        out, truth = receiver_side_send_times(sent, queued, base)  # within a tick (and the receiver's 0.1 ms)
        np.testing.assert_allclose(out, truth, atol=0.0011 + 1e-9)
        assert abs(out[4] - truth[4]) > 0.0005  # (queued: placed at its tick's end)
    out, truth = receiver_side_send_times(sent, queued, None)  # without timestamps: the ACK's time less srtt
    np.testing.assert_allclose(out, np.maximum.accumulate(truth + 0.1001 + np.array(queued) - 0.3), atol=1e-9)
    # a tick no sender uses (the TSvals advance 40 times slower than the arrivals): not used
    arrived, untouched = np.array([0.05, 0.25, 0.45]), np.zeros(3)
    assert not bbr.tsval_send_times(arrived, np.array([5, 10, 15], np.int64), 0.1, untouched)
    assert not untouched.any()


def test_app_limited_samples_below_the_max_are_skipped() -> None:
    # a fast first flight (30769 B/s by its last sample), then two app-limited flights after idle periods at
    # 10000 B/s; a 1-round window: without the marks the slower samples would replace the max after two rounds
    acks = [(0.10, 1000), (0.11, 2000), (0.12, 3000), (0.13, 4000), (0.60, 5000), (1.10, 6000)]
    sends = [(0.00, 0, 1000), (0.01, 1000, 1000), (0.02, 2000, 1000), (0.03, 3000, 1000), (0.50, 4000, 1000),
             (1.00, 5000, 1000)]
    inp = flow(acks, sends, rttmin=0.09)
    out, trace = samples(inp, rtt_window=1)
    np.testing.assert_allclose(trace[4:, 0] / trace[4:, 1], [10000, 10000])
    assert trace[4:, 2].tolist() == [1, 1] and trace[4:, 3].tolist() == [2, 3]
    assert out[5] == pytest.approx(4000 / 0.13)
    out, _ = samples(inp, rtt_window=1, app_limited=False)
    assert out[5] == pytest.approx(10000)


def steady(rate_change_at: float, rtt: float = 0.1, gap: float = 0.001, end: float = 5.0) -> FlowInputs:
    """Segments every ``gap`` (1000 B: 1 MB/s), every ``2·gap`` after ``rate_change_at``; each acknowledged alone
    one ``rtt`` later."""
    send_t, t = [], 0.0
    while t < end:
        send_t.append(t)
        t += gap if t < rate_change_at else 2 * gap
    st = np.array(send_t)
    seq = np.arange(len(st)) * MSS
    return flow([(float(x) + rtt, int(q) + MSS) for x, q in zip(st, seq, strict=True)],
                [(float(x), int(q), MSS) for x, q in zip(st, seq, strict=True)], rttmin=rtt)


def test_ten_rounds_hold_the_max_then_it_follows_the_rate() -> None:
    inp = steady(2.0)
    out, trace = samples(inp)

    def at(t: float) -> float:
        return float(out[np.searchsorted(inp.t, t, side="right") - 1])

    assert at(1.5) == pytest.approx(1e6)  # the ACK clock: each sample 1000 B per ms
    rounds = trace[:, 3]
    changed = int(np.searchsorted(inp.t, 2.0 + 0.1))  # the first ACK of a segment sent at the lower rate
    first_round = rounds[changed]
    for t in (2.5, 2.8, 3.0):  # within 10 rounds of the last 1 MB/s sample: the max holds
        assert at(t) == pytest.approx(1e6), t
    assert at(3.6) == pytest.approx(5e5)  # then the filter has only the new rate
    k = int(np.searchsorted(inp.t, 3.6))
    assert rounds[k] - first_round > 10


def test_a_policer_two_lossy_intervals_of_one_rate() -> None:
    """bbr_lt_bw_sampling step by step: sampling starts at a loss; an interval of ≥ 4 rounds ends at a loss with
    ≥ 50/256 of its bytes lost; two at rates within 1/8 of each other: their mean, for 48 rounds of PROBE_BW."""
    c, lt = np.zeros(bbr.COUNTS, np.int64), np.zeros(10)

    def step(round_start: bool, losses: int, delivered: int, lost: int, at: float, app: bool = False) -> None:
        c[bbr.C_DELIVERED], c[bbr.C_LOST] = delivered, lost
        bbr._lt_sampling(round_start, losses, app, at, c, lt)

    step(False, 1, 0, 0, 1.0)  # the first loss: an interval starts at 1.000 s
    assert lt[bbr.LT_SAMPLING] == 1 and lt[bbr.LT_LAST_STAMP] == 1000
    for _ in range(4):
        step(True, 0, 50_000, 10_000, 1.5)  # four rounds, no loss at their ends
    step(False, 1, 100_000, 25_000, 2.0)  # a loss, 25 % lost, 100 kB in 1000 ms: 100 kB/s, a first interval
    assert lt[bbr.LT_BW] == pytest.approx(100_000) and not lt[bbr.LT_USE] and lt[bbr.LT_RTT_CNT] == 0
    for _ in range(4):
        step(True, 0, 150_000, 40_000, 2.5)
    step(False, 1, 210_000, 52_000, 3.0)  # 110 kB with 27 kB lost (24.5 %) in 1000 ms: within 1/8 of 100 kB/s
    assert lt[bbr.LT_USE] == 1 and lt[bbr.LT_BW] == pytest.approx(105_000)
    lt[bbr.FULL_REACHED] = 1
    for _ in range(47):
        step(True, 0, 300_000, 52_000, 4.0)
    assert lt[bbr.LT_USE] == 1
    step(True, 0, 300_000, 52_000, 4.0)  # the 48th round: back to the max filter
    assert lt[bbr.LT_USE] == 0 and lt[bbr.LT_BW] == 0


def test_decision_keeps_the_model() -> None:
    inp = steady(10.0, end=1.0)
    est = E.create("bbr_bw")
    s = est.series(inp)
    k = len(s) - 1  # 1 MB/s; RTTmin 0.1 s: BDP 100 segments
    ctx = LossContext(FAST_RETRANSMIT, k, 1.0, 1.2, 150_000, 0.1, MSS, 0)
    d = est.decide(inp, s, ctx)
    assert d.estimate == pytest.approx(1e6)
    assert d.ssthresh_segments == pytest.approx(100.0)  # bw·min_rtt: what BBR left ssthresh at after STARTUP
    assert d.cwnd_segments == pytest.approx(150.0)  # packet conservation: what is in flight
    assert "2·BDP = 200.0 seg" in d.note
    t = est.decide(inp, s, LossContext(TIMEOUT, k, 1.0, 1.5, 150_000, 0.1, MSS, 0))
    assert t.ssthresh_segments == pytest.approx(100.0) and t.cwnd_segments == 1.0
    assert est.decide(inp, s, LossContext(FAST_RETRANSMIT, k, 1.0, 1.2, 8000, 0.001, MSS, 0)).ssthresh_segments == 4.0
    assert est.decide(inp, s, LossContext(FAST_RETRANSMIT, 0, 1.0, 1.2, 8000, 0.1, MSS, 0)).ssthresh_segments is None
    assert est.decide(inp, s, LossContext(FAST_RETRANSMIT, k, 1.0, 1.2, 8000, math.nan, MSS, 0)).cwnd_segments is None
