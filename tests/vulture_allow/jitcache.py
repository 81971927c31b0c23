"""vulture allow-list: attributes ``jitcache.load_without_bitcode`` sets on numba's code libraries, which numba
reads (``_shared_module``) or the same patch reads back through the instance's ``__dict__`` (``_unparsed_bitcode``),
the name ``jitcache.lean_env`` gives its ``_rebuild_env`` (``__qualname__``: what pickling stores for it), and the
output folder ``jitcache.aot_build`` sets on numba's ``pycc.CC``, which its ``compile`` reads.
Not a test module; never imported."""
# ruff: noqa: B018  (each line names one attribute for vulture: an expression whose value is unused)

from typing import Any

__all__ = ["read_by_numba", "read_by_pickle", "read_by_pycc"]


def read_by_numba(library: Any) -> None:
    library._shared_module  # numba's CPUCodeLibrary._get_module_for_linking returns it
    library._unparsed_bitcode  # popped from vars(library) when the library is first linked


def read_by_pickle(function: Any) -> None:
    function.__qualname__  # pickle (cloudpickle) stores a function by its module and qualified name


def read_by_pycc(cc: Any) -> None:
    cc.output_dir  # numba.pycc.CC.compile writes the extension there
