"""numba set up for running cached kernels, at the moment something first imports it — not before.

Importing numba costs 0.15–0.3 s; a command that runs no kernel (``--help``, ``estimators``, ``model`` without
a capture) should not pay it. So the CLI does not import numba itself: :func:`install` puts a finder on
``sys.meta_path`` that, when ``numba`` is first imported (by whichever module of ingest, replay, … needs it),
imports it the lean way — without ``cffi`` and ``yaml`` (:func:`_exec_without_optional_imports`) — and then
installs ``jitcache.load_without_compiler_setup``, ``jitcache.load_without_bitcode``,
``jitcache.untimed_llvm_calls`` and ``jitcache.lazy_cache.lazy_function_caches``; the garbage collector comes back
on when a kernel compiles (``cli.collection``). The finder removes itself at that first import.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from importlib.util import find_spec
from types import ModuleType
from typing import Any

from ackreplay.cli import collection

#: The modules numba imports only for features ackreplay does not use, hidden while it is imported.
OPTIONAL = ("cffi", "yaml")


def _exec_without_optional_imports(loader: Any, module: ModuleType) -> None:
    """Run numba's ``__init__`` with ``cffi`` and ``yaml`` hidden, so that it finds neither. numba imports PyYAML
    to read a ``.numba_config.yaml`` from the working directory (0.01–0.02 s), and when it sets up its typing
    (the first call of any compiled kernel) it builds a ``cffi.FFI()``, importing cffi's C parser (0.09 s), to
    type CFFI functions passed to kernels — ackreplay passes none and configures numba by environment
    variables. Both modules stay importable by whatever needs them later (a YAML truth sidecar,
    ``cryptography``); only those two numba features are off in this process."""
    hidden = [name for name in OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # ``import name`` raises ImportError
    try:
        loader.exec_module(module)
        with contextlib.suppress(ImportError):  # (a numba without this module: nothing to do)
            import numba.core.typing.cffi_utils  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]


def _lean_setup() -> None:
    """Cached code loaded without the compiler's set-up or parsing its bitcode, LLVM calls not timed, each kernel's
    cache set up at its first call (``jitcache``), and the garbage collector back on when a kernel compiles. Where
    the kernels came from the ahead-of-time extension, numba's kernels from now on (``jitcache.aot.materialise``).
    Imported here, not with this module: a light command that never imports numba does not load them."""
    from ackreplay import jitcache
    from ackreplay.jitcache import kernel_mode
    from ackreplay.jitcache.lazy_cache import lazy_function_caches
    from ackreplay.jitcache.lean_env import environments_without_imports

    if kernel_mode.ahead_of_time():
        from ackreplay.jitcache import aot

        aot.materialise()
    jitcache.load_without_compiler_setup()
    jitcache.load_without_bitcode()
    jitcache.untimed_llvm_calls()
    lazy_function_caches()
    environments_without_imports()
    collection.collect_while_compiling()


class _LeanLoader:
    """numba's own loader, run by :func:`_exec_without_optional_imports`, then the cache's lean loading."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        setattr(module, "__loader__", self.loader)  # numba's own, as any other import would leave it  # noqa: B010
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        _exec_without_optional_imports(self.loader, module)
        _lean_setup()


class _NumbaFinder:
    """First on ``sys.meta_path`` until numba is first imported: finds it as the other finders do, with
    :class:`_LeanLoader` around its loader."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        if fullname != "numba":
            return None
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)
        spec = find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _LeanLoader(spec.loader)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Set numba up the lean way when it is first imported; at once if it already is."""
    if "numba" in sys.modules:
        _lean_setup()
    elif _NumbaFinder not in sys.meta_path:
        sys.meta_path.insert(0, _NumbaFinder)
