"""A memory prefetch hint for compiled loops that gather through an index (``llvm.prefetch``).

The flow analysis reads each connection's packets through ``order``: with many connections interleaved
in the capture, every packet's fields sit on cache lines of their own, and the loop stalls on each. Asking
for the lines of the packet a few dozen ahead hides that latency (a strided three-column gather over
3 M packets: 30 → 17 ms). A hint only: it never changes what the loop computes, so where the kernels run as
plain Python (``jitcache.kernel_mode``) it is a function that does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ackreplay.jitcache.kernel_mode import plain_python, when_compiling

#: How many packets ahead to prefetch (on the 2-core VM: 16 and 32 alike, 64 no better).
AHEAD = 32


def _no_prefetch(arr: np.ndarray, idx: int) -> None:
    """The hint in plain Python: nothing to do."""


def _prefetch(_typingctx: Any, arr: Any, idx: Any) -> Any:
    """``prefetch(arr, i)``: hint that ``arr[i]`` will be read soon (no bounds check: ``i`` must be valid)."""
    from llvmlite import ir
    from numba.core import cgutils, types

    sig = types.void(arr, idx)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        opaque = getattr(ptr.type, "is_opaque", False)  # LLVM with opaque pointers names it by address space
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type if opaque else i8p, i32, i32, i32])
        name = "llvm.prefetch.p0" if opaque else "llvm.prefetch.p0i8"
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        addr = ptr if opaque else builder.bitcast(ptr, i8p)
        builder.call(fn, [addr, i32(0), i32(3), i32(1)])  # read, keep in all cache levels, data
        return context.get_dummy_value()

    return sig, codegen


def _compiled_prefetch() -> Callable[[np.ndarray, int], None]:
    from numba.extending import intrinsic

    return cast(Callable[[np.ndarray, int], None], intrinsic(_prefetch))


#: The intrinsic as compiled code calls it (nothing in plain Python; made when numba comes in, with kernels compiled
#: ahead of time).
prefetch: Callable[[np.ndarray, int], None] = _no_prefetch if plain_python() else when_compiling(_compiled_prefetch)
