"""``ackreplay warmup`` also compiles what only larger captures reach: two-span decoding, the connection
table's growth, the chunked analysis of a connection beyond the memory budget and the merge search of long
flows (else a user's first large capture would sit compiling them without a word). Checked by hand with a
fresh ``NUMBA_CACHE_DIR`` and ``NUMBA_DEBUG_CACHE=1``: after ``warmup``, scoring the 6 M-packet single flow
and the 64- and 4096-flow captures of ``bench.scale`` compiles nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackreplay import kernels as search
from ackreplay.cli.warmup import WARMUP_CAPTURE, _warm_large_capture_paths
from ackreplay.ingest import capture as pipeline
from ackreplay.ingest import demux, fastpath, ingest_capture
from ackreplay.ingest import tcpflow as tf


def test_warmup_reaches_the_chunked_analysis_and_the_merge_search() -> None:
    _warm_large_capture_paths()
    assert pipeline.MIN_ROWS == 1024  # restored
    for kernel in (tf.flow_prepass, tf.flow_start, tf.flow_main, tf.flow_finish, search.search_right_into,
                   fastpath.close_gap, demux.rehash):
        assert kernel.signatures, kernel
    # the warm-up capture does go through the chunked path at that budget: same flows, nothing analysed whole
    pipeline.MIN_ROWS = 64
    try:
        chunked = ingest_capture(WARMUP_CAPTURE, memory_budget=1)
    finally:
        pipeline.MIN_ROWS = 1024
    whole = ingest_capture(WARMUP_CAPTURE, memory_budget=None)
    assert [f.to_dict() for f in chunked.flows] == [f.to_dict() for f in whole.flows]
    assert chunked.stats.spilled and not [w for w in chunked.stats.warnings if "analysed whole" in w]
    assert max(f.packets for f in whole.flows) > 64


def test_warmup_compiles_the_batched_kernels_with_replays_argument_types() -> None:
    """``warmup`` runs every built-in estimator's ``series_batch`` and the batched replay kernels over a
    ``FlowBatch`` of the warm-up capture's flows: read-only columns, as replay passes them."""
    from numba.core import types

    from ackreplay.cli.warmup import _warm_batches
    from ackreplay.estimators.bandwidth import abse, bbr, be, crb, newbr, newreno, rate, tibet, westwood_plus
    from ackreplay.replay import batch_kernels as batch

    _warm_batches()
    for kernel in (be.be_batch, rate.re_batch, crb.crb_batch, abse.abse_batch, tibet.tibet_batch,
                   tibet.tibet_tx_batch, newbr.newbr_batch, westwood_plus.westwood_batch, bbr.bbr_batch,
                   newreno.newreno_batch,
                   batch.score_windows, batch.achieved_rates, batch.time_weights_batch, batch.series_scores_batch,
                   batch.relative_scores_batch, batch.diagnostics_scan):
        offsets = [sig[0] for sig in kernel.signatures]  # (every kernel takes the batch's offsets first)
        assert any(isinstance(a, types.Array) and not a.mutable for a in offsets), kernel


def test_warmup_writes_the_project_bytecode_even_where_python_would_not(tmp_path, monkeypatch) -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set (CI machines, containers) a source checkout would compile every
    module it imports on every run; ``warmup`` writes the bytecode of the project's packages once."""
    import importlib.util
    import sys

    from ackreplay.cli.warmup import _compile_bytecode

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "model.py").write_text("X = 1\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "other.py").write_text("Y = 2\n")
    _compile_bytecode(tmp_path)
    assert Path(importlib.util.cache_from_source(str(tmp_path / "ingest" / "model.py"))).is_file()
    assert not Path(importlib.util.cache_from_source(str(tmp_path / "notes" / "other.py"))).exists()


def test_the_compiling_notice_names_only_kernels_the_command_runs(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``score`` imports ``graphs`` (frame numbers) without running its kernels: a ``graphs`` cache that was never
    made (no ``graph`` or report yet) compiles nothing there, and ``score`` must not say it is compiling."""
    from ackreplay import jitcache
    from ackreplay.cli import warmup
    from ackreplay.jitcache import kernel_mode

    monkeypatch.setattr(kernel_mode, "plain_python", lambda: False)
    monkeypatch.setattr(jitcache, "COLD", {"graphs"})
    monkeypatch.setattr(warmup, "_announced", False)
    warmup.announce_cold(unused=("graphs",))
    assert capsys.readouterr().err == ""
    warmup.announce_cold()
    assert "compiling the ingest and replay kernels" in capsys.readouterr().err
