"""The seeds' models on a path (ESTIMATORS.md §9): seed 004's busy-link rule and single-flow model against its
Table I (§6), seed 002's fluid model against its statements (Props. 1–4, §IV), and Lambert's W."""

from __future__ import annotations

import itertools
import math

import pytest

from ackreplay.path.analytic import (
    PathModel,
    busy_link,
    busy_link_verdicts,
    lambert_w,
    measured_shares,
    newreno_westwood_curve,
    newreno_westwood_shares,
    replayed_verdicts,
    rules,
    sender_behaviour,
    single_flow_utilisation,
)

#: Seed 004 Table I (C = 200 Mbit/s, one flow; Mbit/s): B = 0.1·BDP at RTT 100 ms, and B = BDP at 100 ms.
TABLE_I = {"newreno": (162, 200), "westwood_plus": (200, 200), "bic": (189, 200), "cubic": (194, 200)}


@pytest.mark.parametrize("name", sorted(TABLE_I))
def test_the_single_flow_model_reproduces_the_buffer_studys_table_i(name):
    """Within 10 % for NewReno, Westwood+, BIC and CUBIC at both buffers, RTT 100 ms. (Where the ns-2
    figures differ — STCP 187 and H-TCP 178 at B = BDP, everything at 300 ms — the seed's flows lost several
    segments per window and timed out, which a loss-per-overflow fluid model does not: docs/estimators.md.)"""
    small, full = TABLE_I[name]
    rule = rules()[name]
    assert 200 * single_flow_utilisation(rule, PathModel.of(200e6, 0.1, 0.1)) == pytest.approx(small, rel=0.10)
    assert 200 * single_flow_utilisation(rule, PathModel.of(200e6, 0.1, 1.0)) == pytest.approx(full, rel=0.10)


def test_the_busy_link_rule():
    """B ≥ b/(1−b)·BDP: NewReno (b = ½) needs one BDP; CUBIC (b = 0.3) 0.43; Westwood+ always (b = B/(B+BDP))."""
    assert busy_link(0.5, 1.0) and not busy_link(0.5, 0.99)
    assert busy_link(0.3, 0.43) and not busy_link(0.3, 0.42)
    verdicts = busy_link_verdicts(PathModel.of(200e6, 0.1, 0.1))
    assert verdicts["westwood_plus"]["busy_link"] and not verdicts["newreno"]["busy_link"]
    assert verdicts["westwood_plus"]["utilisation"] == pytest.approx(1.0)
    assert verdicts["newreno"]["utilisation"] < 0.9  # not busy: the model idles the link too
    assert all(v["busy_link"] and v["utilisation"] == pytest.approx(1.0) for v in
               busy_link_verdicts(PathModel.of(200e6, 0.1, 1.0)).values())
    assert set(busy_link_verdicts(PathModel.of(10e6, 0.04, 1.0))) == {"newreno", "westwood_plus", "stcp", "hstcp",
                                                                      "htcp", "bic", "cubic"}


def test_lambert_w():
    for x in (-1 / math.e + 1e-9, -0.3, -0.1, -1e-5, 0.0, 0.5, 1.0, 10.0, 1e6):
        w = lambert_w(x)
        assert w * math.exp(w) == pytest.approx(x, rel=1e-12, abs=1e-14) and w >= -1
    for x in (-1 / math.e + 1e-9, -0.3, -0.1, -1e-5, -1e-12):
        w = lambert_w(x, -1)
        assert w * math.exp(w) == pytest.approx(x, rel=1e-10, abs=1e-14) and w <= -1
    assert lambert_w(1.0) == pytest.approx(0.5671432904097838, rel=1e-15)  # the omega constant
    with pytest.raises(ValueError):
        lambert_w(-0.5)
    with pytest.raises(ValueError):
        lambert_w(0.1, -1)


