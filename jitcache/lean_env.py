"""Cached kernels' environments rebuilt without importing numba's own modules that they name.

Each compiled function has an *environment*: the globals of the module it was defined in and its constants. A
cached kernel stores the environments of every function compiled into it — numba's own implementations of numpy
functions included — by module name, and loading it rebuilds each one, importing that module for its
``__dict__``. Loading ``score``'s kernels so imports ``numba.np.arrayobj``, ``numba.np.npyimpl``,
``numba.np.arraymath`` and what they import (~0.03 s) only for those dictionaries.

Compiled nopython code reads an environment's constants, never its globals: only object mode (``pylowering``, which
ackreplay's ``njit`` kernels never use) looks names up there. :func:`environments_without_imports` makes numba's
``_rebuild_env`` give a numba module that is not imported yet an environment whose globals hold only its name (what
``Environment.__reduce__`` and ``can_cache`` read); any other module is imported as before. Installed by the
command line's lean numba set-up (``cli/lean_numba.py``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


def environments_without_imports() -> bool:
    """Rebuild cached environments of numba's not-yet-imported modules without importing them; returns False,
    changing nothing, when this numba's environments have not the shape this relies on."""
    from numba.core import environment

    rebuild: Any = getattr(environment, "_rebuild_env", None)
    if rebuild is None or getattr(rebuild, "_lean", False):
        return rebuild is not None
    env_class: Any = getattr(environment, "Environment", None)
    lookup: Any = getattr(environment, "lookup_environment", None)
    if env_class is None or lookup is None or not hasattr(env_class, "_memo"):
        return False

    def lean_rebuild_env(modname: str, consts: Any, env_name: str) -> Any:
        env = lookup(env_name)
        if env is not None:
            return env
        module = sys.modules.get(modname)
        if module is None and not modname.startswith("numba."):
            module = importlib.import_module(modname)
        env = env_class(module.__dict__ if module is not None else {"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        env_class._memo[env_name] = env
        return env

    # ``Environment.__reduce__`` names ``_rebuild_env``, and numba pickles cached kernels with cloudpickle, which
    # copies a local function's code into the cache file: named as numba's own, the replacement is stored as a
    # reference to ``numba.core.environment._rebuild_env`` — so a cache file written here holds numba's name only,
    # and loads in any process through whichever ``_rebuild_env`` that process has.
    lean_rebuild_env.__module__ = environment.__name__
    lean_rebuild_env.__name__ = lean_rebuild_env.__qualname__ = "_rebuild_env"
    lean_rebuild_env._lean = True  # type: ignore[attr-defined]
    environment._rebuild_env = lean_rebuild_env
    return True
