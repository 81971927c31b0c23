"""Ingest benchmark: packets/s of ackreplay, of a dpkt reference and of ``tcptrace -l`` on one capture.

Builds (once) a capture of ≥ 3 million packets with ``bench.make_capture``, then runs, each as its own
process so that wall time and peak RSS are the process's own:

* ``ackreplay``: ``ingest_capture`` — decode, demultiplex, per-flow ACK streams, episodes, summaries;
* ``dpkt reference``: ``tests.ingest.reference_decoder.reference_decode`` — dpkt's reader and header classes
  extracting the same per-packet fields (decode only: less work than ackreplay does);
* ``tcptrace -l -n`` (Debian package): per-connection analysis, output discarded.

numba's compiled code is cached on disk by a warm-up run on a small capture first, as it is for any
user after the first run. ackreplay is timed three ways: the process (what a CLI user waits for,
interpreter start and imports included), the ingest call in a fresh process (numba's first dispatch
included), and a worker's steady state (the same process ingesting again: best and median of 7).

Memory: the same capture is ingested again with a 64 MiB budget (packet columns spilled to temporary
files, connections analysed in groups, tables memory-mapped), and with ``--large-packets N`` a second,
larger capture (16.5 M packets make 2 GB) is built and ingested with the default budget (1 GiB):
each prints its peak RSS against the capture's size.

Usage: ``python -m bench.ingest [--packets N] [--capture PATH] [--skip-dpkt] [--large-packets N]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from bench.make_capture import ensure
from bench.runner import Run, measure

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"

ACKREPLAY = (
    "import sys, time; from ackreplay.ingest import ingest_capture; t = time.perf_counter(); "
    "c = ingest_capture(sys.argv[1]); print(c.stats.records, len(c.acks), time.perf_counter() - t)"
)
ACKREPLAY_WARM = (  # a worker's steady state: compiled code loaded (a small capture), the process's memory
    # warmed by two untimed runs (the first runs of a process pay the VM's first touch of fresh pages),
    # then seven timed runs: the best and the median
    "import sys, time, statistics; from ackreplay.ingest import ingest_capture; ingest_capture(sys.argv[2]); ts = []\n"
    "for k in range(9):\n"
    "    t = time.perf_counter(); ingest_capture(sys.argv[1]); ts.append(time.perf_counter() - t)\n"
    "print(min(ts[2:]), statistics.median(ts[2:]))"
)
REPEAT = 3  # process runs of ackreplay and tcptrace: the fastest wall time, the largest peak RSS
BOUNDED = (
    "import sys, time; from ackreplay.ingest import ingest_capture; t = time.perf_counter(); "
    "c = ingest_capture(sys.argv[1], memory_budget=int(sys.argv[2]) << 20); "
    "print(c.stats.connection_groups, int(c.stats.spilled), time.perf_counter() - t)"
)
DPKT = (
    "import sys, time; from tests.ingest.reference_decoder import reference_decode; t = time.perf_counter(); "
    "m, _ = reference_decode(sys.argv[1]); print(len(m), 0, time.perf_counter() - t)"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--packets", type=int, default=3_000_000)
    ap.add_argument("--capture", type=Path, default=None)
    ap.add_argument("--skip-dpkt", action="store_true", help="leave out the slow dpkt reference")
    ap.add_argument("--bounded-mb", type=int, default=64, help="memory budget of the bounded run (MiB)")
    ap.add_argument("--large-packets", type=int, default=0,
                    help="also build a capture of this many packets and ingest it with the default budget")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cap = args.capture or OUT / f"bench-{args.packets}.pcap"
    ensure(cap, args.packets)
    small = OUT / "warmup.pcap"
    ensure(small, 30_000)
    py = sys.executable
    measure([py, "-c", ACKREPLAY, str(small)], cwd=str(ROOT))  # fills numba's on-disk cache

    results: dict[str, Run] = {}
    inner: dict[str, float] = {}
    run = best([py, "-c", ACKREPLAY, str(cap)])
    packets, ack_rows, t_in = run.stdout.split()
    t_warm, t_warm_median = (float(x) for x in
                             measure([py, "-c", ACKREPLAY_WARM, str(cap), str(small)], cwd=str(ROOT)).stdout.split())
    packets_n = int(packets)
    results["ackreplay ingest"] = run
    inner["ackreplay ingest"] = float(t_in)
    if not args.skip_dpkt:
        run = measure([py, "-c", DPKT, str(cap)], cwd=str(ROOT))
        results["dpkt reference (decode only)"] = run
        inner["dpkt reference (decode only)"] = float(run.stdout.split()[2])
    tcptrace = shutil.which("tcptrace")
    if tcptrace:
        results["tcptrace -l"] = best([tcptrace, "-l", "-n", str(cap)])
    else:
        print("tcptrace not installed (Debian package tcptrace): no reference ratio", file=sys.stderr)

    size_mb = cap.stat().st_size / 1e6
    print(f"\ncapture: {cap.name}, {packets_n} packets, {size_mb:.0f} MB; ackreplay made {ack_rows} ACK rows")
    print(f"{'tool':32} {'wall s':>8} {'pkts/s (wall)':>14} {'in-process s':>13} {'peak RSS MB':>12}")
    for name, r in results.items():
        ins = f"{inner[name]:.2f}" if name in inner else "-"
        print(f"{name:32} {r.seconds:8.2f} {packets_n / r.seconds:14,.0f} {ins:>13} {r.peak_rss_mb:12.0f}")
    ours = results["ackreplay ingest"]
    print(f"ackreplay in-process, warm (compiled code loaded, memory warmed; 7 runs in one process): best "
          f"{t_warm:.3f} s ({packets_n / t_warm:,.0f} pkts/s), median {t_warm_median:.3f} s "
          f"({packets_n / t_warm_median:,.0f} pkts/s)")
    for name, r in results.items():
        if name != "ackreplay ingest":
            print(f"ratio ackreplay / {name} (packets/s): {r.seconds / ours.seconds:.2f}x process wall; "
                  f"{r.seconds / inner['ackreplay ingest']:.2f}x in-process first run; "
                  f"{r.seconds / t_warm:.2f}x in-process warm best, {r.seconds / t_warm_median:.2f}x median")
    print(f"ackreplay peak RSS / capture size: {ours.peak_rss_mb / size_mb:.2f} (default budget: held in memory)")

    print("\nbounded memory (packet columns and tables through temporary files, connections in groups):")
    _bounded(py, cap, args.bounded_mb, packets_n)
    if args.large_packets:
        large = OUT / f"bench-{args.large_packets}.pcap"
        ensure(large, args.large_packets)
        _bounded(py, large, 1024, args.large_packets)
        if tcptrace:
            r = measure([tcptrace, "-l", "-n", str(large)])
            print(f"  tcptrace -l on {large.name}: {r.seconds:.2f} s, {args.large_packets / r.seconds:,.0f} pkts/s")


def best(cmd: list[str]) -> Run:
    """The fastest of ``REPEAT`` runs, reporting the largest peak RSS of them."""
    runs = [measure(cmd, cwd=str(ROOT)) for _ in range(REPEAT)]
    fastest = min(runs, key=lambda r: r.seconds)
    return Run(fastest.seconds, max(r.peak_rss_mb for r in runs), fastest.stdout)


def _bounded(py: str, cap: Path, budget_mb: int, packets: int) -> None:
    run = measure([py, "-c", BOUNDED, str(cap), str(budget_mb)], cwd=str(ROOT))
    groups, spilled, t_in = run.stdout.split()
    size_mb = cap.stat().st_size / 1e6
    print(f"  {cap.name} ({size_mb:.0f} MB, {packets} packets), budget {budget_mb} MiB: "
          f"{'spilled' if int(spilled) else 'in memory'}, {groups} connection group(s); "
          f"{run.seconds:.2f} s wall ({float(t_in):.2f} s in-process, {packets / run.seconds:,.0f} pkts/s); "
          f"peak RSS {run.peak_rss_mb:.0f} MB = {run.peak_rss_mb / size_mb:.2f} x the capture")


if __name__ == "__main__":
    main()
