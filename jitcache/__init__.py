"""jitcache — keep numba's on-disk cache of compiled code in step with the sources it was compiled from.

numba invalidates a cached function only when *its own* source file changes. Compiled code also
contains the functions it calls from other modules (``fastpath.decode_span`` inlines
``decode.decode_one``), so editing ``decode.py`` alone would leave ``decode_span`` running the old
decoder from the cache. :func:`guard` fingerprints every source file of a package and, when the
fingerprint differs from the one recorded next to the cache, deletes that package's cached entries
before anything is loaded from them.
"""


from __future__ import annotations

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")

import hashlib
import os
from pathlib import Path
from typing import Any

_STAMP = "ackreplay-jit-sources.sha256"
#: Packages whose compiled code is not cached yet (or was just dropped): their kernels compile at first use.
COLD: set[str] = set()


def _sources(root: Path) -> list[Path]:
    """The Python sources of a package folder, its subpackages included, or a single module file."""
    return [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))


def _fingerprint(package_dir: Path, inlined: tuple[Path, ...]) -> str:
    h = hashlib.sha256()
    for root in (package_dir, *inlined):
        for path in _sources(root):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_dir(package_dir: Path) -> Path:
    """Where numba keeps the package's cache: under ``NUMBA_CACHE_DIR``, a folder named after the source
    folder and the SHA-1 of its absolute path (numba's ``_CacheLocator.get_suitable_cache_subpath``;
    ``tests/test_jitcache.py`` checks the two agree), else ``__pycache__`` beside the sources."""
    base = os.environ.get("NUMBA_CACHE_DIR")
    if base:
        folder = os.path.abspath(package_dir)
        digest = hashlib.sha1(folder.encode()).hexdigest()
        return Path(os.path.abspath(base)) / f"{os.path.basename(folder)}_{digest}"
    return package_dir / "__pycache__"


def guard(package_dir: str | Path, *inlined: str | Path) -> bool | None:
    """Drop the package's cached compiled code (its subpackages' included) if any of its sources, or of the
    packages and modules in ``inlined`` whose kernels its own kernels call, changed since it was cached.

    Returns whether cached code is there to load (False: the kernels compile at first use, and the
    package's name is added to :data:`COLD`). Where the kernels run as plain Python (``kernel_mode``) nothing is
    loaded from the cache, so nothing is checked (None)."""
    from ackreplay.jitcache.kernel_mode import plain_python

    if plain_python():
        return None
    package_dir = Path(package_dir)
    folders = sorted({p.parent for p in _sources(package_dir)})
    stamp = cache_dir(package_dir) / _STAMP
    current = _fingerprint(package_dir, tuple(Path(p) for p in inlined))
    try:
        if stamp.read_text() == current and any(any(cache_dir(f).glob("*.nbi")) for f in folders):
            COLD.discard(package_dir.name)
            return True
    except OSError:
        pass
    COLD.add(package_dir.name)
    try:
        for folder in folders:
            modules = {p.stem for p in folder.glob("*.py")}
            for entry in cache_dir(folder).glob("*.nb[ic]"):
                if entry.name.split(".", 1)[0] in modules:
                    entry.unlink(missing_ok=True)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)
    except OSError:  # a read-only installation: numba then uses its per-user cache, nothing to guard here
        pass
    return False


