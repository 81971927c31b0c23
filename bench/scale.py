"""Does score time grow with the work and no faster? ``ackreplay score`` on synthetic captures of 1, 4 and
16 M data segments — one long flow with a loss every 5000 segments (a steady bulk transfer), and the
same number of packets spread over 64 and 4096 flows — next to ``tcptrace -l`` on the same files in the
same run; and the start-up of a fresh process on small captures next to tcptrace and tshark.

Printed per capture: wall time and peak RSS of the process (and how far above the interpreter's own — the same
command on a capture of a few packets — which is what the memory budget bounds), time per ACK row, tcptrace's
time and the ratio. Targets: time per ACK at 16 M within 1.2× of 1 M; score of the 6 M-packet single flow
within 1.5× of tcptrace (in-process warm within 0.5×); peak RSS bounded by the memory budget; start-up
≤ 0.8 s. Usage: ``python -m bench.scale [--sizes 1,4,16] [--flows 1,64,4096] [--budget MB]``.
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
EXE = str(Path(sys.executable).with_name("ackreplay"))
LOSS_EVERY = 5000
WARM = (
    "import sys, time; import ackreplay.estimators as E; from ackreplay.ingest import ingest_capture; "
    "from ackreplay.replay.capture import replay_capture; ests = [E.create(n) for n in E.DEFAULT_ORDER]\n"
    "budget = None if sys.argv[2] == 'none' else int(sys.argv[2]) << 20\n"
    "def once():\n t0 = time.perf_counter(); c = ingest_capture(sys.argv[1], memory_budget=budget)\n"
    " t1 = time.perf_counter()\n"
    " replay_capture(c, ests, keep_series=False); return t1 - t0, time.perf_counter() - t1\n"
    "once(); best = min((once() for _ in range(3)), key=sum); print(*best)"
)


def capture(segments_m: float, flows: int) -> Path:
    """A synthetic capture holding ``segments_m`` million data segments (1.5 packets each: two data
    segments and one ACK per unit) over ``flows`` flows."""
    packets = int(segments_m * 1e6 * 3 / 2)
    path = OUT / f"scale-{segments_m:g}M-{flows}f.pcap"
    ensure(path, packets, flows, loss_every=LOSS_EVERY)
    return path


def cached(path: Path) -> Path:
    """Read the file once so that both tools find it in the page cache (a capture just written, or evicted
    by the previous multi-GB run, would otherwise charge a disk read to whichever tool runs first)."""
    with path.open("rb", buffering=0) as f:
        while f.read(1 << 24):
            pass
    return path


def tool(cmd: list[str]) -> Run | None:
    return measure(cmd) if shutil.which(cmd[0]) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1,4,16", help="million data segments per capture")
    ap.add_argument("--flows", default="1,64,4096", help="flows per capture")
    ap.add_argument("--budget", type=int, default=1024, help="ingest memory budget, MiB")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sizes = [float(s) for s in args.sizes.split(",")]
    flow_counts = [int(f) for f in args.flows.split(",")]

    print("== start-up: a fresh process on small captures (median of 5)")
    sample, small = ROOT / "samples" / "sample.pcap", ROOT / "cli" / "data" / "warmup.pcap"
    measure([EXE, "warmup"])
    for label, cmd in ((f"ackreplay score {sample.name}", [EXE, "score", str(sample), "-f", "csv"]),
                       (f"ackreplay flows {small.name}", [EXE, "flows", str(small)]),
                       (f"tcptrace -l {sample.name}", ["tcptrace", "-l", str(sample)]),
                       (f"tshark -z conv,tcp {sample.name}", ["tshark", "-r", str(sample), "-q", "-z", "conv,tcp"])):
        if not shutil.which(cmd[0]) and cmd[0] != EXE:
            print(f"  {label:40} (not installed)")
            continue
        runs = sorted(measure(cmd).seconds for _ in range(5))
        target = "  (target <= 0.8 s)" if cmd[0] == EXE else ""
        print(f"  {label:40} {runs[2]:6.2f} s{target}")

    # the budget bounds the working set above what the interpreter and its libraries hold (ingest.capture):
    # that floor is the peak RSS of the same command on a capture of a few packets
    floor = max(measure([EXE, "score", str(small), "-f", "csv"]).peak_rss_mb for _ in range(3))
    print(f"== score at scale (loss every {LOSS_EVERY} segments; memory budget {args.budget} MiB for the working "
          f"set above the interpreter's {floor:.0f} MB)")
    print(f"  {'capture':28} {'packets':>10} {'ACKs':>10} {'score s':>8} {'RSS MB':>7} {'above':>6} {'ns/ACK':>7} "
          f"{'tcptrace s':>10} {'ratio':>6}")
    per_ack: dict[tuple[float, int], float] = {}
    measured: dict[tuple[float, int], tuple[Run, Run | None]] = {}
    for flows in flow_counts:
        for size in sizes:
            path = cached(capture(size, flows))
            packets = int(size * 1e6 * 3 / 2)
            acks = packets // 3
            run = measure([EXE, "score", str(path), "-f", "csv", "--memory-budget", str(args.budget)])
            ref = tool(["tcptrace", "-l", str(path)])
            per_ack[(size, flows)] = run.seconds / acks
            measured[(size, flows)] = run, ref
            ratio = f"{run.seconds / ref.seconds:6.2f}" if ref else "     –"
            over = "  over budget" if run.peak_rss_mb - floor > args.budget else ""
            print(f"  {path.name:28} {packets:10,} {acks:10,} {run.seconds:8.2f} {run.peak_rss_mb:7.0f} "
                  f"{run.peak_rss_mb - floor:6.0f} {1e9 * run.seconds / acks:7.0f} "
                  f"{ref.seconds if ref else float('nan'):10.2f} {ratio}{over}")
        lo, hi = min(sizes), max(sizes)
        if (lo, flows) in per_ack and (hi, flows) in per_ack and hi > lo:
            growth = per_ack[(hi, flows)] / per_ack[(lo, flows)]
            print(f"  {flows} flow(s): time per ACK at {hi:g} M / at {lo:g} M = {growth:.2f} (target <= 1.2)")

    print("== the 6 M-packet single flow")
    path = cached(capture(4, 1))  # 4 M data segments + 2 M ACKs = 6 M packets
    run, ref = measured.get((4.0, 1)) or (  # the table's row when it has one
        measure([EXE, "score", str(path), "-f", "csv", "--memory-budget", str(args.budget)]),
        tool(["tcptrace", "-l", str(path)]))
    if ref:
        over = "  over budget" if run.peak_rss_mb - floor > args.budget else ""
        print(f"  process: {run.seconds:.2f} s, peak RSS {run.peak_rss_mb:.0f} MB ({run.peak_rss_mb - floor:.0f} above "
              f"the interpreter's), tcptrace -l {ref.seconds:.2f} s: ratio {run.seconds / ref.seconds:.2f} "
              f"(target <= 1.5){over}")
        for budget, where in ((str(args.budget), f"budget {args.budget} MiB: spilled, one connection in chunks"),
                              ("none", "no budget: in memory")):
            ingest_s, replay_s = (float(x) for x in measure([sys.executable, "-c", WARM, str(path), budget],
                                                              cwd=str(ROOT)).stdout.split())
            print(f"  in-process warm, best of 3 ({where}): ingest {ingest_s:.2f} s + replay and scores "
                  f"{replay_s:.2f} s = {ingest_s + replay_s:.2f} s: ratio {(ingest_s + replay_s) / ref.seconds:.2f} "
                  "(target <= 0.5)")


if __name__ == "__main__":
    main()
