"""A worker process's compiled kernels loaded once when it starts, not by its first task.

numba loads each cached kernel at its first call in a process (about 0.3–0.4 s for those ``score`` reaches). A
Celery worker's pool process would pay that inside its first task: on a capture of 10 000 bulk flows, the first
replay task of each of two workers took 1.3–1.4 s against 1.0–1.1 s for the later ones, and the run waited for
them. :func:`preload_kernels` runs the bundled warm-up capture (the first 600 packets of the sample, the one
``ackreplay warmup`` compiles with) through ingest and replay with every built-in estimator, so that the kernels
the tasks call are in memory before the first task arrives. It only loads what is cached: on a cold cache it
compiles, as the first task would have (``ackreplay warmup`` at install time avoids that).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

log = logging.getLogger("ackreplay.worker")

#: The warm-up capture ``ackreplay warmup`` uses (package data of the command line, read here as a file).
WARMUP_CAPTURE = Path(__file__).parents[1] / "cli" / "data" / "warmup.pcap"


def preload_kernels(capture: Path = WARMUP_CAPTURE) -> float:
    """Ingest and replay ``capture`` with every built-in estimator (the results are dropped); the seconds it
    took. A failure is logged, never raised: the tasks load what they need themselves."""
    from ackreplay.core.capture_scoring import build_estimators, score_file

    t0 = time.perf_counter()
    try:
        score_file(capture, build_estimators(["all"], {}), use_sidecar=False)
    except Exception:
        log.warning("kernels not preloaded from %s (the first task loads them)", capture, exc_info=True)
        return time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    log.info("kernels preloaded in %.2f s", seconds)
    return seconds
