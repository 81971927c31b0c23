"""The type key of a kernel argument, computed without numba: how an ahead-of-time compiled kernel is chosen.

An ahead-of-time compiled function (``jitcache.aot``) takes its arguments as the types it was compiled for and does
not check them: an array of another dtype, rank or layout would be read as if it had the compiled one. So each call
picks the compiled function whose argument keys are the keys of the values passed, and calls the kernel's JIT
version when there is none. A key names what numba's ``typeof`` tells apart for the values ackreplay's kernels take:

- an array: ``a:<dtype>:<ndim>:<layout>`` (``C``, ``F`` or ``A``, numba's order), then ``:r`` if read-only;
  other than aligned, native byte order and a numeric or boolean dtype: no key;
- a number: its numba type's name (``int64`` for a Python ``int`` within 64 bits, ``float64`` for a ``float``,
  ``bool`` for a ``bool``, the dtype's name for a numpy scalar);
- ``none`` for None; a tuple: its items' keys in ``(…)``; a named tuple: its class (``module.qualname``) before that.

Anything else has no key (None), and a call with such an argument runs the JIT kernel. ``jitcache.aot_build``
writes the same keys from numba's types, and ``tests/test_aot.py`` checks the two agree on every kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_INT64 = (-(2**63), 2**63 - 1)


#: An array dtype's name in a key, or None for a dtype that has none (``dtype.name`` is a Python property of numpy's,
#: ~1.5 µs a call: a kernel call's keys would cost more than the call itself).
_DTYPE_NAMES: dict[np.dtype[Any], str | None] = {}


def dtype_name(dtype: np.dtype[Any]) -> str | None:
    """The name of a numeric or boolean dtype in native byte order, else None."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = dtype.name if dtype.kind in "biuf" and dtype.isnative else None
        _DTYPE_NAMES[dtype] = name
        return name


def array_key(value: np.ndarray) -> str | None:
    """The key of an array (see the module), or None."""
    name = dtype_name(value.dtype)
    flags = value.flags
    if name is None or not flags.aligned:
        return None
    layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
    return f"a:{name}:{value.ndim}:{layout}" + ("" if flags.writeable else ":r")


def value_key(value: Any) -> str | None:
    """The key of one argument (see the module), or None where it has none."""
    kind = type(value)
    if kind is np.ndarray:
        return array_key(value)
    if kind is float:
        return "float64"
    if kind is bool:
        return "bool"
    if kind is int:
        return "int64" if _INT64[0] <= value <= _INT64[1] else None
    if value is None:
        return "none"
    if isinstance(value, np.generic):
        return value.dtype.name if value.dtype.kind in "biuf" else None
    if isinstance(value, tuple):
        return tuple_key(value)
    return None


def tuple_key(value: tuple[Any, ...]) -> str | None:
    """The key of a tuple or named tuple (see the module), or None if one of its items has none."""
    items = [value_key(v) for v in value]
    if None in items:
        return None
    inner = f"({','.join(items)})"  # type: ignore[arg-type]  # (None excluded above)
    kind = type(value)
    return inner if kind is tuple else f"{kind.__module__}.{kind.__qualname__}{inner}"


def call_key(args: tuple[Any, ...]) -> tuple[str | None, ...]:
    """The keys of a call's positional arguments."""
    return tuple(value_key(a) for a in args)
