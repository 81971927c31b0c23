"""Fuzzing the readers and decoders: any byte string gives a result or a typed IngestError.

Bounded: hypothesis runs a fixed number of examples (no wall-clock dependence), and the
bounds-checked run ingests a fixed, seeded corpus.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ingest.fuzz_corpus import ingest_bytes, mutate, seeds

CORPUS = seeds()
ROOT = Path(__file__).resolve().parents[2]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(range(len(CORPUS))), rnd=st.randoms(use_true_random=False))
def test_mutated_captures_never_raise_untyped_errors(tmp_path, seed, rnd):
    ingest_bytes(mutate(rnd, CORPUS[seed]), tmp_path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.sampled_from([b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x0a\x0d\x0d\x0a", b"\x1f\x8b"]),
       body=st.binary(max_size=2048))
def test_random_bodies_behind_valid_magic(tmp_path, header, body):
    ingest_bytes(header + body, tmp_path)


def test_compiled_code_stays_in_bounds(tmp_path):
    """The same mutations with numba's bounds checking on: an out-of-range read fails loudly.

    A private cache directory makes numba compile afresh (its on-disk cache would otherwise hand back
    the unchecked machine code).
    """
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tests.ingest.fuzz_corpus", "300"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "300 mutants ingested" in proc.stdout
