"""The ns-3 runs of tests/data/ns3/grid.json (testbed/ns3/README.md) re-enacted by the simulation: each
run's path and flows as ``ackreplay.sim`` takes them, and per run the captured flow's bytes delivered, its loss
events and the bottleneck's mean backlog on both sides. ``python -m tests.sim.ns3_scenarios`` prints the
table of docs/whatif.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ackreplay.sim.model import (
    NS3_DELACK_S,
    NS3_MIN_RTO_S,
    NS3_OVERHEAD,
    NS3_PARAMS,
    FlowSpec,
    Link,
    SimConfig,
    simulate,
)
from ackreplay.whatif.runs import RANDOM_LOSS_SEEDS

DATA = Path(__file__).resolve().parents[1] / "data" / "ns3"
GRID = json.loads((DATA / "grid.json").read_text())
RUNS = {r["name"]: r for r in GRID["runs"]}
NAMES = tuple(RUNS)
#: ns-3's ``TcpBbr`` alone at 0.5–2 BDP, without and with 1 % random loss (``regenerate.py --bbr``)
BBR_GRID = json.loads((DATA / "bbr_grid.json").read_text())
BBR_RUNS = {r["name"]: r for r in BBR_GRID["runs"]}
#: A mean backlog below one packet is compared as one packet (a relative error of a fraction of a packet
#: says nothing).
QUEUE_FLOOR = 1.0


@dataclass(frozen=True)
class Compared:
    name: str
    ns3_bytes: float
    sim_bytes: float
    ns3_losses: float
    sim_losses: float
    ns3_queue: float
    sim_queue: float

    @property
    def goodput_ratio(self) -> float:
        return self.sim_bytes / self.ns3_bytes

    @property
    def loss_ratio(self) -> float:
        return self.sim_losses / self.ns3_losses if self.ns3_losses else float("nan")

    @property
    def queue_deviation(self) -> float:
        """|sim − ns-3| of the mean backlog over ns-3's (at least QUEUE_FLOOR packets)."""
        return abs(self.sim_queue - self.ns3_queue) / max(self.ns3_queue, QUEUE_FLOOR)


@cache
def compare(name: str) -> Compared:
    """Run ``name`` of the grid in the simulation (``compare_run``)."""
    return compare_run(GRID, RUNS[name])


@cache
def compare_bbr(name: str) -> Compared:
    """Run ``name`` of BBR's runs in the simulation (``compare_run``)."""
    return compare_run(BBR_GRID, BBR_RUNS[name])


def compare_run(grid: dict[str, Any], run: dict[str, Any]) -> Compared:
    """Run ``run`` of ``grid`` in the simulation: flow i's application starts at ``starts_s[i]``, its data one
    base RTT later (the handshake); the bottleneck holds B + 1 packets waiting (ns-3's device queue holds one
    besides the queue disc's B); both sides count to the applications' end. A run with random loss is one draw
    of the drops on either side: the simulation's figures are the mean over ``RANDOM_LOSS_SEEDS`` seeds, as the
    what-if's self-check takes them (seed 1 alone drops a segment of the first window on every path)."""
    name = run["name"]
    rtt = grid["rtt_ms"] / 1000.0
    rate = float(grid["rate"].removesuffix("Mbps")) * 1e6
    link = Link(rate, buffer_packets=run["buffer_packets"] + 1, loss=run["loss"], overhead_bytes=NS3_OVERHEAD)
    controls = [run["control"]] + ([run["competitor"]] if run["flows"] > 1 else [])
    starts = grid["starts_s"][:len(controls)]
    flows = [FlowSpec(c, rtt, t + rtt, NS3_PARAMS.get(c, {})) for c, t in zip(controls, starts, strict=True)]
    results = [simulate(link, flows, SimConfig(grid["duration_s"], mss=grid["mss"], min_rto_s=NS3_MIN_RTO_S,
                                               delack_timeout_s=NS3_DELACK_S, ns3_ack_counting=True, seed=seed))
               for seed in range(1, 1 + (RANDOM_LOSS_SEEDS if run["loss"] > 0 else 1))]
    return Compared(name, run["rx_bytes"][0], float(np.mean([r.flows[0].delivered_bytes for r in results])),
                    sum(run["loss_events"][0].values()), float(np.mean([r.flows[0].loss_events for r in results])),
                    run["queue_mean_packets"], float(np.mean([r.mean_queue_packets for r in results])))


def medians(names: tuple[str, ...] = NAMES, of: Callable[[str], Compared] = compare) -> tuple[float, float, float]:
    """Median over ``names`` (compared by ``of``) of |goodput ratio − 1|, |loss-event ratio − 1| and the queue
    deviation."""
    rows = [of(n) for n in names]
    return (float(np.median([abs(c.goodput_ratio - 1) for c in rows])),
            float(np.nanmedian([abs(c.loss_ratio - 1) for c in rows])),
            float(np.median([c.queue_deviation for c in rows])))


def table(names: tuple[str, ...] = NAMES, of: Callable[[str], Compared] = compare) -> str:
    rows = ["| run | ns-3 goodput (Mbit/s) | ratio | ns-3 loss events | simulated | ns-3 mean queue (packets) | "
            "simulated |", "|---|---|---|---|---|---|---|"]
    span = GRID["duration_s"] - GRID["starts_s"][0]
    for name in names:
        c = of(name)
        rows.append(f"| {name} | {c.ns3_bytes * 8 / span / 1e6:.3f} | {c.goodput_ratio:.3f} | {c.ns3_losses} | "
                    f"{c.sim_losses:g} | {c.ns3_queue:.1f} | {c.sim_queue:.1f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(tuple(BBR_RUNS), compare_bbr))
    print("BBR medians (goodput, loss events, queue):",
          ", ".join(f"{m:.3f}" for m in medians(tuple(BBR_RUNS), compare_bbr)))
    print(table())
    print("medians (goodput, loss events, queue):", ", ".join(f"{m:.3f}" for m in medians()))
    for alg in dict.fromkeys(r["control"] for r in GRID["runs"]):
        own = tuple(n for n in NAMES if RUNS[n]["control"] == alg)
        print(alg, ", ".join(f"{m:.3f}" for m in medians(own)))
