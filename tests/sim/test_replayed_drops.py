"""Random drops replayed segment by segment (``FlowSpec.loss_fates``: a capture's realised draw, docs/whatif.md):
the engine drops exactly the transmissions the fates name and no other, draws at the link's rate only where a
segment has no fate, and is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.sim.engine import run_loop, seed_random
from ackreplay.sim.model import FlowSpec, Link, SimConfig, SimError, build_state, simulate

#: 10 Mbit/s, 40 ms, a buffer far above what 4 s can fill past the first loss: only the replayed drops lose.
DEEP = Link(10e6, buffer_packets=2000)


def fates(n: int, drops: dict[int, int], hidden: tuple[int, int] | None = None) -> np.ndarray:
    out = np.zeros(n, np.int8)
    for seg, k in drops.items():
        out[seg] = k
    if hidden is not None:
        out[hidden[0]:hidden[1]] = -1
    return out


@pytest.mark.parametrize("control", ["newreno", "cubic"])
def test_the_engine_drops_exactly_the_replayed_transmissions(control: str) -> None:
    """Segment 300's first transmission, 900's first two (its retransmission lost too): every fate is spent —
    each named transmission reached the random loss and was dropped — and the sender retransmitted exactly those
    three, with no loss at the buffer and none drawn (the link's rate is 0)."""
    replay = fates(3000, {300: 1, 900: 2})
    state = build_state(DEEP, [FlowSpec(control, 0.04, loss_fates=replay)], SimConfig(4.0))
    seed_random(1)
    run_loop(state)
    assert state.fate[0, 300] == 0 and state.fate[0, 900] == 0 and state.fate.min() == 0 and state.fate.max() == 0
    result = simulate(DEEP, [FlowSpec(control, 0.04, loss_fates=replay)], SimConfig(4.0)).flows[0]
    assert result.retransmissions == 3 and result.segments_sent > 1000
    assert result.loss_events == 2 and result.timeouts == 0


def test_a_segment_without_a_fate_is_drawn_at_the_rate_and_one_with_a_fate_is_not() -> None:
    """At 50 % random loss, fates of 0 on every segment the run sends let none be dropped; a hidden range (−1) and
    the segments past the fates are drawn at the rate; a run without fates is the Bernoulli draw of before."""
    lossy = Link(10e6, buffer_packets=2000, loss=0.5)
    cfg = SimConfig(1.0)
    clean = simulate(lossy, [FlowSpec("newreno", 0.04, loss_fates=fates(20000, {}))], cfg).flows[0]
    assert clean.retransmissions == 0
    hidden = simulate(lossy, [FlowSpec("newreno", 0.04, loss_fates=fates(20000, {}, (20, 40)))], cfg).flows[0]
    assert hidden.retransmissions > 0
    short = simulate(lossy, [FlowSpec("newreno", 0.04, loss_fates=fates(15, {}))], cfg).flows[0]
    assert short.retransmissions > 0
    assert simulate(lossy, [FlowSpec("newreno", 0.04)], cfg).flows[0].retransmissions > 0


def test_replayed_drops_are_deterministic_and_the_seed_draws_only_where_no_fate_is() -> None:
    """The same fates give the same run whatever the seed while the flow stays within them; past them the seed
    draws; the cross traffic (no fates) draws at the rate as before."""
    lossy = Link(10e6, buffer_packets=80, loss=0.01)
    replay = fates(20000, {150: 1, 400: 1, 1200: 1})
    runs = [simulate(lossy, [FlowSpec("cubic", 0.04, loss_fates=replay)], SimConfig(3.0, seed=s)).flows[0]
            for s in (1, 2, 1)]
    assert (runs[0].goodput_bps, runs[0].loss_events) == (runs[1].goodput_bps, runs[1].loss_events)
    assert runs[0].series["cwnd"].tolist() == runs[2].series["cwnd"].tolist()
    short = [simulate(lossy, [FlowSpec("cubic", 0.04, loss_fates=replay[:500])], SimConfig(3.0, seed=s)).flows[0]
             for s in (1, 2)]
    assert short[0].goodput_bps != short[1].goodput_bps
    pair = [simulate(lossy, [FlowSpec("cubic", 0.04, loss_fates=replay), FlowSpec("newreno", 0.04, start_s=0.2)],
                     SimConfig(3.0, seed=s)).flows[1].retransmissions for s in (1, 2)]
    assert pair[0] != pair[1]


def test_bad_fates_are_refused() -> None:
    with pytest.raises(SimError) as err:
        simulate(DEEP, [FlowSpec("newreno", 0.04, loss_fates=np.full(10, -2, np.int8))], SimConfig(1.0))
    assert err.value.code == "bad_flow"


@pytest.mark.parametrize("control", ["newreno", "cubic"])
def test_the_buffers_own_drops_are_counted_apart_from_the_random_ones(control: str) -> None:
    """``FlowResult.overflow_drops`` counts the flow's packets the full drop-tail buffer dropped, not the random
    ones: none under the deep buffer with three replayed drops; on a 20-packet buffer without random loss the slow
    start overflows it and the sender retransmits exactly the packets it dropped (26 and 27: no timeout, nothing
    spurious)."""
    replay = fates(3000, {300: 1, 900: 2})
    deep = simulate(DEEP, [FlowSpec(control, 0.04, loss_fates=replay)], SimConfig(4.0)).flows[0]
    assert deep.overflow_drops == 0 and deep.retransmissions == 3
    shallow = simulate(Link(10e6, buffer_packets=20), [FlowSpec(control, 0.04)], SimConfig(4.0)).flows[0]
    assert shallow.overflow_drops > 20 and shallow.loss_events >= 1 and shallow.timeouts == 0
    assert shallow.retransmissions == shallow.overflow_drops
