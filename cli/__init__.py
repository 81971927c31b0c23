"""The ``ackreplay`` command line."""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
import os

from ackreplay.cli import lean_numba

# Polars allocates through its own jemalloc, which keeps freed pages for ten seconds by default; replay
# right after a large ingest then counted them in the process's memory (measured: ~130 MB after a 16 M-segment
# capture). jemalloc reads its options when it starts, before Polars is imported: hand freed pages back at
# once. Every process of the project starts here (the service and the workers too); set the variable to
# choose otherwise.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
# numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins ~0.1 s of CPU waiting for work
# that never comes (ackreplay makes no BLAS call: no matrix products, no linear algebra). On two cores that is a
# core taken from the decoding and analysis threads that start right after. One BLAS thread: none is started.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# numba is imported by the first command that runs a kernel, not here; then without its optional imports and with
# cached code loaded without the compiler's set-up (``lean_numba``)
lean_numba.install()
