"""Do light commands start at once, and do large captures stay at tcptrace's speed? Whole-process wall times of
``ackreplay`` commands (median of ``--repeats``), next to ``python -c pass`` (the interpreter's own start, the floor)
and to ``tcptrace -n -l`` on the same file in the same run.

Start-up rows (targets of issue #36): ``--help``, ``estimators`` and ``model --buffer-bdp 1`` (no capture) within
0.2 s; ``flows`` and ``score`` on a capture of fewer than 1 000 packets (``cli/data/warmup.pcap``, 600 packets)
within 0.4 s; ``graph`` of it (an SVG) within 1 s. Large rows: captures of a million packets or more, written by
``bench.make_capture`` into a temporary folder (``--out DIR`` keeps them for the next run), ``score -f json`` and
``flows --json`` on each at most tcptrace's time (ratio ≤ 1): ``single``, one bulk flow of 2 M data segments
(3 M packets with its ACKs, a loss every 5000 segments; bench.scale's shape), and ``units``, 1 M packets over
64 bulk flows (bench.make_capture's default shape). Outputs go to temporary files, as ``> FILE`` would.

Which code runs: ``--tree PATH`` (or ``ACKREPLAY_TREE``) runs ``python -m ackreplay.cli.main`` with this
interpreter and ``PYTHONPATH=PATH``; without it, the ``ackreplay`` installed next to this interpreter. The kernels
are compiled first (``ackreplay warmup --ahead-of-time``, untimed: JIT-cached and built ahead of time;
``--no-ahead-of-time`` for a tree without that build). Each command runs once more, untimed, with Python's import
log, which tells whether it imported numba (the table's last column). ``--lock FILE`` holds an exclusive flock on
FILE around each command's repeats (as ``flock FILE command``), so that timings do not overlap other jobs that take
the same lock.

Usage: ``python -m bench.startup [--tree PATH] [--repeats 3] [--large single,units] [--out DIR] [--lock FILE]
[--no-ahead-of-time]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.make_capture import ensure
from bench.manyflows import Ackreplay, locked
from bench.runner import Run, measure
from bench.scale import LOSS_EVERY, cached

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "cli" / "data" / "warmup.pcap"
#: The large shapes: key → (label, packets, flows).
LARGE = {
    "single": ("2 M data segments, 1 flow (3 M packets)", 3_000_000, 1),
    "units": ("1 M packets, 64 flows", 1_000_000, 64),
}


@dataclass
class Row:
    """One command's runs, tcptrace's on the same file, and the target."""

    label: str
    limit: float
    relative: bool  # the limit is a ratio to tcptrace's time (else seconds)
    ours: list[float]
    ref: list[float]
    numba: bool | None = None  # whether the command imported numba (None: not checked)

    @property
    def seconds(self) -> float:
        return statistics.median(self.ours)

    @property
    def ref_seconds(self) -> float | None:
        return statistics.median(self.ref) if self.ref else None

    @property
    def ratio(self) -> float | None:
        ref = self.ref_seconds
        return self.seconds / ref if ref else None

    def met(self) -> bool | None:
        if not self.relative:
            return self.seconds <= self.limit
        return None if self.ratio is None else self.ratio <= self.limit

    def target(self) -> str:
        return f"≤ {self.limit:g}× tcptrace" if self.relative else f"≤ {self.limit:g} s"


def timed(run: Callable[[], Run], repeats: int, lock: Path | None) -> list[float]:
    with locked(lock):
        return [run().seconds for _ in range(repeats)]


def imports_numba(tool: Ackreplay, *args: str) -> bool:
    """Whether ``ackreplay ARGS`` imports numba: one untimed run with Python's import log
    (``PYTHONPROFILEIMPORTTIME``, every module imported, on stderr)."""
    env, cwd = tool.environment()
    env = {**(os.environ if env is None else env), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(tool.cmd(*args), env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=True)
    return any(line.rsplit("|", 1)[-1].strip() == "numba" for line in done.stderr.splitlines()
               if line.startswith("import time:"))


def tcptrace_times(path: Path | None, repeats: int, lock: Path | None) -> list[float]:
    if path is None or shutil.which("tcptrace") is None:
        return []
    return timed(partial(measure, ["tcptrace", "-n", "-l", str(path)], keep_stdout=False), repeats, lock)


def startup_rows(tool: Ackreplay, out: Path, repeats: int, lock: Path | None) -> list[Row]:
    """The light commands and the small capture's commands."""
    svg = str(out / "graph.svg")
    small = str(SMALL)
    commands: list[tuple[str, tuple[str, ...], float, bool]] = [
        ("--help", ("--help",), 0.2, False), ("estimators", ("estimators",), 0.2, False),
        ("model --buffer-bdp 1", ("model", "--buffer-bdp", "1"), 0.2, False),
        (f"flows {SMALL.name}", ("flows", small), 0.4, True), (f"score {SMALL.name}", ("score", small), 0.4, True),
        (f"graph {SMALL.name} -o x.svg", ("graph", small, "-o", svg), 1.0, True),
    ]
    rows = []
    ref = tcptrace_times(SMALL, repeats, lock)
    for label, args, limit, on_capture in commands:
        ours = timed(partial(tool.run, *args), repeats, lock)
        rows.append(Row(label, limit, False, ours, ref if on_capture else [], imports_numba(tool, *args)))
    return rows


