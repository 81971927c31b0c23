"""The event queue: each flow's events come in streams that are each in time order by construction — data
reaching the receiver (a FIFO link and a fixed delay), ACKs reaching the sender (a fixed delay), the delayed-ACK
timer, the retransmission timer, the flow's start, a paced sender's pacing timer. An indexed binary heap holds
every stream's head time, so the next event is the heap's top and a stream whose head changed is sifted in
O(log streams).

Ties are broken by stream id (flow, then kind): the run is deterministic."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _before(key: np.ndarray, a: int, b: int) -> bool:
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@njit(cache=True, nogil=True)
def _swap(heap: np.ndarray, pos: np.ndarray, i: int, j: int) -> None:
    heap[i], heap[j] = heap[j], heap[i]
    pos[heap[i]] = i
    pos[heap[j]] = j


@njit(cache=True, nogil=True)
def heap_update(heap: np.ndarray, pos: np.ndarray, key: np.ndarray, s: int, t: float) -> None:
    """Set stream ``s``'s head time to ``t`` (inf: empty) and restore the heap order."""
    key[s] = t
    i = pos[s]
    while i > 0:  # up
        p = (i - 1) >> 1
        if not _before(key, heap[i], heap[p]):
            break
        _swap(heap, pos, i, p)
        i = p
    n = len(heap)
    while True:  # down
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _before(key, heap[c + 1], heap[c]):
            c += 1
        if not _before(key, heap[c], heap[i]):
            break
        _swap(heap, pos, i, c)
        i = c


def new_heap(streams: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty heap of ``streams`` streams: (heap, position of each stream, head time of each stream)."""
    return np.arange(streams, dtype=np.int64), np.arange(streams, dtype=np.int64), np.full(streams, np.inf)
