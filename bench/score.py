"""End-to-end benchmark of the embedded main job: ``ackreplay score`` on a ~300 MB capture.

Generates (once) a capture of ~300 MB with ``bench.make_capture`` and runs ``ackreplay score FILE
--format csv`` as a child process: ingest + replay of every flow through every estimator + scores.
Prints wall time, peak RSS and the phases measured in-process. Usage: ``python -m bench.score``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.make_capture import ensure
from bench.runner import measure

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"

PHASES = (
    "import sys, time; import ackreplay.estimators as E; from ackreplay.ingest import ingest_capture; "
    "from ackreplay.replay.capture import replay_capture; t0 = time.perf_counter(); "
    "c = ingest_capture(sys.argv[1]); "
    "t1 = time.perf_counter(); r = replay_capture(c, [E.create(n) for n in E.DEFAULT_ORDER]); "
    "t2 = time.perf_counter(); print(t1 - t0, t2 - t1, len(c.acks), len(r.flows))"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--packets", type=int, default=2_450_000, help="2.45 M packets ≈ 300 MB at snaplen 128")
    ap.add_argument("--capture", type=Path, default=None)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cap = args.capture or OUT / f"score-{args.packets}.pcap"
    ensure(cap, args.packets)
    exe = str(Path(sys.executable).with_name("ackreplay"))
    measure([exe, "score", str(OUT / "score-warm.pcap") if (OUT / "score-warm.pcap").exists() else str(cap),
             "-f", "csv"])  # warm numba's on-disk cache
    run = measure([exe, "score", str(cap), "--format", "csv"])
    phases = measure([sys.executable, "-c", PHASES, str(cap)], cwd=str(ROOT)).stdout.split()
    size = cap.stat().st_size / 1e6
    rows = run.stdout.count("\n") - 1
    print(f"capture {cap.name}: {size:.0f} MB")
    print(f"ackreplay score (process): {run.seconds:.2f} s wall, peak RSS {run.peak_rss_mb:.0f} MB, "
          f"{rows} score rows")
    print(f"in-process: ingest {float(phases[0]):.2f} s, replay + scores of {phases[3]} flows "
          f"({int(phases[2]):,} ACK rows, 9 estimators) {float(phases[1]):.2f} s")
    print(f"throughput: {size / run.seconds:.0f} MB/s of capture end to end")


if __name__ == "__main__":
    main()