def large_rows(tool: Ackreplay, keys: list[str], out: Path, repeats: int, lock: Path | None) -> list[Row]:
    """``score -f json`` and ``flows --json`` on each large shape, next to tcptrace."""
    rows = []
    for key in keys:
        label, packets, flows = LARGE[key]
        path = out / f"startup-{key}-{packets}p-{flows}f.pcap"
        ensure(path, packets, flows, loss_every=LOSS_EVERY)
        cached(path)
        ref = tcptrace_times(path, repeats, lock)
        for args in (("score", "-f", "json"), ("flows", "--json")):
            command = (args[0], str(path), *args[1:])
            ours = timed(partial(tool.run, *command), repeats, lock)
            rows.append(Row(f"{' '.join(args)} — {label}, {path.stat().st_size / 1e6:.0f} MB", 1.0, True, ours, ref,
                            imports_numba(tool, *command)))
        print(f"   {key}: done", file=sys.stderr, flush=True)
    return rows


def table(rows: list[Row], floor: float) -> str:
    lines = ["| command | s (median) | above `python -c pass` | tcptrace -n -l s | ratio | target | met | numba |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ref, ratio, met = r.ref_seconds, r.ratio, r.met()
        lines.append(f"| `{r.label}` | {r.seconds:.2f} | {r.seconds - floor:.2f} | "
                     f"{'–' if ref is None else f'{ref:.3f}'} | {'–' if ratio is None else f'{ratio:.3g}'} | "
                     f"{r.target()} | {'–' if met is None else 'met' if met else '**not met**'} | "
                     f"{'–' if r.numba is None else 'imported' if r.numba else 'not imported'} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, default=os.environ.get("ACKREPLAY_TREE") or None,
                    help="run this checkout's code (python -m ackreplay.cli.main, PYTHONPATH=TREE)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large", default=",".join(LARGE), help=f"large shapes, of {', '.join(LARGE)} ('' for none)")
    ap.add_argument("--out", type=Path, help="write (and reuse) the large captures here; default: a temporary folder")
    ap.add_argument("--lock", type=Path, help="hold an exclusive flock on this file around each command's repeats")
    ap.add_argument("--no-ahead-of-time", dest="ahead_of_time", action="store_false",
                    help="warm up without building the kernels ahead of time (a tree that has no such build)")
    args = ap.parse_args()
    keys = [k for k in args.large.split(",") if k]
    if unknown := [k for k in keys if k not in LARGE]:
        ap.error(f"unknown shape(s) {', '.join(unknown)}: of {', '.join(LARGE)}")
    tool = Ackreplay(args.tree.resolve() if args.tree else None)
    with tempfile.TemporaryDirectory(prefix="ackreplay-startup-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        print(f"== start-up: {tool.describe()}")
        print(f"   {time.strftime('%Y-%m-%d %H:%M')}, median of {args.repeats}"
              + (f", each command's repeats under flock {args.lock}" if args.lock else ""))
        with locked(args.lock):
            tool.run("warmup", *(("--ahead-of-time",) if args.ahead_of_time else ()))  # (if not cached or built)
        floor = statistics.median(timed(partial(measure, [sys.executable, "-c", "pass"]), args.repeats, args.lock))
        print(f"   floor, python -c pass: {floor:.3f} s", flush=True)
        rows = startup_rows(tool, out, args.repeats, args.lock) + large_rows(tool, keys, out, args.repeats, args.lock)
    print()
    print(table(rows, floor))


if __name__ == "__main__":
    main()
