"""Kernels compiled ahead of time: run without importing numba when an extension built from these sources is there.

A process that runs JIT kernels pays numba's import (~0.1 s beyond numpy's) and the loading of each cached kernel
it calls (~36 for ``score``). ``jitcache.aot_build`` compiles the kernels, for the argument types they are called
with (``jitcache/aot_signatures.json``), into one CPython extension with numba's ``pycc``; this module finds it and
hands each kernel's compiled functions to ``kernel_mode.njit``, and numba is not imported.

- **Built from these sources.** The extension's name holds a fingerprint of every source of the packages that hold
  kernels (what their compiled code may inline), of the signatures file, of :mod:`aot_keys`, of numba's and
  numpy's versions and of the interpreter's ABI (:func:`fingerprint`). An edited source, another numba, … give
  another name: the extension is not found, and the kernels run as JIT (``kernel_mode``), as before.
- **A kernel it does not hold**, or a call with argument types it was not compiled for (:class:`AotKernel`,
  chosen by :mod:`aot_keys`), runs the kernel's JIT version: numba is imported then, and from that moment every
  kernel of the process is numba's dispatcher (:func:`materialise`: the modules' globals are rebound, so
  JIT code compiled later calls JIT code), whatever imports numba first (``cli.lean_numba`` calls it).
- Used where the command line chooses it (``cli.kernel_choice``: captures too large for plain Python) or
  ``ACKREPLAY_KERNELS=aot``; libraries, the service and the workers run JIT.
"""

from __future__ import annotations

import hashlib
import json
import sys
import sysconfig
import threading
from collections.abc import Callable
from importlib.machinery import ExtensionFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from typing import Any

from ackreplay.jitcache import cache_dir
from ackreplay.jitcache.aot_keys import call_key

HERE = Path(__file__).resolve().parent
PACKAGE = Path(__file__).parent.parent  # (ackreplay/, through its links)
#: The sources whose compiled code the extension holds: the packages with kernels and the shared kernels module.
SOURCES: tuple[Path, ...] = (*(PACKAGE / p for p in ("estimators", "graphs", "ingest", "path", "replay", "scoring")),
                             PACKAGE / "kernels.py")
#: The argument types each kernel is compiled for (written by ``python -m ackreplay.cli.aot_signatures``).
SIGNATURES = HERE / "aot_signatures.json"
PREFIX = "ackreplay_aot_"

_LOCK = threading.RLock()
_table: dict[str, dict[tuple[str | None, ...], Callable[..., Any]]] | None = None
_looked = False
_fallen = False
_proxies: list[Proxy] = []


def folder() -> Path:
    """Where the extension is written and looked for: beside numba's cache of this package (``jitcache``)."""
    return cache_dir(HERE)


def numba_version_file() -> bytes:
    """numba's version file, read from the first ``sys.path`` entry holding numba (numba is not imported)."""
    for entry in sys.path:
        path = Path(entry or ".") / "numba" / "_version.py"
        if path.is_file():
            return path.read_bytes()
    return b"no numba"


def fingerprint(sources: tuple[Path, ...] = SOURCES, signatures: Path = SIGNATURES) -> str:
    """What the extension must have been built from (see the module)."""
    import numpy

    h = hashlib.sha256()
    for root in sources:
        for path in [root] if root.suffix == ".py" else sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    for extra in (signatures.read_bytes(), (HERE / "aot_keys.py").read_bytes(), numba_version_file(),
                  numpy.__version__.encode(), str(sysconfig.get_config_var("EXT_SUFFIX")).encode()):
        h.update(extra)
    return h.hexdigest()[:24]


def module_name(print_: str) -> str:
    return PREFIX + print_


def extension_path(where: Path, print_: str) -> Path:
    return where / (module_name(print_) + str(sysconfig.get_config_var("EXT_SUFFIX")))


def manifest_path(where: Path, print_: str) -> Path:
    """The manifest of the extension built for ``print_`` (its kernels' symbols by argument keys)."""
    return where / (module_name(print_) + ".json")


