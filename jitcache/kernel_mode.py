"""Compiled kernels or their plain-Python source: the one switch between the two, and ``njit``, which obeys it.

Every kernel of ackreplay is decorated with this module's :func:`njit` (numba's, same options). By default it is
numba's: the kernel compiles at its first call, or loads from numba's on-disk cache. After
:func:`use_plain_python` it returns the function itself, undecorated, and numba is never imported — the kernels run
as the Python they are written in, on the same numpy arrays (what ``NUMBA_DISABLE_JIT=1`` does, without numba's
import).

Why: a process that runs compiled kernels first pays numba's import (~0.1 s beyond numpy's) and the loading of each
cached kernel it calls (7 for ``flows``, ~36 for ``score``: 0.09–0.3 s). On a capture of a few hundred packets the
kernels' own work is a few milliseconds compiled and a few tens of milliseconds in Python, so the plain source
finishes first. The command line chooses (``cli/kernel_choice.py``) from the size of its inputs, before it imports
any kernel; libraries and the service always run compiled. ``tests/test_plain_kernels.py`` checks that both give
the same score documents, by value, on several small captures.

After :func:`use_ahead_of_time`, while an extension of kernels compiled ahead of time from the current sources is
there (``jitcache.aot``, built by ``jitcache.aot_build``), ``njit`` returns each kernel's compiled functions from it
and numba is not imported; a kernel it does not hold compiles with numba at its first call, as before. The command
line chooses it for captures too large for plain Python (``cli/kernel_choice.py``); ``tests/test_aot.py`` checks
that it gives what the JIT kernels give.

The choice is made once per process, before the first kernel module is imported: a module decorates its kernels
when it is imported, so kernels already imported stay as they were.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: ``plain``, ``compiled`` (numba's JIT) or ``aot`` (ahead of time where built, else JIT) in the environment fixes
#: the choice for the process (and its children), whatever the command line would choose; unset, the command line
#: chooses and everything else runs JIT.
ENV = "ACKREPLAY_KERNELS"

_plain = False
_ahead = False


def chosen_by_environment() -> bool:
    """Whether :data:`ENV` fixes the choice (then the command line does not choose)."""
    return os.environ.get(ENV) in ("plain", "compiled", "aot")


def use_plain_python() -> None:
    """Run the kernels imported from now on as plain Python (numba is not imported for them).

    Compiled kernels wrap integers around and divide floats without a word; the same arithmetic on numpy scalars
    warns (``overflow encountered in scalar multiply`` in a hash). So the numpy RuntimeWarnings that
    ackreplay's own modules raise are not shown from then on, in every thread."""
    global _plain
    _plain = True
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ackreplay\.")


def use_ahead_of_time() -> bool:
    """Run the kernels imported from now on from the ahead-of-time extension where it is there and built from the
    current sources (``jitcache.aot``); returns whether it is."""
    global _ahead
    from ackreplay.jitcache import aot

    _ahead = aot.available()
    return _ahead


def ahead_of_time() -> bool:
    """Whether kernels decorated from now on come from the ahead-of-time extension (while it is active)."""
    return _ahead


def plain_python() -> bool:
    """Whether kernels decorated from now on run as plain Python."""
    return _plain


def njit(*args: Any, **options: Any) -> Any:
    """numba's ``njit`` (``@njit`` or ``@njit(cache=True, ...)``); after :func:`use_plain_python` a decorator that
    leaves the function as it is; after :func:`use_ahead_of_time` one that returns the kernel's ahead-of-time
    functions (``jitcache.aot.kernel``)."""
    if not _plain and not _ahead:
        from numba import njit as numba_njit

        return numba_njit(*args, **options)
    bare = len(args) == 1 and callable(args[0]) and not options  # ``@njit``, not ``@njit(...)``
    if _plain:
        return args[0] if bare else _keep
    from ackreplay.jitcache import aot

    if not aot.active():  # numba came in since (``aot.materialise``): numba's kernels from now on
        from numba import njit as numba_njit

        return numba_njit(*args, **options)
    if bare:
        return aot.kernel(args[0], {})
    return lambda func: aot.kernel(func, options)


def _keep(func: F) -> F:
    return func


def when_compiling(make: Callable[[], Any]) -> Any:
    """``make()``, an object only compiled code uses (a numba intrinsic), made now — or, while the kernels come
    from the ahead-of-time extension, when numba is first imported (then a JIT kernel may compile against it)."""
    from ackreplay.jitcache import aot

    return aot.Proxy(make) if _ahead and aot.active() else make()


if os.environ.get(ENV) == "plain":
    use_plain_python()
elif os.environ.get(ENV) == "aot":
    use_ahead_of_time()
