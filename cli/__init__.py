"""The ``ackreplay`` command line."""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
import os
import sys

from ackreplay import jitcache

# Polars allocates through its own jemalloc, which keeps freed pages for ten seconds by default; replay
# right after a large ingest then counted them in the process's memory (measured: ~130 MB after a 16 M-segment
# capture). jemalloc reads its options when it starts, before Polars is imported: hand freed pages back at
# once. Every process of the project starts here (the service and the workers too); set the variable to
# choose otherwise.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")


def _numba_without_optional_imports() -> None:
    """Import numba with ``cffi`` and ``yaml`` hidden, so that it finds neither. numba imports PyYAML to
    read a ``.numba_config.yaml`` from the working directory (0.01–0.02 s), and when it sets up its typing
    (the first call of any compiled kernel) it builds a ``cffi.FFI()``, importing cffi's C parser (0.09 s),
    to type CFFI functions passed to kernels — ackreplay passes none and configures numba by environment
    variables. Both modules stay importable by whatever needs them later (a YAML truth sidecar,
    ``cryptography``); only those two numba features are off in this process."""
    hidden = [name for name in ("cffi", "yaml") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # ``import name`` raises ImportError
    try:
        import numba
        import numba.core.typing.cffi_utils  # noqa: F401
    except ImportError:  # a numba without these modules: nothing to do
        pass
    finally:
        for name in hidden:
            del sys.modules[name]


_numba_without_optional_imports()
jitcache.load_without_compiler_setup()
