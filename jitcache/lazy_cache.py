"""numba's on-disk cache of a kernel looked up at the kernel's first call, not when it is decorated.

``@njit(cache=True)`` sets up the kernel's cache as it decorates it: it finds the cache folder, creates it if
need be and creates and deletes a temporary file there to check that it can write (~0.2 ms a kernel). Importing
what ``score`` needs decorates ~190 kernels, of which it calls ~40 (the others are helpers compiled into them,
kernels of other commands, or branches this input does not take). :func:`lazy_function_caches` makes numba's
``Dispatcher.enable_caching`` set up a :class:`LazyFunctionCache`, which sets numba's own ``FunctionCache`` up at
the first use (the kernel's first call loads or compiles through it); what is cached, where, and when it is
used are unchanged. Installed by the command line's lean numba set-up (``cli/lean_numba.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_LOCK = threading.Lock()


class LazyFunctionCache:
    """numba's ``FunctionCache`` of ``py_func``, made when one of its attributes is first asked for."""

    def __init__(self, py_func: Callable[..., Any], make: Callable[[Callable[..., Any]], Any]) -> None:
        self._py_func = py_func
        self._make = make
        self._cache: Any = None

    def _made(self) -> Any:
        if self._cache is None:
            with _LOCK:  # two threads calling the kernel at once: one cache object
                if self._cache is None:
                    self._cache = self._make(self._py_func)
        return self._cache

    def __getattr__(self, name: str) -> Any:  # (only for what this class does not define itself)
        return getattr(self._made(), name)


def lazy_function_caches() -> bool:
    """Kernels decorated from now on set their on-disk cache up at first use; returns False, changing nothing,
    when this numba's dispatcher has not the shape this relies on (``enable_caching`` making a ``FunctionCache``
    into ``_cache``)."""
    from numba.core import caching, dispatcher

    disp: Any = dispatcher.Dispatcher
    if getattr(disp.enable_caching, "_lean", False):
        return True
    if not hasattr(caching, "FunctionCache") or not hasattr(disp, "enable_caching"):
        return False
    make = caching.FunctionCache

    def enable_caching(self: Any) -> None:
        self._cache = LazyFunctionCache(self.py_func, make)

    enable_caching._lean = True  # type: ignore[attr-defined]
    disp.enable_caching = enable_caching
    return True
