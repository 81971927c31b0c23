"""One flow's independent per-estimator jobs on the cores this process may use.

The estimators of a flow read the same inputs and write nothing shared: their series and their scores
over time are independent jobs. The compiled kernels release the GIL (``nogil=True``) and numpy
releases it inside its large array operations, so threads run them side by side. Each worker takes the
next job from a shared queue (the first jobs listed should be the longest) and owns one scratch buffer
(``rows × n`` float64) that its jobs reuse; the calling thread is one of the workers.

Results do not depend on the number of threads: every job computes what it would alone, and results
are returned in job order. Flows below ``PARALLEL_MIN_EVENTS`` events run in the calling thread
(handing work to a thread costs more than it saves).

Memory: jobs running side by side hold their working sets at once. Given each job's footprint (bytes at
its peak) and a budget, :func:`fitting_workers` runs only as many side by side as the largest footprints
and their scratch buffers fit in — on a flow of millions of events, one at a time. The results are the
same however many run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import numpy as np

from ackreplay.scoring.scores import SCRATCH_ROWS

T = TypeVar("T")

#: Below this many events a flow's jobs run in the calling thread.
PARALLEL_MIN_EVENTS = 50_000

_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_size = 0
_pool_lock = threading.Lock()
_side: ThreadPoolExecutor | None = None
_side_pid = 0


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _helpers(n: int) -> ThreadPoolExecutor:
    """At least ``n`` helper threads of this process (made on first use, and again in a forked child such
    as a Celery worker, which does not inherit its parent's threads)."""
    global _pool, _pool_pid, _pool_size
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid() or _pool_size < n:
            _pool = ThreadPoolExecutor(n, thread_name_prefix="replay")
            _pool_pid, _pool_size = os.getpid(), n
        return _pool


def _side_thread() -> ThreadPoolExecutor:
    """The one thread of this process that runs work beside :func:`run_jobs`' workers (:class:`Beside`)."""
    global _side, _side_pid
    with _pool_lock:
        if _side is None or _side_pid != os.getpid():
            _side, _side_pid = ThreadPoolExecutor(1, thread_name_prefix="replay-side"), os.getpid()
        return _side


def shutdown_helpers() -> None:
    """Stop this process's helper threads (idle between calls; made again on the next use)."""
    global _pool, _side
    with _pool_lock:
        pool, _pool = _pool, None
        side, _side = _side, None
    if pool is not None and _pool_pid == os.getpid():
        pool.shutdown(wait=True)
    if side is not None and _side_pid == os.getpid():
        side.shutdown(wait=True)


class Beside(Generic[T]):
    """A result computed once, on a thread beside the calling thread's work or, where that does not pay, in the
    first thread that asks for it: :meth:`get` returns it (waiting for it), from any thread.

    For work the jobs of :func:`run_jobs` need only at their end (what limited the senders, before the scores):
    started before the jobs, it runs while they run and their workers wait for it only when they get there. It
    goes beside them when the events number at least ``PARALLEL_MIN_EVENTS``, another core is there and its
    ``footprint`` (bytes) fits in ``budget`` beside ``beside`` (the largest footprint of the jobs running
    meanwhile: :func:`fitting_workers`); its result is the same either way."""

    def __init__(self, work: Callable[[], T], n: int, *, footprint: float = 0.0, beside: float = 0.0,
                 budget: float | None = None) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._future: Future[T] | None = None
        fits = budget is None or fitting_workers(2, [footprint, beside], 0, budget) == 2
        #: Whether the work went to the side thread (its footprint is then held while the caller's work runs).
        self.beside = n >= PARALLEL_MIN_EVENTS and usable_cores() > 1 and fits
        if self.beside:
            self._future = _side_thread().submit(work)

    def get(self) -> T:
        """The result (the work's error, raised, if it failed)."""
        with self._lock:
            if self._future is None:
                self._future = Future()
                try:
                    self._future.set_result(self._work())
                except BaseException as exc:
                    self._future.set_exception(exc)
        return self._future.result()

    def settle(self) -> None:
        """Wait until work started on the side thread has ended, its result or error dropped (for a caller that
        fails before it asks: the side thread's next work, e.g. a retry's, does not queue behind it)."""
        with self._lock:
            future = self._future
        if future is not None:
            future.exception()


def fitting_workers(workers: int, footprints: Sequence[float], scratch_bytes: int, budget: float) -> int:
    """The most workers (at most ``workers``, at least one) whose jobs fit in ``budget`` bytes whichever
    run together: the ``k`` largest footprints plus ``k`` scratch buffers."""
    largest = sorted(footprints, reverse=True)
    while workers > 1 and sum(largest[:workers]) + workers * scratch_bytes > budget:
        workers -= 1
    return max(1, workers)


def run_jobs(jobs: Sequence[Callable[[np.ndarray], T]], n: int, rows: int = SCRATCH_ROWS, *,
             footprints: Sequence[float] | None = None, budget: float | None = None) -> list[T]:
    """Run every ``job(scratch)`` and return their results in job order; ``scratch`` is a ``rows × n``
    float64 buffer owned by the worker running the job (its contents are not kept between jobs). With
    ``footprints`` (bytes per job, in job order) and a ``budget`` (bytes), no more jobs run side by side
    than fit in it (:func:`fitting_workers`)."""
    workers = min(len(jobs), usable_cores()) if n >= PARALLEL_MIN_EVENTS else 1
    if footprints is not None and budget is not None:
        workers = fitting_workers(workers, footprints, rows * n * 8, budget)
    results: list[T | None] = [None] * len(jobs)
    queue: Iterator[int] = iter(range(len(jobs)))
    lock = threading.Lock()

    def work() -> None:
        scratch = np.empty((rows, n), np.float64)
        while True:
            with lock:
                k = next(queue, None)
            if k is None:
                return
            results[k] = jobs[k](scratch)

    pool = _helpers(workers - 1) if workers > 1 else None
    helpers = [pool.submit(work) for _ in range(workers - 1)] if pool is not None else []
    try:
        work()
    except BaseException:
        with lock:  # the helpers stop after their current job
            queue = iter(())
        raise
    finally:
        for h in helpers:  # wait for every helper; an error of theirs is raised when the caller had none
            h.result()
    return results  # type: ignore[return-value]  # every slot was filled
