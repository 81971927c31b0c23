"""Borrowed views of the simulation's arrays for the compiled loop.

Every array numba hands between the loop's inlined helpers is reference-counted: each time one is taken from
the state tuple, numba emits a call that increments its owner's count atomically, and another that decrements
it, hundreds per event. The loop runs inside one call whose caller holds the state (and so every array) for
the whole run, so it can work on views that own nothing: the same data, shape and strides with no owner
(numba's meminfo pointer null), for which the count calls return at once. The views must not outlive the
call that made them (the loop keeps them local). In plain Python (``NUMBA_DISABLE_JIT=1``) nothing is counted and
the state is used as it is."""

from __future__ import annotations

import os
from typing import Any

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ackreplay.sim.state import SimState

#: Whether numba runs the "compiled" functions as plain Python (then there is nothing to borrow).
PLAIN_PYTHON = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")


def _borrow(typingctx: Any, arr: types.Array) -> tuple[Any, Any]:
    """The typing and code of ``_borrowed``: the array ``arr`` without its owner, a view whose reference
    counting does nothing."""
    del typingctx  # (numba's signature; the array type is enough)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        src = context.make_array(sig.args[0])(context, builder, value=args[0])
        out = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(src, name))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()

    return arr(arr), codegen


_borrowed: Any = intrinsic(_borrow)


@njit(cache=True, nogil=True, inline="always")
def borrowed_state(s: SimState) -> SimState:
    """``s`` with every array borrowed (``_borrowed``): valid while ``s`` is held by the caller."""
    if PLAIN_PYTHON:
        return s
    return SimState(
        _borrowed(s.fi), _borrowed(s.fs), _borrowed(s.g), _borrowed(s.flow), _borrowed(s.alg), _borrowed(s.ap),
        _borrowed(s.seg), _borrowed(s.got), _borrowed(s.dqf), _borrowed(s.dqs), _borrowed(s.aqf), _borrowed(s.aqi),
        _borrowed(s.rqs), _borrowed(s.rqt), _borrowed(s.ring), _borrowed(s.heap), _borrowed(s.pos), _borrowed(s.key),
        _borrowed(s.qf), _borrowed(s.qi), _borrowed(s.last_fin), _borrowed(s.qd_hist), _borrowed(s.ts),
        _borrowed(s.tally), _borrowed(s.alog), _borrowed(s.slog), _borrowed(s.fate),
        _borrowed(s.bbr), _borrowed(s.tx))


