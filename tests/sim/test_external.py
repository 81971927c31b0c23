"""Westwood-family estimators in control through the generic path (ackreplay.sim.external): the loop pauses at
each loss event, the registered estimator decides on the ACKs logged so far, the loop resumes."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.estimators.registry import create
from ackreplay.sim import layout as L
from ackreplay.sim.engine import resume, run_loop, seed_random
from ackreplay.sim.external import ExternalControl, ack_inputs
from ackreplay.sim.model import CONTROLS, FlowSpec, Link, SimConfig, SimError, controllable, simulate
from ackreplay.sim.model import build_state as state_of
from ackreplay.sim.state import SimState
from tests.sim.test_engine import BDP, MSS, RATE, RTT, WIRE

#: (buffer/BDP, random loss) of the scenarios.
SCENARIOS = [(0.1, 0.0), (0.5, 0.0), (1.0, 0.001), (2.0, 0.0)]


def _link(buffer_over_bdp: float, loss: float) -> Link:
    return Link(RATE, buffer_packets=round(buffer_over_bdp * BDP), loss=loss, overhead_bytes=WIRE - MSS)


def _cfg(seed: int = 1) -> SimConfig:
    return SimConfig(20.0, mss=MSS, seed=seed)


def test_every_registered_estimator_is_controllable() -> None:
    names = controllable()
    assert names[:len(CONTROLS)] == CONTROLS
    assert {"be", "re", "tibet", "abse", "crb", "newbr"} <= set(names)


@pytest.mark.parametrize(("buffer_over_bdp", "loss"), SCENARIOS)
def test_newreno_through_the_generic_path_is_the_compiled_newreno(buffer_over_bdp: float, loss: float) -> None:
    """The replay's NewReno (ssthresh = flight/2) decided in Python: the same run as the compiled one, bit for bit
    (the pause and resume change nothing else)."""
    link = _link(buffer_over_bdp, loss)
    compiled = simulate(link, [FlowSpec("newreno", RTT)], _cfg()).flows[0]
    generic = simulate(link, [FlowSpec("newreno", RTT, external=True)], _cfg()).flows[0]
    assert generic.delivered_bytes == compiled.delivered_bytes
    assert generic.loss_events == compiled.loss_events == len(generic.decisions)
    assert np.array_equal(generic.series["cwnd"], compiled.series["cwnd"])


@pytest.mark.parametrize(("buffer_over_bdp", "loss"), SCENARIOS)
def test_westwood_plus_through_the_generic_path_agrees_with_the_compiled_one(buffer_over_bdp: float,
                                                                             loss: float) -> None:
    """The replay's Westwood+ (its batch filter over the logged ACKs, Linux's RTTmin) against the compiled one
    (the same filter streamed per ACK): goodput within 8 %, loss events within 2. They part where the first
    decision falls in slow start, where the two read the RTT differently (the replay: the last sample of any
    row; the loop: the latest sample). At 2·BDP that decision is nearly the whole run (two loss events in 20 s):
    ssthresh 13.1 segments through the generic path, 7.4 in the loop, whose recovery from the slow start's
    overshoot then lasts 2.5 s at 7 segments; the generic path delivers 10.6 % more (within 12 % there)."""
    link = _link(buffer_over_bdp, loss)
    compiled = simulate(link, [FlowSpec("westwood_plus", RTT)], _cfg()).flows[0]
    generic = simulate(link, [FlowSpec("westwood_plus", RTT, external=True)], _cfg()).flows[0]
    assert generic.goodput_bps == pytest.approx(compiled.goodput_bps, rel=0.12 if buffer_over_bdp >= 2.0 else 0.08)
    assert abs(generic.loss_events - compiled.loss_events) <= 2


def _run_keeping_state(flow: FlowSpec, link: Link, cfg: SimConfig) -> tuple[SimState, ExternalControl]:
    """``simulate``'s loop for one external flow, keeping the state (its full ACK log) for the check."""
    state = state_of(link, [flow], cfg)
    ext = ExternalControl(create(flow.control, **flow.params), 0, flow.start_s)
    seed_random(cfg.seed)
    while True:
        run_loop(state)
        if not state.tally[L.T_PAUSED]:
            return state, ext
        ext.decide(state, state.tally[L.T_KIND] == L.PAUSE_TIMEOUT)
        resume(state)


@pytest.mark.parametrize("name", ["be", "re", "tibet", "tibet_tx", "abse", "crb", "newbr", "bbr_bw"])
@pytest.mark.parametrize(("buffer_over_bdp", "loss"), [(0.5, 0.0), (1.0, 0.002)])
def test_each_decision_is_the_replays_on_the_whole_ack_stream(name: str, buffer_over_bdp: float,
                                                              loss: float) -> None:
    """Each decision taken when the loop paused equals the replay's at that event on the whole run's ACK stream
    (the estimator over every logged ACK, as the replay runs it over a capture): the estimate at an event
    depends only on earlier events. Relative tolerance 1e-9 (the same arithmetic on a longer array)."""
    state, ext = _run_keeping_state(FlowSpec(name, RTT), _link(buffer_over_bdp, loss), _cfg())
    assert len(ext.decisions) >= 3
    estimator = create(name)
    full = ack_inputs(state, 0, 0.0)
    assert len(full) > ext.decisions[-1].event
    replayed = estimator.decide_all(full, estimator.series(full), ext.contexts)
    for taken, again in zip(ext.decisions, replayed, strict=True):
        if again.ssthresh_segments is None:
            assert taken.estimate is None
        else:
            assert taken.ssthresh_segments == pytest.approx(again.ssthresh_segments, rel=1e-9)


def test_an_external_run_is_deterministic_for_its_seed() -> None:
    link = _link(1.0, 0.002)
    flows = [FlowSpec("tibet", RTT), FlowSpec("newreno", RTT, start_s=0.5)]
    one, two, other = (simulate(link, flows, _cfg(seed)) for seed in (7, 7, 8))
    assert [f.delivered_bytes for f in one.flows] == [f.delivered_bytes for f in two.flows]
    assert one.flows[0].decisions == two.flows[0].decisions
    assert [f.delivered_bytes for f in one.flows] != [f.delivered_bytes for f in other.flows]


def test_an_external_estimators_bad_parameter_is_a_sim_error() -> None:
    with pytest.raises(SimError) as err:
        simulate(_link(1.0, 0.0), [FlowSpec("tibet", RTT, params={"no_such": 1.0})], _cfg())
    assert err.value.code == "unknown_parameter"
