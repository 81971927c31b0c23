#!/usr/bin/env bash
# Refresh cli/data/plotly-basic.min.js, the plotly.js the HTML report embeds: the npm package
# plotly.js-basic-dist-min (scatter, bar, pie: all the report draws; MIT licence, its header kept) at the
# plotly.js version the installed `plotly` Python package ships in full (tests/test_cli_output.py checks that
# the two agree). Needs npm; run it after a plotly upgrade in requirements.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
version=$("$PY" - <<'PY'
import pathlib, re, plotly
head = (pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:300]
print(re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head).group(1))
PY
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "plotly.js-basic-dist-min@$version" >/dev/null)
tar -xzf "$tmp/plotly.js-basic-dist-min-$version.tgz" -C "$tmp"
cp "$tmp/package/plotly-basic.min.js" cli/data/plotly-basic.min.js
echo "cli/data/plotly-basic.min.js: plotly.js basic bundle v$version ($(wc -c < cli/data/plotly-basic.min.js) bytes)"
