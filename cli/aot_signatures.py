"""Record the argument types the kernels are called with: ``python -m ackreplay.cli.aot_signatures``.

Runs, with numba's JIT kernels, what ``ackreplay warmup`` runs (every kernel ``score``, ``flows``, ``graph`` and
large captures reach) and ``score -f json`` and ``flows --json`` on captures of several kinds, then writes each
kernel's compiled signatures to ``jitcache/aot_signatures.json`` (``jitcache.aot_build.record``), which the
ahead-of-time build compiles. Run it again when a kernel's arguments change type; a call with types not recorded
runs the JIT kernel (correct, only slower).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Captures of several kinds (sender and receiver side, gzip, pcapng), beyond the warm-up capture.
CAPTURES = ("samples/sample.pcap", "tests/data/limits/bbr_app.pcap.gz", "tests/data/pairs/aloss_rcv.pcap.gz",
            "tests/data/limits/cubic_bulk_rcv.pcap.gz", "tests/data/public/gh-packets__http_espn.pcapng")


def main() -> None:
    os.environ["ACKREPLAY_KERNELS"] = "compiled"
    from ackreplay.cli.main import app
    from ackreplay.cli.warmup import warmup
    from ackreplay.jitcache.aot_build import record

    warmup()
    for capture in (ROOT / c for c in CAPTURES):
        if capture.is_file():
            for args in (["score", "-f", "json", "--allow-vantage", str(capture)], ["flows", "--json", str(capture)]):
                with contextlib.suppress(SystemExit):  # (a command's exit status: the kernels ran)
                    app(args, standalone_mode=False)
    sys.stdout.flush()
    print(f"recorded {record()} signatures", file=sys.stderr)


if __name__ == "__main__":
    main()
