#!/usr/bin/env bash
# The main job on the bundled sample capture, with the embedded default (no servers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ackreplay score samples/sample.pcap "$@"
