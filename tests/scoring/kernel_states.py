"""The sender kernel's own state beside a testbed capture, and how ``scoring.limits`` compares with it.

A run of ``../shared/testbed/run_scenario_ss.sh`` leaves ``PREFIX.pcap`` (+ ``PREFIX_rcv.pcap``), ``PREFIX.json``
and ``PREFIX.ss.jsonl``: the sender's ``ss -tin`` every ~15 ms on the capture's clock, each sample with
``ss_truth.py``'s per-sample state (``cwnd``, ``pacing``, ``rwnd``, ``sndbuf``, ``app``, ``idle``). The runs kept
in ``tests/data/limits`` carry the data flow's samples trimmed to what is read here (``PREFIX.ss_states.csv``,
:func:`trim`).

The kernel's states as labels (decided here; ``tests/data/limits/README.md``):

* ``cwnd`` → ``cwnd``; ``rwnd`` → ``rwnd``; ``sndbuf`` → ``sndbuf``; ``app`` and ``idle`` → ``app``;
* ``pacing`` (unsent data, both windows open): ``cwnd`` when the data in hand would fill the congestion window
  (``in_flight + notsent/mss ≥ cwnd``: the congestion control, by its window or — BBR — its pacing rate, sets the
  pace), else the state of the flow's next sample that is not ``pacing`` (the data in hand is being pushed out,
  as when a send-buffer limited writer has just refilled: what limited the flow is what the push runs into).

The clocks: the kernel's samples are stamped when the sender was in that state. A sender-side capture sees the
sender's ACKs and data at those times. A receiver-side capture's axis is the receiver's: its ACKs reach the sender
one reverse one-way delay later, and ``limits`` moves its data back by a whole round trip (to the time of the
ACK that released it), so what it labels at time ``t`` is the sender's state at ``t`` + the reverse delay. The
kernel's samples are placed on the receiver's axis by taking that delay off (the run's ``rev_delay_ms``, the
testbed's configured delay; the delayer adds under a millisecond).

Agreement: each label's share of the samples against its share of the labelled time (within 10 points), and
interval by interval — the kernel's label of an interval is the most common among its samples (any of them
on a tie) — the share of the time whose interval agrees (at least 90 %).

``python -m tests.scoring.kernel_states DIR...`` prints the figures for every run in the directories (the
held-out runs are checked with it).
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ackreplay.estimators.inputs import FlowInputs
from ackreplay.ingest import ingest_capture
from ackreplay.scoring.limits import LABELS, FlowLimits, flow_limits

#: The per-sample fields a trimmed state file keeps.
STATE_FIELDS = ("t_ns", "instant_state", "cwnd", "in_flight", "notsent", "mss", "unacked", "snd_wnd", "busy_ms",
                "rwnd_limited_ms", "sndbuf_limited_ms", "app_limited")


@dataclass(frozen=True)
class Agreement:
    run: str
    side: str  # snd | rcv
    interval_share: float  # share of the time whose interval's label is the kernel's
    shares: dict[str, float]  # ours, of the labelled time
    kernel: dict[str, float]  # the kernel's, of the samples in it

    @property
    def worst_points(self) -> float:
        return 100 * max(abs(self.shares[n] - self.kernel[n]) for n in LABELS)

    def line(self) -> str:
        def fmt(d: dict[str, float]) -> str:
            return " ".join(f"{n}={100 * d[n]:3.0f}" for n in LABELS if n != "unknown")
        return (f"{self.run:28s} {self.side}  intervals {100 * self.interval_share:5.1f} %  worst share "
                f"{self.worst_points:4.1f} pts   ours [{fmt(self.shares)}]  kernel [{fmt(self.kernel)}]")


def trim(prefix: Path, out: Path | None = None, flow: int = 0) -> Path:
    """Write the data flow's samples of ``PREFIX.ss.jsonl`` as ``PREFIX.ss_states.csv`` (the fields read here)."""
    out = out or prefix.with_name(prefix.name + ".ss_states.csv")
    with open(prefix.with_name(prefix.name + ".ss.jsonl")) as f, open(out, "w", newline="") as g:
        w = csv.writer(g)
        w.writerow(STATE_FIELDS)
        for line in f:
            r = json.loads(line)
            if r.get("flow") == flow:
                w.writerow([r.get(k) if not isinstance(r.get(k), bool) else int(r[k]) for k in STATE_FIELDS])
    return out


