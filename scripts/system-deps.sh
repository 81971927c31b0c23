#!/usr/bin/env bash
# Install the Debian packages the test suite and benchmarks use, when missing:
# PostgreSQL and Redis servers (started by the test harness on 127.0.0.1), and tshark and tcptrace
# (the reference tools ingest is checked against), chromium (the dashboard tests drive it with Playwright), and a C
# compiler (the ahead-of-time kernels' tests).
set -euo pipefail
need=()
have_pg() { command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }
have_pg || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
command -v tshark >/dev/null || need+=(tshark)
command -v tcptrace >/dev/null || need+=(tcptrace)
command -v chromium >/dev/null || need+=(chromium)
# a C compiler and the C library's headers: the tests build the ahead-of-time kernels (jitcache.aot_build, numba's
# pycc); the product itself runs without them (the kernels then compile with numba's JIT)
command -v gcc >/dev/null || need+=(gcc)
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "missing Debian packages: ${need[*]} (run as root or install them)" >&2; exit 1
  fi
fi
echo "installing Debian packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
