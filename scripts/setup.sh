#!/usr/bin/env bash
# Create .venv and install ackreplay with its development extras, every package at the version of
# requirements.lock (the versions the suite is run with; docs/testing.md says how to refresh it). Idempotent
# and quick when nothing changed (a stamp keyed by the hashes of pyproject.toml and requirements.lock).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "ackreplay needs Python >= 3.11 ($PY is $("$PY" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  # -c: the lock pins every package, direct or not, that the extras bring in; pyproject.toml keeps ranges
  .venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Compile the numba kernels now (cached on disk; about 20 s after an install, 1 s when already cached), so
# that no first run sits compiling; and ahead of time (about 2 min once per change of the kernels' sources,
# nothing when built), so that large captures run without loading numba. A failed ahead-of-time build says so in
# one line on stderr and changes nothing else: the kernels then run as JIT. --simulation compiles the what-if's
# simulation engine too (about 3 min when nothing is cached), which a first what-if would otherwise pay.
.venv/bin/ackreplay warmup --ahead-of-time --simulation >/dev/null
