"""numba's on-disk cache of a kernel looked up at the kernel's first call, not when it is decorated.

``@njit(cache=True)`` sets up the kernel's cache as it decorates it: it finds the cache folder, creates it if
need be and creates and deletes a temporary file there to check that it can write (~0.2 ms a kernel). Importing
what ``score`` needs decorates ~190 kernels, of which it calls ~40 (the others are helpers compiled into them,
kernels of other commands, or branches this input does not take). :func:`lazy_function_caches` makes numba's
``Dispatcher.enable_caching`` set up a :class:`LazyFunctionCache`, which sets numba's own ``FunctionCache`` up at
the first use (the kernel's first call loads or compiles through it); what is cached and where is unchanged, and
a kernel whose source file changed between its decoration and its first call is not cached (``LazyFunctionCache``).
Installed by the command line's lean numba set-up (``cli/lean_numba.py``).
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable
from typing import Any

_LOCK = threading.Lock()


class LazyFunctionCache:
    """numba's ``FunctionCache`` of ``py_func``, made when one of its attributes is first asked for.

    numba reads the source file's stamp (modification time and size) as it makes the cache, and keys what it saves
    by it. Made later than at decoration, it would stamp the code this process compiled with the file's *new*
    stamp if the file was replaced in between (an upgrade under a long-running ``serve`` or ``worker``), and a
    later process would load that old code for the new file. So the stamp is taken at decoration too, and if the
    file changed since, this kernel is not cached in this process (numba's ``NullCache``)."""

    def __init__(self, py_func: Callable[..., Any], make: Callable[[Callable[..., Any]], Any],
                 make_null: Callable[[], Any]) -> None:
        self._py_func = py_func
        self._make = make
        self._make_null = make_null
        self._stamp = source_stamp(py_func)
        self._cache: Any = None

    def _made(self) -> Any:
        if self._cache is None:
            with _LOCK:  # two threads calling the kernel at once: one cache object
                if self._cache is None:
                    same = self._stamp is not None and source_stamp(self._py_func) == self._stamp
                    self._cache = self._make(self._py_func) if same else self._make_null()
        return self._cache

    def __getattr__(self, name: str) -> Any:  # (only for what this class does not define itself)
        if name.startswith("__") or name in _OWN:  # a copy or pickle probing a half-built instance
            raise AttributeError(name)
        return getattr(self._made(), name)


_OWN = frozenset(("_py_func", "_make", "_make_null", "_stamp", "_cache"))


def source_stamp(py_func: Callable[..., Any]) -> tuple[float, int] | None:
    """The modification time and size of the file ``py_func`` was defined in (numba's own source stamp), or None
    where there is no such file."""
    try:
        st = os.stat(inspect.getfile(py_func))
    except (OSError, TypeError):
        return None
    return st.st_mtime, st.st_size


def lazy_function_caches() -> bool:
    """Kernels decorated from now on set their on-disk cache up at first use; returns False, changing nothing,
    when this numba's dispatcher has not the shape this relies on (``enable_caching`` making a ``FunctionCache``
    into ``_cache``)."""
    from numba.core import caching, dispatcher

    disp: Any = dispatcher.Dispatcher
    if getattr(disp.enable_caching, "_lean", False):
        return True
    if not all(hasattr(caching, n) for n in ("FunctionCache", "NullCache")) or not hasattr(disp, "enable_caching"):
        return False
    make, make_null = caching.FunctionCache, caching.NullCache

    def enable_caching(self: Any) -> None:
        self._cache = LazyFunctionCache(self.py_func, make, make_null)

    enable_caching._lean = True  # type: ignore[attr-defined]
    disp.enable_caching = enable_caching
    return True
