"""The ``ackreplay`` command line."""

import os

# Polars allocates through its own jemalloc, which keeps freed pages for ten seconds by default; replay
# right after a large ingest then counted them in the process's memory (measured: ~130 MB after a 16 M-segment
# capture). jemalloc reads its options when it starts, before Polars is imported: hand freed pages back at
# once. Every process of the project starts here (the service and the workers too); set the variable to
# choose otherwise.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
