"""Large arrays with their pages mapped in up front, or by a helper thread while they are being filled
(and unmapped by one).

Writing to freshly allocated memory takes one page fault per 4 KiB page; on virtual machines without
transparent huge pages that costs microseconds a page and dominated ingest time (measured: 1.06 s to
first-touch 500 MB through ``np.empty`` against 0.14 s for an ``mmap`` with ``MAP_POPULATE``).

* :func:`populated` maps the pages in before returning (``MAP_POPULATE``).
* :func:`populate_in_background` returns at once and lets a thread map the pages in, block by block in
  the order they will be written, with ``madvise(MADV_POPULATE_WRITE)`` (Linux ≥ 5.14): that prefaults
  pages writable without writing to them, so it may race with the thread filling the arrays. Where
  it is not available the pages simply fault in on first write.
* :func:`release_in_background` drops the last references to arrays from a thread, so that unmapping
  them does not hold up the caller.
* :func:`trim_heap` hands the C heap's free pages back to the kernel after a bounded ingest.

Arrays below 1 MiB, and platforms without these calls, use ``np.empty``.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
from collections.abc import Sequence

import numpy as np

_MIN_BYTES = 1 << 20
_FLAGS = getattr(mmap, "MAP_POPULATE", 0)
_MADV_POPULATE_WRITE = 23  # linux/mman.h


def _libc() -> ctypes.CDLL | None:
    """The C library's symbols: those already loaded into the process (``dlopen(NULL)``: no search — ctypes'
    ``find_library`` runs ``ldconfig`` in a subprocess, milliseconds of every command's start-up)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # not a POSIX system
        return None


_LIBC = _libc()


def _madvise() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if _LIBC is None or not _FLAGS:  # MAP_POPULATE exists on Linux only
        return None
    fn = _LIBC.madvise
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()


def _malloc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    fn = getattr(_LIBC, "malloc_trim", None) if _LIBC is not None else None  # glibc only
    if fn is not None:
        fn.argtypes = [ctypes.c_size_t]
        fn.restype = ctypes.c_int
    return fn


_MALLOC_TRIM = _malloc_trim()


def trim_heap() -> None:
    """Hand the free pages of the C heap back to the kernel (glibc's ``malloc_trim``; elsewhere nothing).
    A bounded ingest frees hundreds of MB of chunk-sized buffers that glibc otherwise keeps in its arenas,
    counted in the process's memory while replay runs (measured on a 16 M-segment capture: ~110 MB)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _mapped(dims: tuple[int, ...], dt: np.dtype, flags: int) -> np.ndarray:
    count = int(np.prod(dims))
    buf = mmap.mmap(-1, count * dt.itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    return np.frombuffer(buf, dtype=dt, count=count).reshape(dims)


def populated(shape: int | tuple[int, ...], dtype: type | np.dtype) -> np.ndarray:
    """An uninitialised array like ``np.empty(shape, dtype)``, its memory already mapped in."""
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else shape
    if int(np.prod(dims)) * dt.itemsize < _MIN_BYTES or not _FLAGS:
        return np.empty(dims, dt)
    return _mapped(dims, dt, _FLAGS)


def lazy(shape: int | tuple[int, ...], dtype: type | np.dtype) -> np.ndarray:
    """An uninitialised array in its own mapping (for :func:`populate_in_background`: of a 2-D array,
    pass its rows)."""
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else shape
    if int(np.prod(dims)) * dt.itemsize < _MIN_BYTES or _MADVISE is None:
        return np.empty(dims, dt)
    return _mapped(dims, dt, 0)


def populate_in_background(columns: Sequence[np.ndarray], start: int, block_rows: int = 1 << 18) -> None:
    """Map in rows ``start..`` of equally long 1-D ``columns`` from a thread, a block of rows of every
    column at a time (the order a row-by-row writer needs them)."""
    if _MADVISE is None or not columns or start >= len(columns[0]):
        return
    madvise = _MADVISE
    page = mmap.PAGESIZE

    def run() -> None:
        n = len(columns[0])
        for lo in range(start, n, block_rows):
            hi = min(n, lo + block_rows)
            for col in columns:
                a = col.ctypes.data + lo * col.itemsize
                b = col.ctypes.data + hi * col.itemsize
                a -= a % page
                if madvise(a, b - a, _MADV_POPULATE_WRITE) != 0:
                    return  # not supported (old kernel): pages fault in on first write

    threading.Thread(target=run, name="ingest-populate", daemon=True).start()


def release_in_background(arrays: list[np.ndarray]) -> None:
    """Drop the caller's references to ``arrays`` (the list is emptied) and let a thread drop the last
    ones: unmapping a few hundred MB takes milliseconds (without the GIL), which the calling thread need
    not wait for. Arrays still referred to elsewhere simply stay alive."""
    held = arrays.copy()
    arrays.clear()
    threading.Thread(target=held.clear, name="ingest-release", daemon=True).start()


def release_mapped(col: np.ndarray, lo: int, hi: int) -> None:
    """Drop this process's pages of rows ``lo..hi`` of ``col``, a whole-file read-only ``np.memmap`` (offset 0):
    ``madvise(MADV_DONTNEED)`` on a file mapping only unmaps the pages — the data stays in the file and the page
    cache, and is mapped in again if read — so the pages stop counting in the process's RSS. Rows at the edges
    share a page with their neighbours; those pages are dropped too (and simply read in again when needed).
    Anything else (an array in anonymous memory, whose pages DONTNEED would zero) is left alone."""
    m = getattr(col, "_mmap", None)
    if not isinstance(col, np.memmap) or col.offset != 0 or not isinstance(m, mmap.mmap) or hi <= lo:
        return
    if not hasattr(mmap, "MADV_DONTNEED"):  # not Linux/BSD
        return
    page = mmap.PAGESIZE
    start = lo * col.itemsize // page * page
    end = min(len(m), -(-hi * col.itemsize // page) * page)
    if end > start:
        m.madvise(mmap.MADV_DONTNEED, start, end - start)
