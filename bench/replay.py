"""Replay benchmark: ACK updates/s of each estimator, and of all together, on one flow of ≥ 1 M ACKs,
next to a plain-Python implementation of the same estimators measured in the same run.

The plain-Python implementation is the same source with numba switched off (``NUMBA_DISABLE_JIT=1`` in a
child process): every kernel loop then runs in CPython, line for line. It is timed on a prefix of the
stream (``--python-acks``, default 100 000) — its rate per ACK does not depend on the length.
The compiled run is timed after a warm-up call (compilation and cache loading excluded), on one core.
Usage: ``python -m bench.replay [--acks N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def synthetic_flow(n: int, seed: int = 3) -> dict[str, np.ndarray]:
    """A bulk flow's ACK events: ~10 Mbit/s with jitter and bursts, SACK-era RTT, a loss every ~2000 ACKs."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(0.0023, n) + 1e-6
    burst = rng.random(n) < 0.05
    gaps[burst] = rng.uniform(1e-6, 2e-5, burst.sum())  # ACK compression
    t = np.cumsum(gaps)
    d = np.where(rng.random(n) < 0.8, 2896, 1448).astype(np.int64)
    d[rng.random(n) < 0.02] = 0
    rtt = np.where(rng.random(n) < 0.5, 0.04 + rng.gamma(2.0, 0.01, n), np.nan)
    srtt = np.full(n, 0.05)
    rttmin = np.full(n, 0.04)
    flight = rng.integers(20_000, 120_000, n)
    tsval = (t * 1000).astype(np.int64) & 0xFFFFFFFF
    seg_t = np.sort(np.concatenate([t - 0.03, t - 0.0299]))
    seg_len = np.full(len(seg_t), 1448, np.int64)
    return {"t": t, "d": d, "rtt": rtt, "srtt": srtt, "rttmin": rttmin, "flight": flight, "tsval": tsval,
            "seg_t": seg_t, "seg_len": seg_len}


def measure(n: int, repeats: int) -> dict[str, float]:
    import ackreplay.estimators as E
    from ackreplay.estimators.inputs import FlowInputs

    f = synthetic_flow(n)
    inp = FlowInputs.from_arrays(f["t"], f["d"], mss=1448, srtt=f["srtt"], rttmin=f["rttmin"], rtt=f["rtt"],
                                 flight=f["flight"], tsval=f["tsval"])
    inp.seg_t, inp.seg_len = f["seg_t"], f["seg_len"]
    ests = [E.create(name) for name in E.DEFAULT_ORDER]
    for e in ests:  # warm-up: compile or load the kernels
        e.series(FlowInputs.from_arrays(f["t"][:1000], f["d"][:1000], mss=1448, srtt=f["srtt"][:1000],
                                        rttmin=f["rttmin"][:1000], rtt=f["rtt"][:1000], flight=f["flight"][:1000],
                                        tsval=f["tsval"][:1000]))
    out: dict[str, float] = {}
    total = 0.0
    for e in ests:
        best = min(_timed(lambda e=e: e.series(inp)) for _ in range(repeats))
        out[e.name] = best
        total += best
    out["all"] = min(_timed(lambda: [e.series(inp) for e in ests]) for _ in range(repeats))
    return out


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--acks", type=int, default=1_000_000)
    ap.add_argument("--python-acks", type=int, default=100_000)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.acks, 1 if os.environ.get("NUMBA_DISABLE_JIT") == "1" else 5)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    fast = json.loads(subprocess.run([sys.executable, "-m", "bench.replay", "--child", "--acks", str(args.acks)],
                                     env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    slow = json.loads(subprocess.run([sys.executable, "-m", "bench.replay", "--child", "--acks",
                                      str(args.python_acks)], env={**env, "NUMBA_DISABLE_JIT": "1"},
                                     capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    print(f"flow: {args.acks:,} ACK events (plain Python timed on {args.python_acks:,})")
    print(f"{'estimator':15} {'compiled s':>11} {'updates/s':>14} {'python updates/s':>17} {'speed-up':>9}")
    for name in fast:
        rate = args.acks / fast[name]
        prate = args.python_acks / slow[name]
        print(f"{name:15} {fast[name]:11.3f} {rate:14,.0f} {prate:17,.0f} {rate / prate:8.0f}x")
    print(f"all estimators together on {args.acks:,} ACKs: {fast['all']:.3f} s (target < 0.5 s); "
          f"{(args.acks / fast['all']) / (args.python_acks / slow['all']):.0f}x the plain-Python reference "
          "(target >= 50x)")


if __name__ == "__main__":
    main()
