"""The Linux sender's state sampled every 10 ms (tests/data/kernel: the testbed's ``ss -tin`` of the bulk flow) and
the simulation's, stepped on the same clock, cut the same way into loss epochs."""

from __future__ import annotations

import gzip
import json
import math
from functools import cache
from typing import Any, NamedTuple

from ackreplay.sim import layout as L
from ackreplay.sim.engine import run_loop, seed_random
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state
from tests.conftest import ROOT

KERNEL = ROOT / "tests" / "data" / "kernel"
MSS = 1448
STEP_S = 0.01


class Epoch(NamedTuple):
    """A loss epoch: when ssthresh changed, the cwnd just before, the new ssthresh, and the cwnd at the first sample
    after the recovery (None: the next loss came first)."""

    t: float
    before: int
    ssthresh: int
    exit_cwnd: int | None


@cache
def kernel_samples(name: str) -> tuple[dict[str, Any], ...]:
    """A run's samples, each with ``recovering``: SACKed, lost or retransmitted segments outstanding."""
    with gzip.open(KERNEL / f"{name}.ss.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    for r in rows:
        r["recovering"] = bool(r["sacked"] or r["lost"] or r["retrans_out"])
    return tuple(rows)


def truth(name: str) -> dict[str, Any]:
    """The testbed's record of the run (ground truth and counters)."""
    out: dict[str, Any] = json.loads((KERNEL / f"{name}.json").read_text())
    return out


def drop_rate(names: tuple[str, ...]) -> float:
    """The random drops over the data packets that reached the router (dropped there, queued or dropped by the
    bottleneck), pooled over the runs."""
    drops = sum(int(truth(n)["random_loss_drops"][0]) for n in names)
    tbf = [truth(n)["tbf_stats"] for n in names]
    return drops / (drops + sum(int(t["packets"]) + int(t["drops"]) for t in tbf))


def engine_samples(link: Link, flow: FlowSpec, duration_s: float, seed: int) -> tuple[dict[str, Any], ...]:
    """The simulation's sender every STEP_S (the run is deterministic, so the state at t is that of a run ended at
    t): cwnd in whole segments as Linux's, ssthresh, recovering (a recovery or a timeout's), delivered segments."""
    st = build_state(link, [flow], SimConfig(duration_s, mss=MSS, seed=seed))
    seed_random(seed)
    rows = []
    for k in range(1, round(duration_s / STEP_S) + 1):
        st.g[L.END] = k * STEP_S
        run_loop(st)
        fi, fs = st.fi[0], st.fs[0]
        rows.append({"t_s": k * STEP_S, "cwnd": math.floor(fs[L.CWND] + 1e-9),
                     "ssthresh": int(fs[L.SSTHRESH]) if math.isfinite(fs[L.SSTHRESH]) else None,
                     "recovering": bool(fi[L.IN_REC] or fi[L.IN_LOSS]), "delivered": int(fi[L.DELIVERED])})
    return tuple(rows)


def epochs(rows: tuple[dict[str, Any], ...], after_s: float = 1.0) -> list[Epoch]:
    """The loss epochs from ``after_s`` on: each change of ssthresh starts one."""
    out = []
    for i in range(1, len(rows)):
        ss, prev = rows[i]["ssthresh"], rows[i - 1]["ssthresh"]
        if ss is None or ss == prev or rows[i]["t_s"] < after_s:
            continue
        exit_cwnd = None
        for r in rows[i:]:
            if r["ssthresh"] != ss:
                break
            if not r["recovering"]:
                exit_cwnd = int(r["cwnd"])
                break
        out.append(Epoch(rows[i]["t_s"], int(rows[i - 1]["cwnd"]), int(ss), exit_cwnd))
    return out


def mean_cwnd(rows: tuple[dict[str, Any], ...], start_s: float, end_s: float) -> float:
    """The mean of the samples' cwnd over [start_s, end_s]."""
    inside = [r["cwnd"] for r in rows if start_s <= r["t_s"] <= end_s]
    return sum(inside) / len(inside)


def goodput_bps(rows: tuple[dict[str, Any], ...], until_s: float) -> float:
    """The segments delivered by ``until_s`` (the last sample before it) over that time."""
    last = [r for r in rows if r["t_s"] <= until_s][-1]
    return float(last["delivered"] * MSS * 8.0 / last["t_s"])
