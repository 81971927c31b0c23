"""The numba cache guard drops a package's cached compiled code when any of its sources changes
(numba itself only notices a change to the function's own file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from numba.core.caching import _CacheLocator

from ackreplay import jitcache
from ackreplay.jitcache import guard


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "decode.py").write_text("def f():\n    return 1\n")
    (pkg / "fastpath.py").write_text("from pkg.decode import f\n")
    return pkg


def _cached(cache: Path) -> list[str]:
    cache.mkdir(parents=True, exist_ok=True)
    names = ["fastpath.decode_span-64.py311.1.nbc", "fastpath.decode_span-64.py311.nbi", "other.g-1.py311.nbi"]
    for n in names:
        (cache / n).write_bytes(b"x")
    return names


@pytest.mark.parametrize("numba_cache_dir", [False, True])
def test_guard_drops_cached_code_when_any_source_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          numba_cache_dir: bool) -> None:
    pkg = _package(tmp_path)
    if numba_cache_dir:
        root = tmp_path / "numba-cache"
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(root))
        cache = root / _CacheLocator.get_suitable_cache_subpath(str(pkg / "decode.py"))  # where numba puts it
    else:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
        cache = pkg / "__pycache__"
    _cached(cache)
    guard(pkg)  # no record of the sources yet: the package's entries go, other packages' stay
    assert sorted(p.name for p in cache.iterdir()) == ["ackreplay-jit-sources.sha256", "other.g-1.py311.nbi"]
    _cached(cache)
    guard(pkg)  # sources unchanged: the cache is kept
    assert len(list(cache.glob("fastpath.*"))) == 2
    (pkg / "decode.py").write_text("def f():\n    return 2\n")  # a callee changes, the caller's file does not
    guard(pkg)
    assert list(cache.glob("fastpath.*")) == []
    assert (cache / "other.g-1.py311.nbi").exists()


def test_guard_reports_whether_compiled_code_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package without cached code is cold (its first run compiles, and the CLI says so); once numba has
    written its index files and the sources are unchanged, it is warm."""
    pkg = _package(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert guard(pkg) is False and "pkg" in jitcache.COLD
    assert guard(pkg) is False  # the sources are recorded, but nothing is compiled yet
    (pkg / "__pycache__" / "decode.f-1.py311.nbi").write_bytes(b"x")
    assert guard(pkg) is True and "pkg" not in jitcache.COLD


KERNEL_MODULE = '''
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def running(x):
    out = np.empty(len(x))  # an allocation: the loaded code needs numba's runtime
    total = 0.0
    for i in range(len(x)):
        total += np.sqrt(x[i])
        out[i] = total
    return out
'''

PROBE = '''
import sys
from ackreplay import cli  # what every ackreplay process starts with
import numpy as np
from leanmod import running
from llvmlite.binding import ffi
out = running(np.arange(1000.0))
print(repr(float(out[-1])), "numba.np.arraymath" in sys.modules, len(ffi.lib._lock._cblist))
'''


def test_cached_kernels_load_without_the_compiler_set_up_and_uncached_ones_still_compile(tmp_path: Path) -> None:
    """``jitcache.load_without_compiler_setup`` and ``untimed_llvm_calls`` (installed by the CLI): a kernel not in
    the cache compiles as before (numba's compiler sets its contexts up itself), and in a new process the same
    kernel loads from the cache and runs — same result — without numba's registries (``numba.np.arraymath``, one of
    them, is never imported)."""
    import os
    import subprocess
    import sys

    (tmp_path / "leanmod.py").write_text(KERNEL_MODULE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[1])])}

    def run() -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
        value, registries, llvm_hooks = done.stdout.split()
        assert llvm_hooks == "0"  # numba's timing of LLVM calls is off (``jitcache.untimed_llvm_calls``)
        return value, registries

    want = repr(float(sum(i ** 0.5 for i in range(1000))))
    compiled = run()
    assert any((tmp_path / "cache").rglob("*.nbc"))  # it was compiled and cached
    assert compiled == (compiled[0], "True")  # compiling set the registries up
    loaded = run()
    assert loaded == (compiled[0], "False")  # loaded from the cache, no registries, same result
    assert abs(float(compiled[0]) - float(want)) < 1e-6 * float(want)


