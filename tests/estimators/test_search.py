"""``kernels.searchsorted_right`` is ``np.searchsorted(a, v, side="right")`` for any keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackreplay import kernels as search
from ackreplay.kernels import searchsorted_right

values = st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.0, 1.0, 2.5, -np.inf, np.inf])


@pytest.fixture(autouse=True, scope="module")
def always_merge() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search, "MERGE_MIN_KEYS", 0)  # the merge pass even on short keys
        yield


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=60), st.lists(values | st.just(np.nan), max_size=60), st.booleans())
def test_merge_search_equals_numpy(a: list[float], v: list[float], sort_keys: bool) -> None:
    arr = np.sort(np.array(a, np.float64))
    keys = np.array(v, np.float64)
    if sort_keys:
        keys = np.sort(keys)  # the common case: NaNs last, the walk never steps back
    assert np.array_equal(searchsorted_right(arr, keys), np.searchsorted(arr, keys, side="right"))


def test_long_sorted_keys_and_the_window_shift() -> None:
    rng = np.random.default_rng(7)
    t = np.cumsum(rng.exponential(1e-4, 200_000))
    for keys in (t, t - 1.0, t + 0.5, t[::-1]):
        assert np.array_equal(searchsorted_right(t, keys), np.searchsorted(t, keys, side="right"))


def test_a_with_nan_falls_back_to_numpy() -> None:
    a = np.array([1.0, 2.0, np.nan])
    keys = np.array([0.5, 2.0, np.nan, 3.0])
    assert np.array_equal(searchsorted_right(a, keys), np.searchsorted(a, keys, side="right"))


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=60), st.lists(values | st.just(np.nan), max_size=60), st.lists(st.integers(-3, 70)),
       st.booleans())
def test_search_from_a_hint_equals_numpy(a: list[float], v: list[float], hints: list[int], sort_keys: bool) -> None:
    """``kernels.search_left_from`` is ``np.searchsorted(a, x)`` whatever the hint: the previous key's answer (keys
    ascending or stepping back), or any other index, in range or not."""
    from ackreplay.kernels import search_left_from

    arr = np.sort(np.array(a, np.float64))
    keys = np.sort(np.array(v, np.float64)) if sort_keys else np.array(v, np.float64)
    hint = 0
    for k, x in enumerate(keys):
        if k < len(hints) and hints[k] % 3 == 0:
            hint = hints[k]
        hint = search_left_from(arr, x, hint)
        assert hint == np.searchsorted(arr, x)


@settings(max_examples=300, deadline=None)
@given(st.lists(values | st.just(np.nan), max_size=60), st.lists(values | st.just(np.nan), max_size=60),
       st.booleans(), st.booleans(), st.sampled_from(["left", "right"]))
def test_merge_search_either_side_equals_numpy(a: list[float], v: list[float], sort_a: bool, sort_keys: bool,
                                               side: Literal["left", "right"]) -> None:
    """``kernels.searchsorted_merge``, on sorted arrays (with ±inf and NaN) and on unsorted ones (numpy's search)."""
    arr = np.array(a, np.float64)
    if sort_a:
        arr = np.sort(arr)
    keys = np.array(v, np.float64)
    if sort_keys:
        keys = np.sort(keys)
    assert np.array_equal(search.searchsorted_merge(arr, keys, side), np.searchsorted(arr, keys, side=side))
