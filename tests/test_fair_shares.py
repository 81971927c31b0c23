"""How the fair dispatcher splits the free slots of its window between owners (``core.fair_queue.shares``)."""

from __future__ import annotations

from ackreplay.core.fair_queue import shares


def test_free_slots_go_to_the_owner_with_the_fewest_in_flight_first():
    # Alice holds 3 of a window of 4: the one free slot is Bob's, though Alice has 10 000 waiting
    assert shares({"alice": 3}, {"alice": 10_000, "bob": 1}, window=4, cap=4) == {"bob": 1}
    # an empty window is split evenly, an owner with less waiting taking only what it has
    assert shares({}, {"a": 100, "b": 100, "c": 1}, window=7, cap=7) == {"a": 3, "b": 3, "c": 1}


def test_a_full_window_releases_nothing_and_the_cap_holds_per_owner():
    assert shares({"a": 2, "b": 2}, {"a": 5, "b": 5, "c": 5}, window=4, cap=4) == {}
    assert shares({"a": 1}, {"a": 50}, window=8, cap=2) == {"a": 1}  # capped at 2 though 7 slots are free
    assert shares({"gone": 3}, {"a": 9}, window=4, cap=4) == {"a": 1}  # owners not waiting still hold slots