def built(where: Path, print_: str) -> bool:
    """Whether the extension built for ``print_`` and its manifest are both in ``where`` (``aot_build.build`` puts
    the manifest in place first, then the extension, each by an atomic rename)."""
    return extension_path(where, print_).is_file() and manifest_path(where, print_).is_file()


def load(where: Path, print_: str) -> dict[str, dict[tuple[str | None, ...], Callable[..., Any]]] | None:
    """The compiled functions of the extension built for ``print_`` in ``where``, by kernel and argument keys, or
    None when there is none (or it cannot be loaded: then one line on stderr)."""
    path = extension_path(where, print_)
    manifest = manifest_path(where, print_)
    if not built(where, print_):
        return None
    try:
        loader = ExtensionFileLoader(module_name(print_), str(path))
        spec = spec_from_loader(module_name(print_), loader)
        assert spec is not None
        module = module_from_spec(spec)
        loader.exec_module(module)
        kernels = json.loads(manifest.read_text())["kernels"]
        return {kernel: {tuple(keys): getattr(module, symbol) for keys, symbol in entries}
                for kernel, entries in kernels.items()}
    except Exception as exc:  # a damaged or foreign file: the kernels run as JIT
        print(f"ackreplay: ahead-of-time kernels not used ({path.name}: {exc}); running JIT kernels",
              file=sys.stderr)
        return None


def table() -> dict[str, dict[tuple[str | None, ...], Callable[..., Any]]] | None:
    """This process's ahead-of-time kernels (looked for once), or None."""
    global _table, _looked
    with _LOCK:
        if not _looked:
            _looked = True
            _table = load(folder(), fingerprint(SOURCES, SIGNATURES)) if SIGNATURES.is_file() else None
        return _table


def available() -> bool:
    """Whether an extension built from the current sources is there (loads it)."""
    return table() is not None


def active() -> bool:
    """Whether kernels decorated now get their ahead-of-time functions (not once numba is in the process)."""
    return not _fallen and table() is not None


class Proxy:
    """A kernel (or an object only compiled code uses) standing in for numba's until numba is imported."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None
        _proxies.append(self)

    def jit(self) -> Any:
        """numba's object for this one (numba is imported, and every proxy replaced: :func:`materialise`)."""
        materialise()
        with _LOCK:
            if self._made is None:
                self._made = self._make()
            return self._made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.jit()(*[a.jit() if isinstance(a, Proxy) else a for a in args], **kwargs)


class AotKernel(Proxy):
    """A kernel with compiled functions in the extension: each call runs the one compiled for its argument types
    (:mod:`aot_keys`), else the kernel's JIT version."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any],
                 compiled: dict[tuple[str | None, ...], Callable[..., Any]]) -> None:
        super().__init__(lambda: numba_njit(func, options))
        self.py_func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._compiled = compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            fn = self._compiled.get(call_key(args))
            if fn is not None:
                return fn(*args)
        return super().__call__(*args, **kwargs)


def numba_njit(func: Callable[..., Any], options: dict[str, Any]) -> Any:
    from numba import njit

    return njit(**options)(func)


def kernel(func: Callable[..., Any], options: dict[str, Any]) -> Any:
    """What ``kernel_mode.njit`` returns for ``func`` while :func:`active`: its :class:`AotKernel`, or a proxy
    that compiles it with numba at its first call."""
    compiled = (table() or {}).get(f"{func.__module__}:{func.__qualname__}")
    if compiled:
        return AotKernel(func, options, compiled)
    proxy = Proxy(lambda: numba_njit(func, options))
    proxy.py_func = func  # type: ignore[attr-defined]
    return proxy


def materialise() -> None:
    """From now on the process runs numba's kernels: each proxy made so far gets its numba object, and every
    module global holding a proxy holds that instead (numba types a kernel's globals when it compiles
    it). Called when numba is first imported, whoever imports it; once."""
    global _fallen
    with _LOCK:
        if _fallen:
            return
        _fallen = True
        if not _proxies:
            return
        made = {id(p): p.jit() for p in list(_proxies)}
        for module in list(sys.modules.values()):
            space = getattr(module, "__dict__", None)
            if isinstance(space, dict):
                for key, value in list(space.items()):
                    if isinstance(value, Proxy) and id(value) in made:
                        space[key] = made[id(value)]

