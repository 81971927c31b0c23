"""Replay's per-estimator jobs on several threads (``estimators.parallel``): results in job order, errors
raised, and score documents byte-identical to the single-threaded ones on every shared capture."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from estimators import parallel
from tests.conftest import SHARED, shared_captures
from tests.estimators.test_score_identity import DIGESTS, digest


def test_jobs_run_on_several_threads_and_return_in_job_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    seen: dict[int, tuple[int, tuple[int, ...]]] = {}

    def job(k: int) -> Callable[[np.ndarray], int]:
        def run(scratch: np.ndarray) -> int:
            seen[k] = (threading.get_ident(), scratch.shape)
            time.sleep(0.02)  # long enough for every worker to take one
            return k * k
        return run

    out = parallel.run_jobs([job(k) for k in range(7)], parallel.PARALLEL_MIN_EVENTS, rows=2)
    assert out == [k * k for k in range(7)]
    assert len({ident for ident, _ in seen.values()}) == 3
    assert {shape for _, shape in seen.values()} == {(2, parallel.PARALLEL_MIN_EVENTS)}


def test_small_flows_run_in_the_calling_thread() -> None:
    idents = parallel.run_jobs([lambda s: threading.get_ident()] * 4, parallel.PARALLEL_MIN_EVENTS - 1)
    assert set(idents) == {threading.get_ident()}


@pytest.mark.parametrize("failing", [0, 5])
def test_an_error_in_any_job_is_raised(monkeypatch: pytest.MonkeyPatch, failing: int) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)

    def job(k: int) -> Callable[[np.ndarray], int]:
        def run(scratch: np.ndarray) -> int:
            time.sleep(0.01)
            if k == failing:
                raise ValueError(f"job {k}")
            return k
        return run

    with pytest.raises(ValueError, match=f"job {failing}"):
        parallel.run_jobs([job(k) for k in range(6)], parallel.PARALLEL_MIN_EVENTS)


@pytest.mark.slow
def test_score_documents_do_not_depend_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flow of every shared capture replayed on three threads gives the recorded documents."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_EVENTS", 0)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    want = json.loads(DIGESTS.read_text())
    got = {p.relative_to(SHARED).as_posix(): digest(p) for p in shared_captures()}
    assert got == want
