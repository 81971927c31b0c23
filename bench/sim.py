"""What-if simulation benchmark: simulated packet events per second (data arrivals, ACK arrivals, timers) of each
control on one bulk flow of 60 s at 100 Mbit/s (RTT 40 ms, buffer 1 BDP, 0.01 % random loss), next to the same
engine in plain Python (numba off, ``NUMBA_DISABLE_JIT=1`` in a child process) on a prefix of the run.

The compiled runs are timed after a warm-up run of each control (compilation and cache loading excluded), on one
core, best of ``--repeat``. Target: ≥ 5 M events/s. Usage: ``python -m bench.sim [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATE, RTT, WIRE = 100e6, 0.04, 1500
TARGET = 5e6


def measure(seconds: float, repeat: int) -> dict[str, tuple[int, float]]:
    """Each control's events and best wall time on a flow of ``seconds`` simulated seconds."""
    from ackreplay.sim.model import CONTROLS, FlowSpec, Link, SimConfig, simulate

    link = Link(RATE, buffer_packets=round(RATE * RTT / 8 / WIRE), loss=1e-4)
    out = {}
    for name in CONTROLS:
        flows = [FlowSpec(name, RTT)]
        simulate(link, flows, SimConfig(0.5))  # warm-up: compile or load the cache
        best, events = float("inf"), 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            events = simulate(link, flows, SimConfig(seconds)).events
            best = min(best, time.perf_counter() - t0)
        out[name] = (events, best)
    return out


def _child(seconds: float, repeat: int, python: bool) -> dict[str, list[float]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if python:
        env["NUMBA_DISABLE_JIT"] = "1"
    run = subprocess.run([sys.executable, "-m", "bench.sim", "--child", "--seconds", str(seconds), "--repeat",
                          str(repeat)], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(run.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds of the compiled runs")
    parser.add_argument("--python-seconds", type=float, default=1.0, help="simulated seconds in plain Python")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.seconds, args.repeat)))
        return
    fast = _child(args.seconds, args.repeat, False)
    slow = _child(args.python_seconds, 1, True)
    print(f"one flow, {args.seconds:g} s at {RATE / 1e6:g} Mbit/s, RTT {RTT * 1e3:g} ms, buffer 1 BDP "
          f"(plain Python on {args.python_seconds:g} s)")
    print(f"{'control':14} {'events':>11} {'compiled s':>11} {'events/s':>12} {'python events/s':>16} "
          f"{'speed-up':>9} {'target':>7}")
    for name, (events, secs) in fast.items():
        rate = events / secs
        p_events, p_secs = slow[name]
        prate = p_events / p_secs
        print(f"{name:14} {events:11,} {secs:11.3f} {rate:12,.0f} {prate:16,.0f} {rate / prate:8.0f}x "
              f"{'met' if rate >= TARGET else 'missed':>7}")


if __name__ == "__main__":
    main()
