#!/usr/bin/env bash
# Refresh the lock files (docs/testing.md#the-lock) with uv, for CPython 3.11 on x86-64 Linux:
#   requirements.lock         the newest versions pyproject.toml allows: what setup.sh, CI and the image install
#   requirements-oldest.lock  numpy, numba and polars at the lowest versions pyproject.toml allows (and the rest
#                             resolved around them): tests/test_oldest_versions.py runs the estimator and ingest
#                             tests in it, so the lower bounds stay true
# Then run `bash scripts/test.sh` (it reinstalls .venv from the new lock) and commit the locks with the results.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
command -v "$UV" >/dev/null || { echo "scripts/lock.sh needs uv (pip install uv)" >&2; exit 1; }
args=(pyproject.toml --extra dev --extra s3 --extra pandas --python-version 3.11
      --python-platform x86_64-unknown-linux-gnu --custom-compile-command "bash scripts/lock.sh" -q)
"$UV" pip compile "${args[@]}" --upgrade -o requirements.lock
bounds=$(mktemp)
trap 'rm -f "$bounds"' EXIT
# numpy>=1.26 → numpy==1.26 for the three packages whose lower bounds are tested
python3 - "$bounds" <<'PY'
import re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
pins = [re.sub(r">=", "==", d) for d in deps if re.match(r"(numpy|numba|polars)>=", d)]
open(sys.argv[1], "w").write("\n".join(pins) + "\n")
PY
"$UV" pip compile "${args[@]}" --upgrade -c "$bounds" -o requirements-oldest.lock
