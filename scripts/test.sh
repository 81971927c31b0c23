#!/usr/bin/env bash
# The whole test suite: set-up (venv, Debian packages), lint (ruff), types (mypy), tests (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/system-deps.sh
.venv/bin/ruff check .
.venv/bin/mypy
exec .venv/bin/pytest "$@"