def load_without_compiler_setup() -> bool:
    """Load cached compiled code without first setting up numba's compiler.

    Before loading a function from its on-disk cache numba refreshes its typing and target contexts: it
    imports and installs every typing and lowering registry (numba's implementations of Python built-ins,
    numpy, typed containers, random generators, ...), which compiling needs and running compiled code does
    not — 0.15–0.2 s, a fifth of a short command. Loaded code needs numba's runtime (NRT) symbols, which
    this initialises instead; a function that is not cached still compiles as before (numba's compiler
    refreshes the contexts itself). Returns False, changing nothing, when this numba's cache does not have
    the shape this relies on (``Cache.load_overload`` = refresh, then ``_load_overload`` under
    ``_guard_against_spurious_io_errors``)."""
    from numba.core import caching
    from numba.core.runtime import nrt

    cache = caching.Cache
    if getattr(cache.load_overload, "_lean", False):
        return True
    if not all(hasattr(cache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")) \
            or not hasattr(nrt, "rtsys"):
        return False

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        nrt.rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # (an I/O error the guard swallowed: compile instead)

    load_overload._lean = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload  # type: ignore[method-assign]
    return True


def load_without_bitcode() -> bool:
    """Load cached compiled code without parsing its LLVM bitcode unless it is linked into new code.

    numba caches a kernel as its object code and the bitcode of the same module; loading it parses the whole
    bitcode (2–3 ms a kernel, ~0.09 s of the ~40 kernels of ``score``) to list the symbols the module defines, and
    keeps the parsed module for linking it into code compiled later. The object code's own symbol table lists the
    same symbols (``jitcache.elf_symbols``), and the bitcode is parsed only when something links the kernel
    (compiling a kernel that calls it). Object code that is not ELF is loaded as numba does. Returns False,
    changing nothing, when this numba's code library has not the shape this relies on."""
    from llvmlite import binding as ll
    from numba.core import codegen

    from ackreplay.jitcache.elf_symbols import defined_symbols

    library: Any = codegen.CPUCodeLibrary
    if getattr(library._unserialize, "_lean", False):
        return True
    if not all(hasattr(library, name) for name in ("_get_module_for_linking", "_set_compiled_object",
                                                     "enable_object_caching", "_finalize_final_module")):
        return False
    unserialize, for_linking = library._unserialize.__func__, library._get_module_for_linking

    def lean_unserialize(cls: Any, gen: Any, state: Any) -> Any:
        name, kind, data = state
        try:  # a truncated or unexpected object, or a numba whose library differs inside: loaded as numba does
            symbols = defined_symbols(data[0]) if kind == "object" else None
            engine: Any = getattr(gen, "_engine", None)
            if symbols is None or not isinstance(getattr(engine, "_defined_symbols", None), set):
                return unserialize(cls, gen, state)
            self = gen.create_library(name)
            self.enable_object_caching()
            self._set_compiled_object(data[0])
            self._unparsed_bitcode = data[1]
            self._finalize_final_module()
        except Exception:
            return unserialize(cls, gen, state)
        engine._defined_symbols |= symbols
        return self

    def module_for_linking(self: Any) -> Any:
        bitcode = self.__dict__.pop("_unparsed_bitcode", None)
        if bitcode is not None:
            self._shared_module = ll.parse_bitcode(bitcode)
        return for_linking(self)

    lean_unserialize._lean = True  # type: ignore[attr-defined]
    library._unserialize = classmethod(lean_unserialize)
    library._get_module_for_linking = module_for_linking
    return True


def untimed_llvm_calls() -> int:
    """Stop numba timing each call into LLVM; returns how many timing hooks were removed.

    numba registers a pair of callbacks on llvmlite's LLVM lock that open and close a ``numba:llvm_lock`` event
    around every call into LLVM. The event only feeds the compile-time statistics of an overload's metadata, but
    loading one cached kernel makes hundreds of such calls (~24 000 for the ~40 kernels of ``score``, 0.03–0.05 s
    of Python). Without the hooks those statistics read 0; everything else, compiling included, is the same."""
    from llvmlite.binding import ffi

    hooks = getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_cblist", None)
    if not isinstance(hooks, list):
        return 0
    numba_hooks = [pair for pair in hooks
                   if all(getattr(fn, "__module__", None) == "numba.core.base" for fn in pair)]
    for pair in numba_hooks:
        ffi.unregister_lock_callback(*pair)
    return len(numba_hooks)


def load_cached(kernel: Any) -> int:
    """Load now, from numba's on-disk cache, every compiled version of ``kernel`` cached for its current source, as
    its first call would; returns how many were loaded (0 for a plain-Python kernel, one not cached, or one already
    loaded). It never compiles.

    For a caller that is about to start work on another thread that would slow the loading down: loading maps the
    kernel's code into memory, and a thread taking page faults on fresh arrays meanwhile makes each mapping wait
    (the process's memory map is locked for both)."""
    cache: Any = getattr(kernel, "_cache", None)
    index = getattr(cache, "_cache_file", None)
    if index is None or not hasattr(cache, "_index_key"):
        return 0
    from numba.core.compiler_lock import global_compiler_lock

    loaded = 0
    with global_compiler_lock:
        codegen = kernel.targetctx.codegen()
        for key, data_name in index._load_index().items():
            sig = tuple(key[0])
            if cache._index_key(key[0], codegen) == key and sig not in kernel.overloads \
                    and os.path.isfile(index._data_path(data_name)):  # (else compile() would compile it)
                kernel.compile(sig)
                loaded += 1
    return loaded
