"""The lower bounds of pyproject.toml are true (issue #21): numpy, numba and polars at the oldest versions it
allows (``requirements-oldest.lock``) pass the estimator and ingest tests — the score documents of every
shared capture included, compared by value with the recorded ones.

The slow test builds ``.venv-oldest`` from that lock (once per lock: a stamp keyed by its hash), compiles the
kernels into its own numba cache (two numba versions must not share one) and runs pytest there. It needs the
package registry, like ``scripts/setup.sh``.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_lock import locked

ROOT = Path(__file__).resolve().parents[1]
OLDEST = ROOT / "requirements-oldest.lock"
VENV = ROOT / ".venv-oldest"
BOUNDED = ("numpy", "numba", "polars")


def lower_bounds() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for d in deps:
        m = re.fullmatch(r"(numpy|numba|polars)>=([0-9.]+)", d)
        if m:
            out[m[1]] = m[2]
    return out


def test_the_oldest_lock_pins_the_lower_bounds_of_pyproject() -> None:
    bounds = lower_bounds()
    assert set(bounds) == set(BOUNDED), bounds
    pins = locked(OLDEST)
    for name, low in bounds.items():
        assert pins[name].release[:len(low.split("."))] == tuple(int(x) for x in low.split(".")), \
            f"{name}: pyproject allows >={low}, requirements-oldest.lock has {pins[name]} (bash scripts/lock.sh)"


def _build_venv() -> Path:
    stamp = VENV / (".installed-" + hashlib.sha256(OLDEST.read_bytes() + (ROOT / "pyproject.toml").read_bytes())
                    .hexdigest()[:16])
    python = VENV / "bin" / "python"
    if not stamp.exists():
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(OLDEST),
                        "-e", f"{ROOT}[dev]"], check=True, timeout=1800)
        for old in VENV.glob(".installed-*"):
            old.unlink()
        stamp.touch()
    return python


@pytest.mark.slow
def test_estimator_and_ingest_tests_pass_with_the_oldest_allowed_versions() -> None:
    python = _build_venv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NUMBA_", "VIRTUAL_ENV"))}
    env["NUMBA_CACHE_DIR"] = str(VENV / "numba-cache")
    versions = subprocess.run([str(python), "-c", "import numpy, numba, polars; print(numpy.__version__, "
                               "numba.__version__, polars.__version__)"], env=env, capture_output=True, text=True,
                              check=True).stdout.split()
    pins = locked(OLDEST)
    assert versions == [str(pins[n]) for n in BOUNDED]
    subprocess.run([str(VENV / "bin" / "ackreplay"), "warmup"], env=env, cwd=ROOT, check=True, capture_output=True,
                   timeout=1200)
    run = subprocess.run([str(python), "-m", "pytest", "tests/estimators", "tests/ingest", "-m", "not services",
                          "-q", "-p", "no:cacheprovider"], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=2400)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
