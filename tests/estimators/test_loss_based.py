"""The decision-only congestion controls of seed 004 (ESTIMATORS.md §8), computed by hand.

``w`` is the real sender's flight at the loss in segments (here flight/mss with mss = 1000 bytes).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, LossContext
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.scoring.limits import CWND

MSS = 1000
LOSS_BASED = ("stcp", "hstcp", "htcp", "bic", "cubic")


def flat_inputs(n: int = 400) -> FlowInputs:
    t = np.arange(n) * 0.01
    return FlowInputs.from_arrays(t, np.full(n, MSS), mss=MSS, srtt=np.full(n, 0.1), rttmin=np.full(n, 0.1),
                                  flight=np.full(n, 40 * MSS))


def ctx(event: int, w: float, kind: str = FAST_RETRANSMIT, start: float | None = None, end: float | None = None,
        episode: int = 0) -> LossContext:
    start = event * 0.01 + 0.005 if start is None else start
    return LossContext(kind, event, start, end, int(w * MSS), 0.1, MSS, episode)


def ss_of(name: str, flights: list[float], kinds: list[str] | None = None, **params: object) -> list[float | None]:
    inp = flat_inputs()
    est = E.create(name, **params)
    kinds = kinds or [FAST_RETRANSMIT] * len(flights)
    cs = [ctx(10 * (i + 1), w, k, episode=i) for i, (w, k) in enumerate(zip(flights, kinds, strict=True))]
    return [d.ssthresh_segments for d in est.decide_all(inp, est.series(inp), cs)]


def test_stcp_keeps_seven_eighths():
    assert ss_of("stcp", [40, 10, 2]) == [35.0, 8.75, 2.0]  # 2·7/8 = 1.75 → the floor of 2
    assert ss_of("stcp", [40], b=0.5) == [20.0]


def test_hstcp_decrease_is_rfc3649s_log_line():
    got = ss_of("hstcp", [38, 1000, 83000, 10])
    assert got[0] == 19.0  # w ≤ Low_Window: b = 0.5
    # b(1000) = −0.4·ln(1000/38)/ln(83000/38) + 0.5 = −0.4·3.270169/7.689010 + 0.5 = 0.329878
    assert got[1] == pytest.approx(1000 * (1 - 0.329878), abs=1e-3)
    assert got[2] == pytest.approx(83000 * 0.9)  # b(High_Window) = High_Decrease
    assert got[3] == 5.0


def test_bic_halves_below_low_window_and_keeps_819_of_1024_above():
    assert ss_of("bic", [10, 14, 100]) == [5.0, 7.0, 79.98046875]
    assert ss_of("bic", [100], beta="buffer_study") == [80.0]  # the buffer study's decrement 0.2


def test_cubic_keeps_seven_tenths_and_the_seeds_alternative():
    assert ss_of("cubic", [100, 3, 2]) == pytest.approx([70.0, 2.1, 2.0])
    assert ss_of("cubic", [100], beta="buffer_study") == [80.0]
    assert ss_of("cubic", [100], beta="seed004") == [80.0]  # the alternative's old name, still read
    assert ss_of("cubic", [1024], beta="linux") == [717.0]


@pytest.mark.parametrize(("name", "beta"), [("bic", 819 / 1024), ("cubic", 0.7)])
def test_wmax_with_fast_convergence_carried_through_the_loss_events(name, beta):
    inp = flat_inputs()
    est = E.create(name)
    flights = [100, 80, 90, 50, 30]
    kinds = [FAST_RETRANSMIT, FAST_RETRANSMIT, FAST_RETRANSMIT, TIMEOUT, FAST_RETRANSMIT]
    cs = [ctx(10 * (i + 1), w, k, episode=i) for i, (w, k) in enumerate(zip(flights, kinds, strict=True))]
    notes = [d.note for d in est.decide_all(inp, est.series(inp), cs)]
    fc = (1 + beta) / 2
    # 100 → W_max 100; 80 < 100 → 80·(1+β)/2; 90 ≥ that → 90; 50 < 90 → 50·(1+β)/2, then the timeout resets
    # W_max to 0, so 30 is a new maximum
    want = [100.0, 80 * fc, 90.0, 50 * fc, 30.0]
    for note, w in zip(notes, want, strict=True):
        assert f"W_max = {w:.1f} segments" in note
    assert "reset by the timeout" in notes[3]
    off = E.create(name, fast_convergence=False)
    assert "W_max = 80.0 segments" in off.decide_all(inp, off.series(inp), cs)[1].note


def htcp_flow() -> tuple[FlowInputs, list[LossContext]]:
    """Events every 10 ms; srtt and acked chosen so that each of four loss events takes one branch."""
    n = 300
    t = np.arange(n) * 0.01
    srtt = np.full(n, 0.1)
    acked = np.full(n, MSS)
    srtt[21:100] = 0.15  # RTTmax 0.1 → 0.12 → 0.14 → 0.15 (at most 20 ms per ACK)
    srtt[100:121] = 0.3  # in recovery of loss 0 (0.995, 1.2]: RTTmax does not move
    srtt[121:200] = 0.16  # RTTmax restarts at RTTmin 0.1 → 0.12 → 0.14 → 0.16
    srtt[200:211] = 0.4  # recovery of loss 1 (1.995, 2.1]
    acked[200:300] = 2 * MSS  # the epoch throughput doubles from loss 1 to loss 2, then holds
    srtt[211:251] = 0.12
    srtt[251:261] = 0.4  # recovery of loss 2 (2.495, 2.6]
    srtt[261:300] = 0.11  # RTTmin/RTTmax = 0.1/0.11 = 0.909 → clamped to 0.8
    inp = FlowInputs.from_arrays(t, acked, mss=MSS, srtt=srtt, rttmin=np.minimum.accumulate(srtt),
                                 flight=np.full(n, 40 * MSS), acked=acked)
    cs = [ctx(99, 40, end=1.2, episode=0), ctx(199, 40, end=2.1, episode=1), ctx(249, 40, end=2.6, episode=2),
          ctx(299, 40, episode=3)]
    return inp, cs


def test_htcp_beta_from_rtts_and_epoch_throughput():
    inp, cs = htcp_flow()
    est = E.create("htcp")
    got = est.decide_all(inp, est.series(inp), cs)
    # loss 0: no epoch before → 0.5. Epoch 0: 99 000 B over 0.995 s = 99 497 B/s.
    assert got[0].ssthresh_segments == 20.0 and "first loss" in got[0].note
    # loss 1: epoch 1 = 100 000 B over 1.0 s (+0.5 %): adaptive, RTTmin 0.1 / RTTmax 0.16 = 0.625
    assert got[1].ssthresh_segments == pytest.approx(40 * 0.625)
    assert "RTTmax 160.0 ms" in got[1].note
    # loss 2: 50 ACKs × 2000 B over 0.5 s = 200 000 B/s: doubled → 0.5
    assert got[2].ssthresh_segments == 20.0 and "throughput changed" in got[2].note
    # loss 3: 200 000 B/s again; 0.1/0.11 clamped to β_max = 0.8
    assert got[3].ssthresh_segments == pytest.approx(32.0)
    linux = E.create("htcp", beta_max="linux")
    assert linux.decide_all(inp, linux.series(inp), cs)[3].ssthresh_segments == pytest.approx(40 * 102 / 128)


def test_htcp_rttmax_ignores_recovery_and_steps_at_most_20_ms():
    inp, cs = htcp_flow()
    # without the 20 ms step the jump to 0.15 is taken at once; RTTmax in recovery (0.3) never counts
    est = E.create("htcp", max_rtt_step=10.0)
    notes = [d.note for d in est.decide_all(inp, est.series(inp), cs)]
    assert "RTTmax 150.0 ms" in notes[0] and "RTTmax 160.0 ms" in notes[1]
    slow = E.create("htcp", max_rtt_step=0.001)  # 1 ms per ACK: 0.1 → 0.16 takes 60 of loss 1's 79 ACKs
    assert "RTTmax 160.0 ms" in slow.decide_all(inp, slow.series(inp), cs)[1].note
    slower = E.create("htcp", max_rtt_step=0.0004)  # 0.4 ms per ACK: 79 ACKs reach 0.1316
    assert "RTTmax 131.6 ms" in slower.decide_all(inp, slower.series(inp), cs)[1].note


@pytest.mark.parametrize("name", LOSS_BASED)
def test_decision_only_no_estimate_and_the_reaction(name):
    inp = flat_inputs()
    est = E.create(name)
    s = est.series(inp)
    assert np.isnan(s).all() and not E.get(name).has_series
    fr, to, none = est.decide_all(inp, s, [ctx(10, 40, end=0.3), ctx(50, 40, TIMEOUT, episode=1),
                                           LossContext(FAST_RETRANSMIT, -1, 0.9, None, 0, math.nan, MSS, 2)])
    assert fr.estimate is None and fr.cwnd_segments == fr.ssthresh_segments and fr.cwnd_applied_t == 0.3
    assert to.cwnd_segments == 1.0 and to.ssthresh_segments is not None and to.ssthresh_segments >= 2.0
    assert none.ssthresh_segments is None and none.cwnd_segments is None  # no flight known: no decision
    alone = est.decide(inp, s, ctx(10, 40, end=0.3))  # one event alone: as the flow's first
    assert alone.ssthresh_segments == fr.ssthresh_segments


def test_groups_expand_in_order():
    assert E.expand(["highspeed"]) == ["newreno", "stcp", "hstcp", "htcp", "westwood_plus", "bic", "cubic"]
    assert E.expand(["seed004"]) == E.expand(["highspeed"])  # the group word's old name, still read
    assert E.expand(["be", "all"])[:2] == ["be", "re"] and set(E.expand(["all"])) == set(E.names())
    assert E.expand(["stcp", "cubic", "stcp"]) == ["stcp", "cubic"]
    assert not set(E.DEFAULT_ORDER) & set(LOSS_BASED)  # the default set keeps to the estimators


def test_every_shared_capture_replays_them():
    """The five replay on every shared capture (every flow, any vantage): a decision at every loss event, at
    least the floor of 2 segments, and no estimate anywhere; the decisions scored are those at the loss events
    in the time the network limited the sender."""
    from ackreplay.core.capture_scoring import score_file
    from tests.conftest import shared_captures

    for path in shared_captures():
        sc = score_file(path, [E.create(n) for n in LOSS_BASED], allow_vantage=True)
        for fr in sc.replay.flows:
            for name in LOSS_BASED:
                rows = [r for r in fr.decision_rows if r["estimator"] == name]
                assert fr.scores[name]["mean_bps"] is None
                assert fr.limits is not None
                scored = fr.limits.label_at(np.array([r["t_rel"] for r in rows], float)) == CWND
                assert fr.scores[name]["decisions"] == int(scored.sum())  # every such loss event decided
                assert all(r["ssthresh_segments"] >= 2.0 for r in rows)
                assert all(r["estimate_bps"] is None for r in rows)
