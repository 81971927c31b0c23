"""vulture allow-list: attributes ``jitcache.load_without_bitcode`` sets on numba's code libraries, which numba
reads (``_shared_module``) or the same patch reads back through the instance's ``__dict__`` (``_unparsed_bitcode``).
Not a test module; never imported."""
# ruff: noqa: B018  (each line names one attribute for vulture: an expression whose value is unused)

from typing import Any

__all__ = ["read_by_numba"]


def read_by_numba(library: Any) -> None:
    library._shared_module  # numba's CPUCodeLibrary._get_module_for_linking returns it
    library._unparsed_bitcode  # popped from vars(library) when the library is first linked