def test_untimed_llvm_calls_removes_numbas_hooks_only() -> None:
    """numba's pair of LLVM-lock hooks goes, another pair stays; a second call finds nothing to remove."""
    import os
    import subprocess
    import sys

    probe = (
        "from llvmlite.binding import ffi\n"
        "import numba\n"
        "from ackreplay import jitcache\n"
        "mine = (lambda: None, lambda: None)\n"
        "ffi.register_lock_callback(*mine)\n"
        "before = len(ffi.lib._lock._cblist)\n"
        "print(before, jitcache.untimed_llvm_calls(), jitcache.untimed_llvm_calls(), ffi.lib._lock._cblist == [mine])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "1", "0", "True"]


LOAD_PROBE = '''
from ackreplay import cli
import numpy as np
from ackreplay.jitcache import load_cached
from leanmod import running
first = load_cached(running)
again = load_cached(running)
print(first, again, len(running.overloads), load_cached(running.py_func), float(running(np.arange(4.0))[-1]))
'''


def _kernel_env(tmp_path: Path, **modules: str) -> dict[str, str]:
    """A new process's environment: a numba cache of its own under ``tmp_path``, ``leanmod`` (``KERNEL_MODULE``) and
    ``modules`` (name → source) importable beside this checkout."""
    import os

    for name, source in {"leanmod": KERNEL_MODULE, **modules}.items():
        (tmp_path / f"{name}.py").write_text(source)
    return {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[1])])}