def samples(prefix: Path, flow: int = 0) -> list[dict[str, object]]:
    """The data flow's samples, from the trimmed file or from ``PREFIX.ss.jsonl``."""
    trimmed = prefix.with_name(prefix.name + ".ss_states.csv")
    if trimmed.exists():
        with open(trimmed, newline="") as f:
            return [dict(r) for r in csv.DictReader(f)]
    with open(prefix.with_name(prefix.name + ".ss.jsonl")) as f:
        return [r for r in map(json.loads, f) if r.get("flow") == flow]


def kernel_labels(recs: list[dict[str, object]]) -> list[str]:
    """The kernel's per-sample states as labels (module docstring)."""
    out = [""] * len(recs)
    following = "cwnd"
    for i in range(len(recs) - 1, -1, -1):
        r = recs[i]
        state = str(r["instant_state"])
        if state == "pacing":
            mss = float(r.get("mss") or 1448)  # type: ignore[arg-type]
            fills = float(r["in_flight"]) + float(r["notsent"]) / mss >= float(r.get("cwnd") or 10)  # type: ignore[arg-type]
            out[i] = "cwnd" if fills else following
            continue
        out[i] = following = "app" if state == "idle" else state
    return out


def capture(prefix: Path, side: str) -> Path | None:
    stem = prefix.name + ("" if side == "snd" else "_rcv")
    for suffix in (".pcap.gz", ".pcap"):
        p = prefix.with_name(stem + suffix)
        if p.exists():
            return p
    return None


def run_limits(path: Path, client_port: int = 40001) -> tuple[FlowLimits, float]:
    """``flow_limits`` of the testbed's data flow (client port 40001) in a capture, and the epoch time of the
    flow's time axis' zero."""
    cap = ingest_capture(path)
    s = next(x for x in cap.flows if x.sender.endswith(f":{client_port}"))
    data = cap.flow(s.flow_id)
    inp = FlowInputs.from_frames(data.acks, data.segments, s.mss)
    lim = flow_limits(inp, data.acks["rwnd"].fill_null(-1).to_numpy(), data.acks["sacked"].fill_null(0).to_numpy(),
                      s.vantage_position)
    return lim, float(inp.t_abs[0] - inp.t[0])


def clock_offset(prefix: Path, side: str) -> float:
    """Seconds to take off the kernel's sample times to place them on a side's capture axis (module docstring):
    0 at the sender, the run's reverse one-way delay at the receiver."""
    if side == "snd":
        return 0.0
    with open(prefix.with_suffix(".json")) as f:
        return float(json.load(f)["rev_delay_ms"]) / 1e3


def agreement(prefix: Path, side: str) -> Agreement:
    """How the limits of one side's capture of a run agree with the kernel's states."""
    lim, zero = run_limits(capture(prefix, side))  # type: ignore[arg-type]
    recs = samples(prefix)
    shift = clock_offset(prefix, side)
    ts = np.array([int(r["t_ns"]) / 1e9 - zero - shift for r in recs])  # type: ignore[call-overload]
    theirs = np.array(kernel_labels(recs))
    inside = (ts >= lim.start[0]) & (ts <= lim.end[-1]) if len(lim.start) else np.zeros(len(ts), bool)
    ts, theirs = ts[inside], theirs[inside]
    good = total = 0.0
    lo = 0
    for k in range(len(lim.code)):
        hi = int(np.searchsorted(ts, lim.end[k], side="right" if k == len(lim.code) - 1 else "left"))
        if hi > lo:
            counts = Counter(theirs[lo:hi]).most_common()
            top = {name for name, c in counts if c == counts[0][1]}
            length = lim.end[k] - lim.start[k]
            total += length
            good += length * (LABELS[lim.code[k]] in top)
        lo = hi
    kernel = {n: float(np.mean(theirs == n)) if len(theirs) else 0.0 for n in LABELS}
    return Agreement(prefix.name, side, good / total if total else 0.0, lim.shares, kernel)


def runs(directory: Path) -> list[tuple[Path, str]]:
    """Every (run prefix, side) in a directory: a run is a ``.json`` beside its kernel samples."""
    out = []
    for meta in sorted(directory.glob("*.json")):
        prefix = meta.with_suffix("")
        has_states = (prefix.with_name(prefix.name + ".ss_states.csv").exists()
                      or prefix.with_name(prefix.name + ".ss.jsonl").exists())
        out += [(prefix, side) for side in ("snd", "rcv") if has_states and capture(prefix, side)]
    return out


if __name__ == "__main__":
    for d in sys.argv[1:]:
        for prefix, side in runs(Path(d)):
            print(agreement(prefix, side).line(), flush=True)
