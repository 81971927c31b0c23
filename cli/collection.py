"""Python's cyclic garbage collector off in a command's process, on again where garbage cycles pile up.

A command imports numpy, numba, Polars and ackreplay's modules (hundreds of thousands of objects) and then runs for
about a second; the collector's passes over those objects cost 0.04–0.05 s of each command (measured on the bench's
large captures and on the bundled sample: 218–255 passes) and free almost nothing — the peak memory of `score` and
`flows` is the same with it off. The process ends with ``os._exit`` right after (``cli.main.main``).

Two things do make cycles at a rate that matters, and turn it back on for the rest of the process:

* numba compiling a kernel (its intermediate representation is full of cycles: ~180 MB in 7 s of compiling) —
  a listener on numba's ``numba:compile`` event (:func:`collect_while_compiling`), which fires only when a kernel
  compiles, not when it loads from the cache;
* the long-running commands, ``serve`` and ``worker``; ``score``'s batch of inputs from its second (each input is
  a command's worth of work, and a long batch would otherwise keep every cycle it made); ``graph``'s figures from
  its second flow (a matplotlib figure is held together by reference cycles: ~20 MB a flow kept otherwise) —
  :func:`resume`.

Reference counting frees everything else as usual.
"""

from __future__ import annotations

import gc
from typing import Any


def pause() -> None:
    """No collector passes from now on (until :func:`resume`)."""
    gc.disable()


def resume() -> None:
    """The collector's passes again, as in any Python process."""
    gc.enable()


def collect_while_compiling() -> None:
    """Turn the collector back on when numba first compiles a kernel in this process (call once numba is
    imported); a numba without the event API leaves it as it is."""
    try:
        from numba.core import event
    except ImportError:
        return

    class _OnCompile(event.Listener):
        def on_start(self, ev: Any) -> None:
            resume()

        def on_end(self, ev: Any) -> None:
            pass

    event.register("numba:compile", _OnCompile())