def _probe(code: str, env: dict[str, str], *args: str) -> list[str]:
    """What ``python -c code args`` prints, split (it must succeed)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_load_cached_loads_what_the_cache_holds_once_and_never_compiles(tmp_path: Path) -> None:
    """``jitcache.load_cached``: nothing to load before the kernel is cached (it does not compile it); once cached,
    in a new process, its one version loads ahead of the first call, once, and the call runs it; nothing either
    when the index names compiled code that is gone; a plain function has nothing to load."""
    env = _kernel_env(tmp_path)

    def run() -> list[str]:
        return _probe(LOAD_PROBE, env)

    want = repr(sum(i ** 0.5 for i in range(4)))
    assert run() == ["0", "0", "0", "0", want]  # not cached: nothing loaded (nor compiled) ahead of the call
    assert run() == ["1", "0", "1", "0", want]  # cached: loaded ahead, once; the call used it
    for data in (tmp_path / "cache").rglob("*.nbc"):  # the index names code that is gone: not compiled ahead
        data.unlink()
    assert run() == ["0", "0", "0", "0", want]


CALLER_MODULE = '''
import numpy as np
from numba import njit

from leanmod import running

TABLE = np.array([1.5, 2.5, 3.5])


@njit(cache=True, nogil=True)
def scaled(x):
    return running(x) * TABLE[1]
'''

LINK_PROBE = '''
import sys
from ackreplay import cli  # the CLI's set-up: cached code loaded without parsing its bitcode
import numpy as np
from numba import njit
from numba.core import codegen
from leanmod import running
from callermod import scaled
first = float(running(np.arange(9.0))[-1]), float(scaled(np.arange(9.0))[-1])
lean = [lib for lib in (running.overloads[running.signatures[0]].library,
                        scaled.overloads[scaled.signatures[0]].library) if "_unparsed_bitcode" in vars(lib)]


@njit
def fresh(x):  # compiled now: links the loaded kernel's module, parsed then
    return running(x)[-1] + 1.0


print(*first, float(fresh(np.arange(9.0))), len(lean), getattr(codegen.CPUCodeLibrary._unserialize, "_lean", False))
'''


def test_cached_kernels_load_without_parsing_their_bitcode_and_link_when_called(tmp_path: Path) -> None:
    """``jitcache.load_without_bitcode`` (installed by the CLI): in a new process, two cached kernels (one calling
    the other, one reading a global array) load without their bitcode parsed and give the results they gave when
    compiled; a kernel compiled afterwards that calls one of them links it (its bitcode parsed then) and runs."""
    env = _kernel_env(tmp_path, callermod=CALLER_MODULE)

    def run() -> list[str]:
        return _probe(LINK_PROBE, env)

    total = sum(i ** 0.5 for i in range(9))
    want = [repr(total), repr(total * 2.5), repr(total + 1.0)]
    compiled = run()
    assert [float(v) for v in compiled[:3]] == [float(v) for v in want] and compiled[3:] == ["0", "True"]
    loaded = run()
    assert loaded[:3] == compiled[:3] and loaded[3:] == ["2", "True"]  # both loaded lean, one linked afterwards


SYMBOLS_PROBE = '''
import pickle
import sys
from pathlib import Path

from llvmlite import binding as ll

from ackreplay.jitcache.elf_symbols import defined_symbols


def libraries(obj, depth=0):
    if isinstance(obj, tuple) and len(obj) == 3 and obj[1] == "object":
        return [obj[2]]
    if isinstance(obj, (tuple, list)) and depth < 4:
        return [lib for item in obj for lib in libraries(item, depth + 1)]
    return []


checked = differ = 0
for path in sys.argv[1:]:
    for code, bitcode in libraries(pickle.loads(Path(path).read_bytes())):
        mod = ll.parse_bitcode(bitcode)
        want = {g.name for group in (mod.functions, mod.global_variables) for g in group if not g.is_declaration}
        checked += 1
        differ += defined_symbols(code) != want
print(checked, differ)
'''


def test_elf_symbols_are_the_modules_defined_symbols(tmp_path: Path) -> None:
    """The symbols ``jitcache.elf_symbols`` reads from a cached kernel's object code are the ones numba lists from
    its bitcode (its functions and globals that are not declarations), for two kernels compiled here (one calling
    the other, one reading a global array) and every kernel cached in this checkout; anything but a 64-bit ELF
    object gives None."""
    from ackreplay.jitcache.elf_symbols import defined_symbols

    env = _kernel_env(tmp_path, callermod=CALLER_MODULE)
    _probe("import numpy as np; from callermod import scaled; scaled(np.ones(3))", env)
    root = Path(__file__).resolve().parents[1]
    files = sorted((tmp_path / "cache").rglob("*.nbc")) + sorted(root.glob("*/**/__pycache__/*.nbc"))
    checked, differ = map(int, _probe(SYMBOLS_PROBE, env, *map(str, files)))
    assert checked >= 2 and differ == 0
    assert defined_symbols(b"not an object file") is None
    assert defined_symbols(b"\x7fELF\x01\x01" + bytes(60)) is None  # 32-bit


GC_PROBE = '''
import gc
from ackreplay import cli  # the lean numba set-up: kernels' caches made at first use
from ackreplay.cli import collection
collection.pause()  # as the command line's main does
import numpy as np
from leanmod import running
cache = running._cache
made_at_import = cache._cache is not None
value = float(running(np.arange(4.0))[-1])
print(type(cache).__name__, made_at_import, cache._cache is not None, running.stats.cache_hits != {}, gc.isenabled(),
      value)
'''


def test_kernel_caches_are_made_at_first_call_and_compiling_turns_the_collector_back_on(tmp_path: Path) -> None:
    """``jitcache.lazy_cache`` (installed by the CLI): a kernel's on-disk cache is not set up when it is decorated, but
    at its first call, which compiles and caches it as before, then loads it in a new process. ``cli.collection``:
    with the garbage collector paused, compiling a kernel turns it back on; loading one from the cache does not."""
    env = _kernel_env(tmp_path)
    want = repr(sum(i ** 0.5 for i in range(4)))
    assert _probe(GC_PROBE, env) == ["LazyFunctionCache", "False", "True", "False", "True", want]  # compiled
    assert any((tmp_path / "cache").rglob("*.nbc"))
    assert _probe(GC_PROBE, env) == ["LazyFunctionCache", "False", "True", "True", "False", want]  # loaded


SEARCH_MODULE = '''
import numpy as np
from numba import njit


@njit(cache=True)
def positions(sorted_values, x):
    if len(x) and x[0] < 0:
        raise ValueError("negative_probe", x[0])  # a raise: its class and arguments live in the environment
    return np.searchsorted(sorted_values, x), np.sort(x)
'''

ENV_PROBE = '''
import sys
from ackreplay import cli  # the lean numba set-up
import numpy as np
from searchmod import positions
where, ordered = positions(np.arange(10.0), np.array([7.5, 2.5]))
try:
    positions(np.arange(10.0), np.array([-1.0]))
    raised = "none"
except ValueError as exc:
    raised = repr(exc.args).replace(" ", "")
print(where.tolist() == [8, 3], ordered.tolist() == [2.5, 7.5], raised, "numba.np.arraymath" in sys.modules)
'''


def test_loaded_kernels_rebuild_numbas_environments_without_importing_them(tmp_path: Path) -> None:
    """``jitcache.lean_env`` (installed by the CLI): a kernel calling numba's own numpy functions (defined in
    ``numba.np.arraymath``), compiled in one process, loads in a new one without that module being imported, and
    gives the same results and the same exception, with its arguments, as when it was compiled."""
    env = _kernel_env(tmp_path, searchmod=SEARCH_MODULE)
    want = ["True", "True", "('negative_probe',-1.0)"]
    assert _probe(ENV_PROBE, env) == [*want, "True"]  # compiled: numba's registries imported
    assert _probe(ENV_PROBE, env) == [*want, "False"]  # loaded: numba.np.arraymath never imported
    # the cache file names numba's own ``_rebuild_env``, not a copy of the lean one's code (cloudpickle copies a
    # local function's code into the file), so any process loads it through its own
    files = list((tmp_path / "cache").rglob("*.nbc"))
    assert files and not any(b"lean_env" in f.read_bytes() or b"lean_rebuild" in f.read_bytes() for f in files)


STALE_MODULE = '''
from numba import njit

SCALE = 1.0


@njit(cache=True)
def scaled(x):
    return x * SCALE
'''

STALE_PROBE = '''
import sys
from pathlib import Path
from ackreplay import cli  # the lean numba set-up: a kernel's cache made at its first call
import stalemod
if sys.argv[1] == "edit":  # the source replaced between the kernel's decoration and its first call
    path = Path(stalemod.__file__)
    path.write_text(path.read_text().replace("SCALE = 1.0", "SCALE = 100.0") + "\\n")
print(stalemod.scaled(2.0), type(stalemod.scaled._cache._made()).__name__)
'''


def test_a_kernel_whose_source_changed_before_its_first_call_is_not_cached(tmp_path: Path) -> None:
    """``jitcache.lazy_cache``: a process that imported a kernel, then saw its file replaced (an upgrade under a
    long-running service), compiles the code it imported but does not save it under the new file's stamp — so the
    next process runs the new code; a kernel whose file did not change is cached as numba does."""
    import copy

    from ackreplay.jitcache.lazy_cache import LazyFunctionCache

    env = _kernel_env(tmp_path, stalemod=STALE_MODULE)
    assert _probe(STALE_PROBE, env, "edit") == ["2.0", "NullCache"]
    assert not any((tmp_path / "cache").rglob("*.nbc"))
    assert _probe(STALE_PROBE, env, "keep") == ["200.0", "FunctionCache"]  # the new code, compiled and cached
    assert any((tmp_path / "cache").rglob("*.nbc"))
    assert _probe(STALE_PROBE, env, "keep") == ["200.0", "FunctionCache"]
    half_built = copy.copy(LazyFunctionCache(len, lambda f: None, lambda: None))  # no endless __getattr__
    assert isinstance(half_built, LazyFunctionCache)
