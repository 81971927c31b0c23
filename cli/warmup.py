"""Compiled kernels: ``ackreplay warmup`` compiles them ahead, and a first run says that it is compiling.

numba compiles the ingest and replay kernels at their first call and caches the machine code on disk
(beside the sources, or under ``NUMBA_CACHE_DIR``); after an install or an upgrade that first call takes
about 30–40 s on two cores. ``scripts/setup.sh`` and the Docker image run ``ackreplay warmup`` so that
no user run pays it; any other first run prints one line on stderr instead of sitting silent.

The warm-up capture, ``cli/data/warmup.pcap`` (71 kB), is the first 600 packets of the bundled
``samples/sample.pcap`` (real Linux TCP, two connections, two fast-retransmit loss events): enough to
reach every kernel that ``score`` runs (and the congestion graph's), with ground truth so that the truth
scores compile too. What only larger captures reach — two-span decoding, the connection table's growth, a
connection analysed in chunks beyond the memory budget, the merge search of long flows — is driven on the
same capture with thresholds lowered for the moment (``_warm_large_capture_paths``). It also writes the
project's bytecode, which a source checkout would otherwise compile on every run where
``PYTHONDONTWRITEBYTECODE`` is set (``_compile_bytecode``). With ``--ahead-of-time`` it then builds the extension of
kernels compiled ahead of time (``jitcache.aot_build``) unless it is built for the current sources.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ackreplay.estimators.flow_batch import FlowBatch

WARMUP_CAPTURE = Path(__file__).resolve().parent / "data" / "warmup.pcap"
_announced = False


def announce_cold(*, unused: Collection[str] = ()) -> None:
    """Say once per process, on stderr, that the kernels are compiling (only when they are not cached). A command
    names in ``unused`` the packages it imports but whose kernels it does not run (``score`` without ``--out``:
    ``graphs``, imported for frame numbers): their missing cache compiles nothing, so it is not announced."""
    global _announced
    from ackreplay import jitcache
    from ackreplay.jitcache.kernel_mode import plain_python

    if _announced or not (jitcache.COLD - set(unused)) or plain_python():  # (plain Python compiles nothing)
        return
    _announced = True
    print("ackreplay: compiling the ingest and replay kernels (once after an install or upgrade, about 30–40 s; "
          "`ackreplay warmup` does it ahead)…", file=sys.stderr, flush=True)


def warmup(ahead_of_time: Annotated[bool, typer.Option(
        "--ahead-of-time", help="Also compile the kernels ahead of time (a C compiler is needed; about 2 min): large "
                                "captures then run without loading numba. A failed build is reported in one line and "
                                "the kernels run as JIT.")] = False,
           simulation: Annotated[bool, typer.Option(
        "--simulation", help="Also compile the what-if's simulation engine (about 3 min on 2 cores when nothing is "
                             "cached), which a first `whatif` would otherwise pay.")] = False) -> None:
    """Compile the ingest and replay kernels now and cache them (run once after installing or upgrading)."""
    from ackreplay.jitcache.kernel_mode import ENV, plain_python

    if plain_python():
        print(f"ackreplay: nothing to compile: {ENV}=plain runs the kernels as plain Python")
        return
    from ackreplay import estimators, graphs, ingest, jitcache, path, replay, scoring  # noqa: F401  (their cache guards)
    from ackreplay.core.capture_scoring import build_estimators, score_file
    from ackreplay.scoring.truth import Truth

    cold = sorted(jitcache.COLD)
    t0 = time.perf_counter()
    from ackreplay.graphs.congestion import source_for

    sc = score_file(WARMUP_CAPTURE, build_estimators(["all"], {}), truth=Truth.parse("bottleneck=10Mbit,shared_by=all"),
                    use_sidecar=False)
    for fr in sc.replay.flows:  # the congestion graph's downsampling kernels (report, dashboard, graph)
        source_for(sc.ingest, fr, fr.flow_id).window(px=50)
    _warm_shared_paths(sc.replay.flows)
    _warm_large_capture_paths()
    _warm_batches()
    if simulation:
        _warm_simulation()
    _compile_bytecode()
    what = "compiled and cached" if cold else "already cached; loaded"
    print(f"ackreplay: kernels {what} in {time.perf_counter() - t0:.1f} s", flush=True)
    if ahead_of_time:
        from ackreplay.jitcache.aot_build import ensure

        ensure()


def _warm_shared_paths(flows: list[Any]) -> None:
    """The pooling of flows that share a bottleneck (``PathBatch.merge``, as ``replay.share_paths`` calls it):
    the warm-up capture's flows do not share one, so its flows' path evidence is pooled as one group here."""
    from ackreplay.path.evidence import PathBatch
    from ackreplay.path.inference import infer_batch

    parts = PathBatch.stack([fr.path_parts for fr in flows if fr.path_parts is not None])
    pooled = parts.merge([0, len(parts)])
    infer_batch(parts, pooled, [0] * len(parts))
    infer_batch(pooled)


def capture_batch(cap: Any) -> FlowBatch:
    """Every flow of an ingested capture (``ingest.CaptureIngest``) as one batch, from its ACK and segment
    columns as replay converts them (``numpy_columns``); each flow's rows found by its ``flow_id`` (ingest
    writes both tables in flow order)."""
    import numpy as np

    from ackreplay.estimators.flow_batch import FlowBatch
    from ackreplay.estimators.inputs import ACK_COLUMNS, numpy_columns

    flows = sorted(cap.flows, key=lambda s: s.flow_id)
    fids = np.array([s.flow_id for s in flows], np.int64)

    def bounds(frame: Any) -> np.ndarray:
        ids = frame["flow_id"].to_numpy()
        return np.append(np.searchsorted(ids, fids.astype(ids.dtype)), len(ids)).astype(np.int64)

    return FlowBatch.build(numpy_columns(cap.acks, ACK_COLUMNS), bounds(cap.acks),
                           numpy_columns(cap.segments, ("t_rel", "len", "seq", "tsval")), bounds(cap.segments),
                           [s.mss for s in flows], fids)


def _warm_batches() -> None:
    """The batched kernels (each step of replay one compiled call over many flows), with the argument types replay
    passes them: a ``FlowBatch`` of the warm-up capture's flows (read-only columns), every built-in estimator's
    ``series_batch`` over it, and the batched window, achieved-rate, time-weight, score and diagnostics kernels on
    what those return."""
    import numpy as np

    from ackreplay.core.capture_scoring import build_estimators
    from ackreplay.ingest import ingest_capture
    from ackreplay.replay import batch_kernels as kernels
    from ackreplay.replay.engine import REFERENCE_WINDOW
    from ackreplay.scoring.scores import CONVERGENCE_HOLD, SCRATCH_ROWS, TOLERANCE

    b = capture_batch(ingest_capture(WARMUP_CAPTURE))
    start, end = kernels.score_windows(b.offsets, b.t, b.srtt, b.seg_offsets, b.seg_t)
    achieved = kernels.achieved_rates(b.offsets, b.t, b.acked, REFERENCE_WINDOW)
    w = kernels.time_weights_batch(b.offsets, b.t, start, end)
    for e in build_estimators(["all"], {}):
        est = e.series_batch(b)
        kernels.series_scores_batch(b.offsets, b.t, est, achieved, w, start, TOLERANCE, CONVERGENCE_HOLD,
                                    np.empty((SCRATCH_ROWS, len(b.t))))  # (run_jobs' scratch)
        kernels.relative_scores_batch(b.offsets, b.t, est, achieved, w, start, TOLERANCE, CONVERGENCE_HOLD)
    kernels.diagnostics_scan(b.offsets, b.t, b.d, 3)


#: The project's packages, whose bytecode ``warmup`` writes.
PACKAGES = ("api", "cli", "core", "estimators", "graphs", "ingest", "jitcache", "path", "replay", "scoring", "sim",
            "whatif", "workers")


def _warm_simulation() -> None:
    """The what-if's simulation engine (``ackreplay.sim``): one short run compiles its event loop, which every
    control shares (BBR's included), into numba's cache — cold, about 3 min on a 2-core machine, which a first
    ``whatif`` (CLI, API or dashboard) would otherwise pay (``warmup --simulation``; ``scripts/setup.sh`` asks for
    it)."""
    from ackreplay.sim.model import FlowSpec, Link, SimConfig, simulate

    simulate(Link(10e6, buffer_packets=20), [FlowSpec("cubic", 0.04), FlowSpec("bbr", 0.04, start_s=0.1)],
             SimConfig(0.5))


def _compile_bytecode(root: Path | None = None) -> None:
    """Write the project's bytecode (``__pycache__``) now. An installed wheel has it from pip; a source
    checkout (``pip install -e``) gets it from whichever run imports a module first — except where
    ``PYTHONDONTWRITEBYTECODE`` is set, as on many CI machines and containers: there every command would
    compile each module it imports from source again (~0.05 s of a short command's start-up). A package
    that cannot be written (a read-only install) is left as it is."""
    import compileall

    root = Path(__file__).resolve().parent.parent if root is None else root
    for name in PACKAGES:
        if (root / name).is_dir():
            compileall.compile_dir(root / name, quiet=2)


def _warm_large_capture_paths() -> None:
    """The kernels only large captures reach: a connection beyond the memory budget analysed in chunks (the
    warm-up capture ingested with a tiny budget and, for a moment, blocks of 64 packets), the merge search of
    replay's long flows, the medians that tell the vantage of flows without a handshake (``run_medians``: the
    warm-up capture's flows have theirs), two-span decoding and the connection table's growth
    (:func:`_warm_decoder`)."""
    import numpy as np

    from ackreplay.ingest import capture as pipeline
    from ackreplay.ingest import ingest_capture
    from ackreplay.ingest.vantage import run_medians
    from ackreplay.kernels import MERGE_MIN_KEYS, searchsorted_right

    run_medians(np.arange(3), np.array([3]), np.array([True]))

    saved = pipeline.MIN_ROWS
    pipeline.MIN_ROWS = 64
    try:
        ingest_capture(WARMUP_CAPTURE, memory_budget=1)
    finally:
        pipeline.MIN_ROWS = saved
    keys = np.arange(MERGE_MIN_KEYS, dtype=np.float64)
    searchsorted_right(keys, keys)
    _warm_decoder()


def _warm_decoder() -> None:
    """Batches decoded in two spans on two threads (any chunk of 16 k records or more: ``close_gap``
    joins them) and the connection table's growth (``demux.rehash``): the warm-up capture decoded with a
    split threshold of 2 records, then its table grown once."""
    import numpy as np

    from ackreplay.ingest.columnize import BatchDecoder
    from ackreplay.ingest.decode import REASONS
    from ackreplay.ingest.demux import Demux
    from ackreplay.ingest.packets import PacketStore
    from ackreplay.ingest.records import ScanInfo, iter_records
    from ackreplay.ingest.source import ByteSource

    demux = Demux()
    decoder = BatchDecoder(demux, PacketStore(None, None), np.zeros(len(REASONS), np.int64), 2, split_min_records=2)
    try:
        with ByteSource(WARMUP_CAPTURE) as src:
            for batch in iter_records(src, ScanInfo()):
                decoder.decode(batch, src.compressed_size)
    finally:
        decoder.close()
    demux.grow()

