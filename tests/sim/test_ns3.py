"""The simulation against ns-3.37 (tests/data/ns3, testbed/ns3/README.md): goodput and loss events of each
scenario's captured flow. Tolerances (docs/whatif.md): the median over the scenarios of |sim/ns-3 − 1| within
5 % for goodput; loss events within 40 % (the 10 % aimed at is not reached: docs/whatif.md says where the
loops part)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.sim.ns3_scenarios import CONTROLS, SCENARIOS, compare

ALL = [(a, s) for a in CONTROLS for s in SCENARIOS]


def test_median_goodput_is_within_5_percent_of_ns3() -> None:
    dev = [abs(compare(a, s).goodput_ratio - 1) for a, s in ALL]
    assert np.median(dev) <= 0.05, dev


def test_median_loss_events_are_within_40_percent_of_ns3() -> None:
    dev = [abs(compare(a, s).loss_ratio - 1) for a, s in ALL]
    assert np.median(dev) <= 0.40, dev


@pytest.mark.parametrize(("alg", "scenario"), ALL)
def test_each_scenario_is_within_35_percent_on_goodput(alg: str, scenario: str) -> None:
    c = compare(alg, scenario)
    assert 0.65 <= c.goodput_ratio <= 1.35, c
    assert c.sim_losses >= 1