def test_the_newreno_westwood_share_model_statements():
    """Equal shares at B = CT; Westwood+ ahead below, NewReno ahead above; Prop. 4's limits (Westwood+ takes
    it all as B → 0; ¾ vs ¼ as B → ∞, the ratio near 1/3 at large buffers); the floor-half fix equalises
    above the BDP and changes nothing below."""
    eq = newreno_westwood_shares(1.0)
    assert eq["newreno"] == pytest.approx(eq["westwood_plus"]) and eq["utilisation"] == pytest.approx(1.0)
    for x in (0.05, 0.2, 0.5, 0.9):
        s = newreno_westwood_shares(x)
        assert s["westwood_plus"] > s["newreno"] and s["utilisation"] == pytest.approx(1.0, abs=0.01)
        assert newreno_westwood_shares(x, floor_half=True) == s
    for x in (1.5, 3.0, 10.0):
        s = newreno_westwood_shares(x)
        assert s["newreno"] > s["westwood_plus"]
        f = newreno_westwood_shares(x, floor_half=True)
        assert f["newreno"] == pytest.approx(f["westwood_plus"])
    tiny, huge = newreno_westwood_shares(1e-3), newreno_westwood_shares(1e4)
    assert tiny["newreno"] < 0.01 and tiny["westwood_plus"] > 0.99
    assert huge["newreno"] == pytest.approx(0.75, abs=0.005) and huge["westwood_plus"] == pytest.approx(0.25, abs=0.005)
    assert newreno_westwood_shares(100)["ratio"] == pytest.approx(1 / 3, rel=0.05)
    ratios = [p["ratio"] for p in newreno_westwood_curve(0.05, 50, 15)]
    assert all(a > b for a, b in itertools.pairwise(ratios))  # Westwood+'s share falls as the buffer grows


def test_the_rule_for_the_replayed_decisions():
    """Each replayed rule's decrease factor is the median of 1 − ssthresh/w over the flow's losses (rows
    without an ssthresh or a flight are skipped); the real sender's from its flight one srtt later, once per
    loss event."""
    rows = [
        {"episode": 0, "estimator": "newreno", "ssthresh_bytes": 50.0, "flight_before_bytes": 100,
         "flight_after_srtt_bytes": 70},
        {"episode": 0, "estimator": "stcp", "ssthresh_bytes": 87.5, "flight_before_bytes": 100,
         "flight_after_srtt_bytes": 70},
        {"episode": 1, "estimator": "newreno", "ssthresh_bytes": 60.0, "flight_before_bytes": 120,
         "flight_after_srtt_bytes": 84},
        {"episode": 1, "estimator": "stcp", "ssthresh_bytes": None, "flight_before_bytes": 120,
         "flight_after_srtt_bytes": 84},
        {"episode": 2, "estimator": "newreno", "ssthresh_bytes": 10.0, "flight_before_bytes": 0,
         "flight_after_srtt_bytes": 5},
    ]
    v = replayed_verdicts(rows, 0.5)
    assert v["newreno"] == {"decrease": 0.5, "losses": 2, "busy_link": False}
    assert v["stcp"] == {"decrease": 0.125, "losses": 1, "busy_link": True}
    assert v["real_sender"]["decrease"] == pytest.approx(0.3) and v["real_sender"]["losses"] == 2
    assert replayed_verdicts([], 1.0) == {}


def test_sender_behaviour_and_measured_shares():
    """A sender that halves is NewReno-like; one whose window lands on the pipe (rate × RTTmin) whatever its
    window was is Westwood+-like; a constant-factor one (CUBIC, 0.7·w) that lands near the pipe on average is
    neither. A group with both kinds gets seed 002's shares beside the measured ones."""
    def rows(pairs):
        return [{"episode": i, "estimator": "newreno", "flight_before_bytes": w, "flight_after_srtt_bytes": a,
                 "ideal_bytes": p} for i, (w, a, p) in enumerate(pairs)]

    halves = rows([(100, 50, 60), (140, 70, 60), (80, 40, 60)])
    westwood = rows([(100, 61, 60), (140, 59, 60), (90, 60.5, 60), (120, 60, 60)])
    cubic = rows([(100, 70, 75), (80, 56, 60), (120, 84, 70), (90, 63, 50)])
    assert sender_behaviour(halves)["kind"] == "newreno" and sender_behaviour(halves)["decrease"] == 0.5
    assert sender_behaviour(westwood)["kind"] == "westwood_plus"
    assert sender_behaviour(cubic)["kind"] == "other" and sender_behaviour(cubic)["decrease"] == pytest.approx(0.3)
    assert sender_behaviour([])["kind"] == "unknown"
    members = [{"flow_id": 1, "kind": "newreno", "rate_bps": 6e6}, {"flow_id": 2, "kind": "westwood_plus",
                                                                     "rate_bps": 4e6}]
    s = measured_shares(members, 10e6, 2.0)
    assert s["measured"] == {"newreno": pytest.approx(0.6), "westwood_plus": pytest.approx(0.4)}
    assert s["model"]["newreno"] == pytest.approx(newreno_westwood_shares(2.0)["newreno"])
    assert s["model_floor_half"]["newreno"] == pytest.approx(0.5)
    assert measured_shares(members[:1], 10e6, 2.0) is None and measured_shares(members, 10e6, None) is None
