"""Captures of many flows at tcptrace's speed: ``ackreplay score FILE -f csv`` as a whole process
on four capture shapes, next to ``tcptrace -n -l`` on the same file in the same run, median of ``--repeats``.

Shapes (``bench.make_capture``; written once into bench/out, and each read once before it is timed):

- ``small``: 2 M packets over 100 000 flows, 20 packets each (none bulk: 20 kB, below 64 kB) — target
  ≤ 1× tcptrace, with the peak RSS above the interpreter's within the memory budget;
- ``bulk``: 2 M packets over 10 000 flows, 200 packets each (all bulk: 190 kB) — target ≤ 1.5×;
- ``backbone``: 1 000 000 flows of a random 2–20 packets each, interleaved in time (11 M packets) —
  target ≤ 1×, within the memory budget;
- ``single``: the 6 M-packet single flow (``bench.scale``'s 4 M-segment capture, a loss every 5000 segments) —
  target ≤ 1.2×; and ``ackreplay flows FILE --json`` on it faster than tcptrace (< 1×).

Each repeat runs the commands of a shape back to back (ackreplay, tcptrace, and on the single flow
``flows --json``); times and peak RSS are the medians over the repeats. Peak RSS is also given above the
interpreter's own — the most of three runs of the same command on the 71 kB warm-up capture — which is what
``--memory-budget`` bounds (docs/ingest.md). Outputs go to temporary files, as ``> FILE`` would; the score CSV's
rows are counted (a row per replayed flow and estimator: the small and backbone shapes' flows, without a
handshake and with fewer than 8 RTT samples each, have no vantage the replay accepts, so none is replayed —
as on a real trace of such flows, their time is ingest, classification and output).

Which code runs: ``--tree PATH`` (or ``ACKREPLAY_TREE``) runs ``python -m ackreplay.cli.main`` with this
interpreter, ``PYTHONPATH=PATH`` and PATH as working directory — a checkout or worktree's code, whatever the
installed package points at; without it, the ``ackreplay`` installed next to this interpreter. The tree's
kernels are compiled first (``ackreplay warmup``, untimed). ``--lock FILE`` takes an exclusive lock on FILE
(flock, as ``flock FILE command`` does) around the warm-up and around each repeat of a shape, so that on a
shared machine the timings do not overlap with other jobs that take the same lock.

Usage: ``python -m bench.manyflows [--shapes small,bulk,backbone,single] [--tree PATH] [--repeats 3]
[--budget MB] [--lock FILE] [--save FILE.json]``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.make_capture import ensure, mix_packets
from bench.runner import Run, measure
from bench.scale import cached
from bench.scale import capture as scale_capture

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
EXE = str(Path(sys.executable).with_name("ackreplay"))
BACKBONE = (1_000_000, 2, 20)  # flows, fewest and most packets a flow


@dataclass(frozen=True)
class Shape:
    key: str
    label: str
    make: Callable[[], Path]  # writes the capture if missing; its path
    target: float  # ackreplay score / tcptrace at most
    within_budget: bool  # the target also asks the peak RSS above the interpreter's to fit the budget


def _units(packets: int, flows: int) -> Path:
    path = OUT / f"many-{packets / 1e6:g}M-{flows}f.pcap"
    ensure(path, packets, flows)
    return path


def _backbone() -> Path:
    flows, lo, hi = BACKBONE
    path = OUT / f"backbone-{flows}f-{lo}-{hi}.pcap"
    ensure(path, 0, flows, packets_per_flow=(lo, hi))
    return path


SHAPES = {s.key: s for s in (
    Shape("small", "2 M packets, 100 000 flows (20 packets each, none bulk)", lambda: _units(2_000_000, 100_000),
          1.0, True),
    Shape("bulk", "2 M packets, 10 000 flows (200 packets each, all bulk)", lambda: _units(2_000_000, 10_000),
          1.5, False),
    Shape("backbone", f"{mix_packets(*BACKBONE) / 1e6:.0f} M packets, {BACKBONE[0]:_} flows ({BACKBONE[1]}–"
                      f"{BACKBONE[2]} packets each)".replace("_", " "), _backbone, 1.0, True),
    Shape("single", "6 M packets, 1 flow (bulk, a loss every 5000 segments)", lambda: scale_capture(4, 1),
          1.2, False),
)}
FLOWS_TARGET = 1.0  # ackreplay flows --json on the single flow: faster than tcptrace


@dataclass
class Ackreplay:
    """How to run one tree's ``ackreplay``."""

    tree: Path | None

    def cmd(self, *args: str) -> list[str]:
        head = [sys.executable, "-m", "ackreplay.cli.main"] if self.tree else [EXE]
        return [*head, *args]

    def run(self, *args: str) -> Run:
        env, cwd = self.environment()
        return measure(self.cmd(*args), env=env, cwd=cwd, keep_stdout=False)

    def environment(self) -> tuple[dict[str, str] | None, str | None]:
        """The environment and working directory a command runs with (None: this process's)."""
        if self.tree is None:
            return None, None
        # the tree as working directory too: ``python -m`` puts it first on sys.path
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.tree),
                                                                          os.environ.get("PYTHONPATH")]))}
        return env, str(self.tree)

    def source(self) -> Path:
        """The checkout whose code runs."""
        if self.tree is not None:
            return self.tree
        out = subprocess.run([sys.executable, "-c", "import ackreplay; print(ackreplay.__file__)"], cwd="/",
                             capture_output=True, text=True, check=True).stdout.strip()
        return Path(out).resolve().parents[1]

    def describe(self) -> str:
        src = self.source()
        how = f"--tree {src}" if self.tree else f"{EXE} (installed from {src})"
        try:
            head = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return how
        return f"{how}, commit {head}{' with uncommitted changes' if dirty else ''}"


@contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (none without a path)."""
    if path is None:
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class Row:
    label: str
    tool: str
    target: float
    within_budget: bool
    ours: list[Run] = field(default_factory=list)
    ref: list[Run] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.ours)

    @property
    def rss(self) -> float:
        return statistics.median(r.peak_rss_mb for r in self.ours)

    @property
    def csv_rows(self) -> int | None:
        """Rows of the score CSV (a flow × estimator each; a flow not replayed has none)."""
        return max(0, self.ours[-1].stdout_lines - 1) if self.tool.startswith("score") else None

    @property
    def ref_seconds(self) -> float | None:
        return statistics.median(r.seconds for r in self.ref) if self.ref else None

    @property
    def ref_rss(self) -> float | None:
        return statistics.median(r.peak_rss_mb for r in self.ref) if self.ref else None

    @property
    def ratio(self) -> float | None:
        ref = self.ref_seconds
        return self.seconds / ref if ref else None

    def met(self, floor: float, budget: int) -> bool | None:
        if self.ratio is None:
            return None
        fast = self.ratio < self.target if self.tool == "flows --json" else self.ratio <= self.target
        return fast and (not self.within_budget or self.rss - floor <= budget)

    def target_text(self, budget: int) -> str:
        t = f"< {self.target:g}" if self.tool == "flows --json" else f"≤ {self.target:g}"
        return t + (f", ≤ {budget} MiB above" if self.within_budget else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"of {', '.join(SHAPES)}")
    ap.add_argument("--tree", type=Path, default=os.environ.get("ACKREPLAY_TREE") or None,
                    help="run this checkout's code (python -m ackreplay.cli.main, PYTHONPATH=TREE); default: the "
                         "ackreplay installed next to this interpreter (env ACKREPLAY_TREE)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=int, default=1024, help="--memory-budget for score and flows, MiB")
    ap.add_argument("--lock", type=Path, help="hold an exclusive flock on this file around each timed repeat")
    ap.add_argument("--save", type=Path, help="also write every run's figures to this JSON file")
    args = ap.parse_args()
    unknown = [k for k in args.shapes.split(",") if k not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}: of {', '.join(SHAPES)}")
    shapes = [SHAPES[k] for k in args.shapes.split(",")]
    tree = args.tree.resolve() if args.tree else None
    tool = Ackreplay(tree)
    have_tcptrace = shutil.which("tcptrace") is not None
    OUT.mkdir(parents=True, exist_ok=True)
    budget = ["--memory-budget", str(args.budget)]

    print(f"== captures of many flows: {tool.describe()}")
    print(f"   {time.strftime('%Y-%m-%d %H:%M')}, median of {args.repeats}, memory budget {args.budget} MiB"
          + (f", each repeat under flock {args.lock}" if args.lock else ""))
    paths = {s.key: s.make() for s in shapes}  # written before any timing, each in a child process
    warm = (tree or ROOT) / "cli" / "data" / "warmup.pcap"
    with locked(args.lock):
        tool.run("warmup")  # compiles the tree's kernels if they are not cached
        floor = max(tool.run("score", str(warm), "-f", "csv", *budget).peak_rss_mb for _ in range(3))
    print(f"   the interpreter's own peak RSS (score on {warm.name}): {floor:.0f} MB")
    if not have_tcptrace:
        print("   tcptrace is not installed: no ratios")

    rows: list[Row] = []
    for shape in shapes:
        path = cached(paths[shape.key])
        score = Row(shape.label, "score -f csv", shape.target, shape.within_budget)
        listing = Row(shape.label, "flows --json", FLOWS_TARGET, False) if shape.key == "single" else None
        for _ in range(args.repeats):
            with locked(args.lock):
                score.ours.append(tool.run("score", str(path), "-f", "csv", *budget))
                ref = measure(["tcptrace", "-n", "-l", str(path)], keep_stdout=False) if have_tcptrace else None
                if listing is not None:
                    listing.ours.append(tool.run("flows", str(path), "--json", *budget))
            if ref is not None:
                score.ref.append(ref)
                if listing is not None:
                    listing.ref.append(ref)
        rows += [score, *([listing] if listing else [])]
        size = path.stat().st_size / 1e6
        print(f"   {shape.key}: {path.name} ({size:.0f} MB): score "
              + ", ".join(f"{r.seconds:.2f}" for r in score.ours)
              + (" s; tcptrace " + ", ".join(f"{r.seconds:.2f}" for r in score.ref) + " s" if score.ref else "")
              + ("; flows --json " + ", ".join(f"{r.seconds:.2f}" for r in listing.ours) + " s" if listing else ""),
              flush=True)

    print()
    print("| capture | ackreplay | s | peak RSS MB (above) | CSV rows | tcptrace -n -l s | its RSS MB | ratio | target "
          "| met |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ref_s, ref_rss, ratio, met = row.ref_seconds, row.ref_rss, row.ratio, row.met(floor, args.budget)
        print(f"| {row.label} | {row.tool} | {row.seconds:.2f} | {row.rss:.0f} ({row.rss - floor:.0f}) | "
              f"{'–' if row.csv_rows is None else f'{row.csv_rows:,}'} | "
              f"{'–' if ref_s is None else f'{ref_s:.2f}'} | {'–' if ref_rss is None else f'{ref_rss:.0f}'} | "
              f"{'–' if ratio is None else f'{ratio:.2f}'} | {row.target_text(args.budget)} | "
              f"{'–' if met is None else ('yes' if met else '**no**')} |")

    if args.save:
        doc: dict[str, Any] = {
            "code": tool.describe(), "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "repeats": args.repeats,
            "budget_mib": args.budget, "interpreter_rss_mb": floor,
            "rows": [{"capture": r.label, "ackreplay": r.tool, "target": r.target_text(args.budget),
                      "seconds": [x.seconds for x in r.ours], "peak_rss_mb": [x.peak_rss_mb for x in r.ours],
                      "output_lines": [x.stdout_lines for x in r.ours],
                      "tcptrace_seconds": [x.seconds for x in r.ref],
                      "tcptrace_peak_rss_mb": [x.peak_rss_mb for x in r.ref],
                      "ratio": r.ratio, "met": r.met(floor, args.budget)} for r in rows],
        }
        args.save.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
