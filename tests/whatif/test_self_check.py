"""The self-check on the captures in the repository whose sender's control is known: the captured sender's control
re-enacted on the path inferred from the capture against the captured flow (goodput within 10 %, loss-event rate
within 30 %). docs/whatif.md lists every capture's outcome (``python -m tests.whatif.self_checks``); this test
holds the ones that pass and the reasons of those that must fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackreplay.whatif.runs import what_if
from tests.conftest import SHARED
from tests.whatif.self_checks import DATA, Checked, checked

TESTBED = DATA / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz"
S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"


def ok(capture: Path) -> Checked:
    got = checked(capture)
    assert isinstance(got, Checked), got
    return got


@pytest.mark.parametrize("capture", [TESTBED, TESTBED.with_name("cubic_1f_10M_rtt40_buf025bdp_rcv.pcap.gz"),
                                     DATA / "ns3" / "cubic_1f_bdp1.pcap.gz", DATA / "ns3" / "hstcp_1f_bdp1.pcap.gz"])
def test_the_captured_sender_re_enacted_reproduces_the_flow(capture: Path) -> None:
    check = ok(capture).check
    assert check.passed, check
    assert check.goodput_ratio is not None and check.loss_rate_ratio is not None
    assert abs(check.goodput_ratio - 1) <= 0.10 and abs(check.loss_rate_ratio - 1) <= 0.30
    assert check.algorithm in ("cubic", "hstcp") and "metadata" in check.algorithm_source


def test_a_flow_that_had_cross_traffic_fails_and_its_what_if_is_withheld() -> None:
    """ns-3's two-flow runs captured only the flow under test: alone on the inferred path the simulated sender
    takes the whole link, more than the captured flow got beside its NewReno competitor."""
    got = ok(DATA / "ns3" / "cubic_2f_bdp1.pcap.gz")
    check = got.check
    assert not check.passed and (check.goodput_ratio or 0) > 1.10 and "goodput" in check.reason
    result = what_if(got.path, got.captured, got.sender, ["newreno"], duration_s=2.0)
    assert result.results == {} and (result.withheld or "").startswith("the self-check failed: goodput")
    assert result.as_dict()["self_check"]["passed"] is False


def test_a_control_the_loop_cannot_run_fails_the_self_check_with_its_name() -> None:
    check = ok(DATA / "limits" / "bbr_bulk.pcap.gz").check
    assert not check.passed and check.goodput_ratio is None and "the sender ran bbr" in check.reason


def test_the_flow_sharing_the_bottleneck_is_simulated_beside_it() -> None:
    """Reno and CUBIC sharing 10 Mbit/s (the team's s09): the self-check re-enacts the Reno flow beside the CUBIC
    one, started when it started, and reproduces the Reno flow's goodput and loss events."""
    got = ok(S09)
    assert [(c.control, round(c.offset_s, 2)) for c in got.cross] == [("cubic", 0.11)]
    assert got.check.passed, got.check
    assert 0.4 < got.check.simulated["share"] < 0.8 and 0.4 < got.captured.share < 0.8
    assert ok(TESTBED).captured.share == 1.0
