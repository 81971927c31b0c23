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

The choice is made once per process, before the first kernel module is imported: a module decorates its kernels
when it is imported, so kernels already imported stay as they were.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: ``plain`` or ``compiled`` in the environment fixes the choice for the process (and its children), whatever the
#: command line would choose; unset, the command line chooses and everything else runs compiled.
ENV = "ACKREPLAY_KERNELS"

_plain = False


def chosen_by_environment() -> bool:
    """Whether :data:`ENV` fixes the choice (then the command line does not choose)."""
    return os.environ.get(ENV) in ("plain", "compiled")


def use_plain_python() -> None:
    """Run the kernels imported from now on as plain Python (numba is not imported for them).

    Compiled kernels wrap integers around and divide floats without a word; the same arithmetic on numpy scalars
    warns (``overflow encountered in scalar multiply`` in a hash). So the numpy RuntimeWarnings that
    ackreplay's own modules raise are not shown from then on, in every thread."""
    global _plain
    _plain = True
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ackreplay\.")


def plain_python() -> bool:
    """Whether kernels decorated from now on run as plain Python."""
    return _plain


def njit(*args: Any, **options: Any) -> Any:
    """numba's ``njit`` (``@njit`` or ``@njit(cache=True, ...)``), or, after :func:`use_plain_python`, a decorator
    that leaves the function as it is."""
    if not _plain:
        from numba import njit as numba_njit

        return numba_njit(*args, **options)
    if len(args) == 1 and callable(args[0]) and not options:  # bare ``@njit``
        return args[0]

    def keep(func: F) -> F:
        return func

    return keep


if os.environ.get(ENV) == "plain":
    use_plain_python()
