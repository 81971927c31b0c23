"""Replay's per-estimator jobs on several threads (``replay.parallel``): results in job order, errors
raised, and score documents byte-identical to the single-threaded ones on every shared capture."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

from ackreplay.replay import parallel
from tests.conftest import shared_captures
from tests.estimators.test_score_identity import assert_same_documents


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


def test_no_more_workers_than_the_footprints_fit() -> None:
    assert parallel.fitting_workers(3, [100, 50, 40], 10, 1_000) == 3
    assert parallel.fitting_workers(3, [100, 50, 40], 10, 219) == 2  # all three: 190 + 30 = 220 > 219
    assert parallel.fitting_workers(3, [100, 50, 40], 10, 170) == 2  # the two largest and two buffers
    assert parallel.fitting_workers(3, [100, 50, 40], 10, 119) == 1  # never fewer than one
    assert parallel.fitting_workers(1, [100, 50], 10, 10**9) == 1


def test_jobs_beyond_the_budget_run_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    running, most = [0], [0]
    lock = threading.Lock()

    def job(k: int) -> Callable[[np.ndarray], int]:
        def run(scratch: np.ndarray) -> int:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1
            return k
        return run

    n = parallel.PARALLEL_MIN_EVENTS
    scratch = 2 * n * 8
    for budget, workers in ((300 + 3 * scratch, 3), (200 + 2 * scratch, 2), (199 + 2 * scratch, 1)):
        most[0] = 0
        out = parallel.run_jobs([job(k) for k in range(6)], n, footprints=[100, 100, 100, 10, 10, 10], budget=budget)
        assert out == list(range(6)) and most[0] == workers


@pytest.mark.slow
def test_score_documents_do_not_depend_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flow of every shared capture replayed on three threads gives the recorded documents."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_EVENTS", 0)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    assert_same_documents()


def test_replay_within_a_small_budget_runs_one_job_at_a_time_with_the_same_results(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture ingested within a memory budget is replayed within it: jobs whose footprints do not fit
    side by side run one after the other, and every score and decision is the same."""
    import ackreplay.estimators as E
    from ackreplay.ingest import ingest_capture
    from ackreplay.replay.capture import replay_capture

    monkeypatch.setattr(parallel, "PARALLEL_MIN_EVENTS", 0)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    chosen: list[int] = []
    fit = parallel.fitting_workers

    def spy(*args: Any) -> int:
        chosen.append(fit(*args))
        return chosen[-1]

    monkeypatch.setattr(parallel, "fitting_workers", spy)
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    cap = ingest_capture(path, memory_budget=None)
    free = replay_capture(cap, ests)
    assert cap.memory_budget is None and not chosen  # ingested without a budget: replayed without one
    cap.memory_budget = 1
    chosen.clear()
    tight = replay_capture(cap, ests)
    assert chosen and set(chosen) == {1}
    assert tight.scores == free.scores
    assert [f.scores for f in tight.flows] == [f.scores for f in free.flows]
    assert [f.decision_rows for f in tight.flows] == [f.decision_rows for f in free.flows]


def test_beside_runs_once_on_its_own_thread_or_in_the_first_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """``parallel.Beside``: on a large enough batch with a second core its work runs once on the side thread while
    the caller goes on; below ``PARALLEL_MIN_EVENTS``, on one core or beyond the budget, once in the first thread
    that asks; every caller gets the same result, and the work's error is raised to each."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    calls: list[int] = []
    started = threading.Event()

    def work() -> list[int]:
        calls.append(threading.get_ident())
        started.set()
        time.sleep(0.02)
        return [len(calls)]

    big = parallel.PARALLEL_MIN_EVENTS
    side = parallel.Beside(work, big)
    assert started.wait(5)  # running before anyone asked
    got = parallel.run_jobs([lambda _: side.get()] * 4, big, rows=1)
    assert got == [[1]] * 4 and len(calls) == 1 and calls[0] != threading.get_ident()
    for n, room in ((big - 1, {}), (big, {"footprint": 60.0, "beside": 50.0, "budget": 100.0})):
        calls.clear()
        beside = parallel.Beside(work, n, **room)
        time.sleep(0.05)
        assert not calls  # not started: it runs when first asked, in the asking thread
        asked: Callable[[np.ndarray], list[int]] = partial(lambda b, _: b.get(), beside)
        assert parallel.run_jobs([asked] * 3, big, rows=1) == [[1]] * 3
        assert len(calls) == 1
    monkeypatch.setattr(parallel, "usable_cores", lambda: 1)
    calls.clear()
    alone = parallel.Beside(work, big)
    assert not calls and alone.get() == [1] and calls == [threading.get_ident()]

    def fails() -> None:
        raise ValueError("no limits")

    broken = parallel.Beside(fails, big)
    for _ in range(2):
        with pytest.raises(ValueError, match="no limits"):
            broken.get()
    parallel.shutdown_helpers()


@pytest.mark.parametrize("cores", [1, 3])
def test_work_beside_the_jobs_is_taken_from_their_budget(monkeypatch: pytest.MonkeyPatch, cores: int) -> None:
    """What limited the senders runs on the side thread while the estimators' jobs run: the jobs get the budget
    less its footprint (``LIMITS_BYTES_PER_EVENT`` per event), so that the two together stay within it; run in the
    calling thread (one core), the jobs get the whole budget."""
    import ackreplay.estimators as E
    from ackreplay.ingest import ingest_capture
    from ackreplay.replay import engine
    from ackreplay.replay.capture import replay_capture

    monkeypatch.setattr(parallel, "PARALLEL_MIN_EVENTS", 0)
    monkeypatch.setattr(parallel, "usable_cores", lambda: cores)
    rooms: list[tuple[float, int, bool]] = []  # (the budget asked, the events, went beside) of the side work
    given: list[float | None] = []

    class Spied(parallel.Beside[Any]):
        def __init__(self, work: Callable[[], Any], n: int, **kw: Any) -> None:
            super().__init__(work, n, **kw)
            if kw.get("footprint"):
                rooms.append((kw["budget"], n, self.beside))

    def run_jobs(*args: Any, **kw: Any) -> Any:
        given.append(kw["budget"])
        return parallel.run_jobs(*args, **kw)

    monkeypatch.setattr(engine, "Beside", Spied)
    monkeypatch.setattr(engine, "run_jobs", run_jobs)
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    cap = ingest_capture(path, memory_budget=None)
    cap.memory_budget = 1 << 40
    replay_capture(cap, [E.create(n) for n in E.DEFAULT_ORDER])
    # per batch: the limits and the path beside; the first round's and the estimators' jobs
    assert rooms and len(given) == len(rooms)
    for k in range(0, len(rooms), 2):
        (asked, n, beside), (_, _, path_beside) = rooms[k], rooms[k + 1]
        assert beside == path_beside == (cores > 1)
        expected = asked - engine.LIMITS_BYTES_PER_EVENT * n if beside else asked
        assert given[k] == given[k + 1] == expected
