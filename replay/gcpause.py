"""Python's cyclic garbage collector paused while a capture's many acyclic objects are made.

Replaying a capture of 10 000 flows makes hundreds of thousands of small objects that refer to no cycle (each
flow's source, link, replay, score dictionaries). Each allocation counts towards the collector's thresholds, so
it runs over and over across every object alive — the interpreter's modules, numba's and Polars' own — a tenth
of such a run's time. Reference counting still frees these objects; what the pause defers, any cycle, is found
by the first collection after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (as it was, after: a pause inside a pause leaves it off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
