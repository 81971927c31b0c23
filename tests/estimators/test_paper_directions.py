"""The directions the papers report (ESTIMATORS.md §6), on shared captures whose conditions match.

Open-loop replay of traffic another sender (CUBIC, BBR, Reno) produced does not reproduce the papers'
numbers; the direction of each effect — who over- and who under-estimates — should hold.
"""

from __future__ import annotations

from functools import cache

import pytest

import ackreplay.estimators as E
from ackreplay.core.capture_scoring import score_file
from tests.conftest import SHARED

GEN = SHARED / "generated"


@cache
def scored(name: str):
    return score_file(GEN / name, [E.create(n) for n in E.DEFAULT_ORDER])


def bulk_scores(name: str):
    sc = scored(name)
    bulk = {s.flow_id for s in sc.ingest.flows if s.bytes >= 65536}
    return [f.scores for f in sc.replay.flows if f.flow_id in bulk]


@pytest.mark.parametrize("name", ["s03_cubic_2f_10M_rtt60_buf1bdp.pcapng", "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap",
                                  "s07_bbr_3f_20M_rtt20_buf2bdp.pcap"])
def test_shared_bottleneck_be_above_re(name):
    """Seed 000 Fig. 2 / seed 003 Fig. 3: on a shared bottleneck BE over-estimates, RE sits near the share."""
    flows = bulk_scores(name)
    assert len(flows) >= 2
    for s in flows:
        assert s["be"]["mean_bps"] > s["re"]["mean_bps"]
        assert s["be"]["mean_signed_rel_error"] > 0.2  # BE claims bandwidth the flow did not get
        assert abs(s["re"]["mean_signed_rel_error"]) < 0.1


def test_random_loss_re_under_link_and_below_be():
    """Seed 000 Fig. 3: with 1 % random loss leaving the link under-used, RE settles well under the link
    rate; BE is higher (closer to the link)."""
    (s,) = bulk_scores("s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap")
    assert s["re"]["mean_bps"] < s["be"]["mean_bps"]
    assert s["re"]["mean_signed_rel_error_truth"] < -0.5  # against the 10 Mbit/s bottleneck
    assert s["be"]["mean_signed_rel_error_truth"] > s["re"]["mean_signed_rel_error_truth"]


@pytest.mark.parametrize("name", ["s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap", "s03_cubic_2f_10M_rtt60_buf1bdp.pcapng"])
def test_newbr_between_re_and_be(name):
    """Seed 003 Fig. 3: BE ≈ 1.4, RE ≈ 0.75, NewBR ≈ 1.0 of the fair share: NewBR between RE and BE."""
    for s in bulk_scores(name):
        lo, hi = sorted((s["re"]["mean_bps"], s["be"]["mean_bps"]))
        assert lo <= s["newbr"]["mean_bps"] <= hi


def test_ack_clustering_be_over_abse_close():
    """Seed 000 §4.1: with clustered ACKs (many drops, three BBR flows) BE over-estimates strongly while ABSE
    stays close to what the flow achieved."""
    for s in bulk_scores("s07_bbr_3f_20M_rtt20_buf2bdp.pcap"):
        assert s["be"]["mean_abs_rel_error"] > 5 * s["abse"]["mean_abs_rel_error"]
        assert s["abse"]["mean_abs_rel_error"] < 0.25


def test_tibet_tracks_the_fair_share_better_than_be():
    """Seed 001 Fig. 5: in multi-flow sharing TIBET tracks the fair share."""
    for s in bulk_scores("s07_bbr_3f_20M_rtt20_buf2bdp.pcap"):
        assert s["tibet"]["mean_abs_rel_error_truth"] < 0.5
        assert s["tibet"]["mean_abs_rel_error_truth"] < s["be"]["mean_abs_rel_error_truth"]


def test_westwood_decisions_beat_newreno_on_random_loss():
    """Seed 002 (and seed 000 §2): the bandwidth-based ssthresh stays near the pipe size under random loss,
    where NewReno halves — Westwood+ is closer to the ideal at most loss events."""
    (s,) = bulk_scores("s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap")
    assert s["westwood_plus"]["closer_than_newreno_share"] > 0.8
    assert s["newreno"]["ssthresh_over_ideal_median"] < 0.6 < s["westwood_plus"]["ssthresh_over_ideal_median"]
