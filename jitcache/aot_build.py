"""Build the extension of kernels compiled ahead of time (``jitcache.aot``): ``python -m ackreplay.jitcache.aot_build``.

Each kernel named in ``jitcache/aot_signatures.json`` is compiled with numba's ``pycc`` for each argument-type key
recorded there (:mod:`aot_keys`), with the kernel's own options (``nogil``: the compiled function lets go of the GIL
as the JIT one does; ``error_model``), into one CPython extension named after the sources' fingerprint
(``aot.fingerprint``), beside numba's cache of this package; older builds there are removed. Runs in its own
process, with the kernels as numba's JIT (it imports their modules). ``ackreplay warmup --ahead-of-time`` runs it
(``scripts/setup.sh``); a build that fails leaves the kernels JIT and says so in one line.

:func:`record` writes the signatures file from the JIT kernels of a process that ran the commands
(``python -m ackreplay.cli.aot_signatures``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

from ackreplay.jitcache import aot


def type_key(t: Any) -> str | None:
    """The :mod:`aot_keys` key of a numba type, or None for a type that has none (a literal, a record, …)."""
    from numba.core import types

    if isinstance(t, types.Literal):
        return None
    if isinstance(t, types.Array):
        if not t.aligned or not isinstance(t.dtype, (types.Integer, types.Float, types.Boolean)):
            return None
        return f"a:{t.dtype}:{t.ndim}:{t.layout}" + ("" if t.mutable else ":r")
    if isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return str(t)
    if isinstance(t, types.NoneType):
        return "none"
    return tuple_type_key(t) if isinstance(t, types.BaseTuple) else None


def tuple_type_key(t: Any) -> str | None:
    """The key of a numba tuple or named tuple type (``aot_keys.tuple_key``'s), or None."""
    items = [type_key(x) for x in t.types]
    if None in items:
        return None
    inner = f"({','.join(items)})"  # type: ignore[arg-type]  # (None excluded above)
    cls = getattr(t, "instance_class", tuple)
    return inner if cls is tuple else f"{cls.__module__}.{cls.__qualname__}{inner}"


def _split(inner: str) -> list[str]:
    """The comma-separated keys of a tuple key's inside, at the top level of parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    if inner:
        parts.append(inner[start:])
    return parts


def key_type(key: str) -> Any:
    """The numba type of a key (the inverse of :func:`type_key`)."""
    from numba.core import types

    def scalar(name: str) -> Any:
        return types.boolean if name == "bool" else getattr(types, name)

    if key.startswith("a:"):
        _, dtype, ndim, layout, *ro = key.split(":")
        array: Any = types.Array
        return array(scalar(dtype), int(ndim), layout, readonly=bool(ro))
    if key == "none":
        return types.none
    if key.endswith(")"):
        head, inner = key[:-1].split("(", 1)
        items = [key_type(k) for k in _split(inner)]
        cls = None
        if head:
            module, name = head.rsplit(".", 1)
            cls = getattr(import_module(module), name)
        return types.BaseTuple.from_types(items, cls)
    return scalar(key)


def dispatchers() -> dict[str, Any]:
    """Every numba kernel of the ackreplay modules imported, by ``module:qualname``."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("ackreplay.") and module is not None:
            for value in list(vars(module).values()):
                if isinstance(value, CPUDispatcher) and "<locals>" not in value.py_func.__qualname__:
                    found[f"{value.py_func.__module__}:{value.py_func.__qualname__}"] = value
    return found


def record(path: Path = aot.SIGNATURES) -> int:
    """Write the signatures file from the kernels this process compiled or loaded (each overload whose argument and
    return types all have keys); returns how many."""
    kernels: dict[str, list[list[Any]]] = {}
    for name, disp in sorted(dispatchers().items()):
        sigs = []
        for cres in disp.overloads.values():
            args = [type_key(t) for t in cres.signature.args]
            ret = type_key(cres.signature.return_type)
            if ret is not None and None not in args:
                sigs.append([ret, args])
        if sigs:
            kernels[name] = sorted(sigs, key=json.dumps)
    path.write_text(json.dumps(kernels, indent=1, sort_keys=True) + "\n")
    return sum(len(s) for s in kernels.values())


@contextlib.contextmanager
def kernels_own_options(options: dict[Any, dict[str, Any]]) -> Iterator[None]:
    """pycc compiles every exported function with the same default flags; here each gets its kernel's options
    (``nogil``, ``error_model``, …) as numba's dispatcher would set them."""
    from numba.core.cpu import CPUTargetOptions
    from numba.pycc import compiler

    pycc: Any = compiler
    original = pycc.compile_extra

    def compile_extra(typingctx: Any, targetctx: Any, func: Any, args: Any, return_type: Any, flags: Any,
                      **kws: Any) -> Any:
        flags = flags.copy()
        own = {k: v for k, v in options.get(func, {}).items() if k not in ("cache", "inline")}
        CPUTargetOptions.parse_as_flags(flags, own)
        return original(typingctx, targetctx, func, args, return_type, flags, **kws)

    pycc.compile_extra = compile_extra
    try:
        yield
    finally:
        pycc.compile_extra = original


def build(where: Path | None = None, signatures: Path = aot.SIGNATURES,
          sources: tuple[Path, ...] = aot.SOURCES) -> Path:
    """Compile the extension for the current sources into ``where`` (default :func:`aot.folder`); returns its path.
    Raises what the compiler raises."""
    from ackreplay.jitcache import kernel_mode

    if kernel_mode.plain_python() or kernel_mode.ahead_of_time():
        raise RuntimeError(f"the build needs numba's kernels: unset {kernel_mode.ENV}")
    where = aot.folder() if where is None else where
    fingerprint = aot.fingerprint(sources, signatures)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation
        from numba.pycc import CC
    cc = CC(aot.module_name(fingerprint))
    # (pycc's default CPU is the generic one: portable, and on these kernels as fast as the host's, measured)
    options: dict[Any, dict[str, Any]] = {}
    manifest: dict[str, list[list[Any]]] = {}
    for kernel, sigs in json.loads(signatures.read_text()).items():
        module, qualname = kernel.split(":")
        disp: Any = import_module(module)
        for part in qualname.split("."):
            disp = getattr(disp, part)
        options[disp.py_func] = dict(disp.targetoptions)
        for ret, args in sigs:
            symbol = f"k{sum(len(v) for v in manifest.values())}"
            cc.export(symbol, key_type(ret)(*[key_type(a) for a in args]))(disp.py_func)
            manifest.setdefault(kernel, []).append([args, symbol])
    where.mkdir(parents=True, exist_ok=True)
    name = aot.module_name(fingerprint)
    # Staged beside its place (one file system: each rename is atomic), the manifest put in place before the
    # extension: a process looking for it (``aot.built``) sees both or not the extension, never one half-written;
    # two builds at once each rename a whole file over the other's (the same sources: the same content).
    with tempfile.TemporaryDirectory(prefix=".ackreplay-aot-build-", dir=where) as tmp, kernels_own_options(options):
        cc.output_dir = tmp
        cc.compile()
        staged = Path(tmp) / "manifest.json"
        staged.write_text(json.dumps({"kernels": manifest}))
        for old in where.glob(aot.PREFIX + "*"):
            if not old.name.startswith(name + "."):  # older builds only: not this one, another process's
                old.unlink(missing_ok=True)
        os.replace(staged, aot.manifest_path(where, fingerprint))
        target = aot.extension_path(where, fingerprint)
        os.replace(Path(tmp) / Path(cc.output_file).name, target)
    return target


def ensure(where: Path | None = None) -> int:
    """Build unless the extension of the current sources is there; on failure one line on stderr and 1 (the
    kernels then run as JIT), else 0."""
    t0 = time.perf_counter()
    try:
        fingerprint = aot.fingerprint(aot.SOURCES, aot.SIGNATURES)
        existing = aot.extension_path(where or aot.folder(), fingerprint)
        if aot.built(where or aot.folder(), fingerprint):
            print(f"ackreplay: kernels compiled ahead of time: already built ({existing.name})")
            return 0
        path = build(where)
    except Exception as exc:
        print(f"ackreplay: kernels not compiled ahead of time ({type(exc).__name__}: {exc}); they run as JIT",
              file=sys.stderr)
        return 1
    print(f"ackreplay: kernels compiled ahead of time in {time.perf_counter() - t0:.0f} s ({path.name})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m ackreplay.jitcache.aot_build [--out DIR]``: :func:`ensure`'s exit status."""
    ap = argparse.ArgumentParser(description="Compile ackreplay's kernels ahead of time (jitcache.aot).")
    ap.add_argument("--out", type=Path, help="where to write the extension (default: beside numba's cache)")
    return ensure(ap.parse_args(argv).out)


if __name__ == "__main__":
    sys.exit(main())
