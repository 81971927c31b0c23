"""The path's random-loss rate (docs/path.md "Random-loss rate"): the maximum-likelihood estimate of a Bernoulli
drop probability — the drops seen off the overflow level over the transmissions whose fate shows — on synthetic
episodes and on ``paths/r20_rtt30_loss``, whose testbed logged every random drop."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.ingest import ingest_capture
from ackreplay.path.bounds import MIN_RANDOM_EPISODES, unsure_random
from ackreplay.path.figures import (
    ASIDE_EPISODE,
    BERNOULLI_TAIL,
    OVERFLOW_EPISODE,
    RANDOM_EPISODE,
    binomial_tail,
    random_rate,
)
from ackreplay.replay.capture import replay_capture
from tests.conftest import ROOT

R20 = ROOT / "tests" / "data" / "paths" / "r20_rtt30_loss"


@pytest.mark.parametrize(("r", "w", "p"), [(0, 10, 0.1), (1, 50, 0.01), (3, 80, 0.0125), (9, 80, 0.014),
                                           (17, 304, 0.021), (5, 5, 0.5)])
def test_the_binomial_tail_is_the_sum_of_its_terms(r: int, w: int, p: float) -> None:
    exact = sum(math.comb(w, k) * p ** k * (1 - p) ** (w - k) for k in range(r, w + 1))
    assert binomial_tail(r, w, p) == pytest.approx(exact, rel=1e-6, abs=1e-12)


def test_the_overflows_windows_leave_the_exposure_and_an_unexplained_episode_is_set_aside() -> None:
    """1000 segments; two overflow episodes deciding 100 and 60 of them; three single drops off the level; one
    episode off the level with 9 drops in a window of 40, which a Bernoulli loss near 0.5 % puts there far less
    often than once in a thousand."""
    retx = np.array([30, 5, 1, 1, 1, 9], np.int64)
    exposed = np.array([100, 60, 20, 30, 25, 40], np.int64)
    near = np.array([True, True, False, False, False, False])
    kinds = np.full(6, -1, np.int8)
    lost, seen, odd, rate = random_rate(retx, exposed, near, True, 1000, True, kinds)
    assert (lost, seen, odd) == (3, 1000 - 160 - 40, 1) and rate == pytest.approx(3 / 800)
    assert kinds.tolist() == [OVERFLOW_EPISODE] * 2 + [RANDOM_EPISODE] * 3 + [ASIDE_EPISODE]
    # a Bernoulli loss at that rate: 9 in 40 is beyond BERNOULLI_TAIL, 2 in 40 is not
    assert binomial_tail(9, 40, rate) < BERNOULLI_TAIL * binomial_tail(1, 40, rate)
    assert binomial_tail(2, 40, rate) > BERNOULLI_TAIL * binomial_tail(1, 40, rate)
    # without an overflow every episode's drops count, over every segment; without judging, none is set aside
    lost, seen, odd, rate = random_rate(retx, exposed, near, False, 1000, False, kinds)
    assert (lost, seen, odd) == (47, 1000, 0) and rate == pytest.approx(0.047)
    assert kinds.tolist() == [RANDOM_EPISODE] * 6
    # every segment decided by the overflows: no fate shows — none of the off-level drop's either (not a rate of 1)
    assert math.isnan(random_rate(retx[:2], np.array([600, 400]), near[:2], True, 1000, True, kinds[:2])[3])
    assert math.isnan(random_rate(np.array([5, 1]), np.array([1000, 0]), near[:2], True, 1000, True, kinds[:2])[3])
    assert math.isnan(random_rate(np.array([5, 1]), np.array([1200, 3]), near[:2], True, 1000, True, kinds[:2])[3])


def test_an_episode_set_aside_does_not_count_towards_the_episodes_a_rate_needs() -> None:
    """One overflow and three episodes off its level, one of them set aside (``odd``): the rate rests on two,
    fewer than :data:`MIN_RANDOM_EPISODES`, and is refused as if the third were not there."""
    assert MIN_RANDOM_EPISODES == 3
    n, nfull, shared = np.array([4, 4]), np.array([1, 1]), np.array([False, False])
    rnd = np.array([0.002, 0.002])
    why = unsure_random(rnd, n, nfull, shared, np.array([1, 0]))
    assert why.tolist() == [1, 0] and math.isnan(rnd[0]) and rnd[1] == 0.002


def test_r20s_rate_is_the_drops_seen_over_the_segments_outside_the_overflows_windows() -> None:
    """``paths/r20_rtt30_loss``: the testbed logged 18 random drops among the 4 145 data segments sent (0.434 %);
    4 fell in the windows of the two episodes read as overflows, repaired there beside the bottleneck's 36 drops.
    The 14 others are the 14 single retransmissions off the level; over every segment they read 0.338 %, 22 %
    under, over the segments outside the two windows within 15 %."""
    cap = ingest_capture(R20.with_suffix(".pcap.gz"))
    rep = replay_capture(cap, [E.create("newreno")], keep_series=False)
    (fr,) = [f for f in rep.flows if f.flow_id == 2]
    parts, path = fr.path_parts, fr.path
    assert parts is not None and path is not None
    exposed = parts.loss_exposed
    assert len(exposed) == 16 and sum(parts.loss_retx) == 54 and parts.data_segments == 4145
    # the two overflows (the first slow start's) decide a window each, of about a flight (50–200 segments)
    assert all(50 <= x <= 250 for x in exposed[:2])
    hidden = exposed[0] + exposed[1]
    assert path["random_loss_rate"] == pytest.approx(14 / (4145 - hidden))
    meta = json.loads(R20.with_suffix(".json").read_text())
    drawn = len(meta["random_loss_log"]) / 4145
    per_segment = 14 / 4145
    assert per_segment < 0.8 * drawn
    assert abs(path["random_loss_rate"] / drawn - 1) < 0.15
    assert f"per {4145 - hidden} of the 4145 data segments sent" in path["evidence"]["random_loss_rate"]
