"""Which flows the estimators can be compared on (``scoring.comparable``): each reason, at its threshold."""

from __future__ import annotations

from ackreplay.scoring.comparable import (
    MAX_OTHER_SHARE,
    MIN_LOSS_EVENTS,
    MIN_TIME_CONSTANTS,
    incomparable_reason,
    time_constant,
)
from ackreplay.scoring.ranking import board

NETWORK = {"cwnd": 0.9, "rwnd": 0.0, "app": 0.1, "sndbuf": 0.0, "unknown": 0.0}


def test_the_time_constant_is_the_largest_tau_or_window():
    assert time_constant([{"tau": 1.0}, {"window": 2.5, "tau": 0.5}, {"gain": 0.875}, {"pairing": True}]) == 2.5
    assert time_constant([{"window": None}, {}]) == 0.0


def test_a_long_network_limited_flow_with_losses_is_comparable():
    assert incomparable_reason(NETWORK, 100.0, MIN_LOSS_EVENTS, 1.0) is None


def test_too_little_network_limited_time():
    span = MIN_TIME_CONSTANTS / 0.9  # just the time needed ...
    assert incomparable_reason(NETWORK, span * 1.001, 10, 1.0) is None
    why = incomparable_reason(NETWORK, span * 0.99, 10, 1.0)  # ... and just under it
    need = f"{MIN_TIME_CONSTANTS:.2f} s"
    assert why is not None and f"network-limited for {0.99 * MIN_TIME_CONSTANTS:.2f} s" in why and need in why


def test_too_few_loss_events_only_when_decisions_are_compared():
    why = incomparable_reason(NETWORK, 100.0, MIN_LOSS_EVENTS - 1, 1.0)
    assert why is not None and "loss events" in why
    assert incomparable_reason(NETWORK, 100.0, 0, 1.0, decisions=False) is None


def test_application_or_receiver_limited_most_of_the_time():
    shares = {"cwnd": 0.5, "rwnd": 0.2, "app": MAX_OTHER_SHARE - 0.2, "sndbuf": 0.0, "unknown": 0.0}
    why = incomparable_reason(shares, 1000.0, 50, 1.0)
    assert why is not None and why.startswith("not limited by the network most of the time: the application 30 %")
    assert incomparable_reason({**shares, "app": 0.25, "unknown": 0.05}, 1000.0, 50, 1.0) is None


def test_boards_leave_incomparable_flows_out_unless_asked():
    per_flow = {1: {"a": {"mean_abs_rel_error": 0.1}, "b": {"mean_abs_rel_error": 0.2}},
                2: {"a": {"mean_abs_rel_error": 0.9}, "b": {"mean_abs_rel_error": 0.0}}}
    left = board(per_flow, incomparable={2})
    assert left["flows"] == 1 and left["incomparable"] == 1 and not left["include_incomparable"]
    assert left["scores"]["composite_error"]["estimators"]["a"]["rank"] == 1
    kept = board(per_flow, incomparable={2}, include_incomparable=True)
    assert kept["flows"] == 2 and kept["incomparable"] == 1
    assert kept["scores"]["composite_error"]["estimators"]["a"]["wins"] == 1
