"""The ns-3 runs of tests/data/ns3 (testbed/ns3/README.md) re-enacted by the simulation: each scenario's path
and flows as ``ackreplay.sim`` takes them, ns-3's goodput (its capture through ingest) and loss events."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ackreplay.ingest import ingest_capture
from ackreplay.sim.model import FlowSpec, Link, SimConfig, simulate

DATA = Path(__file__).resolve().parents[1] / "data" / "ns3"
#: The scenarios' controls the simulation runs (ns-3's TcpHtcp departs from H-TCP, which the loop does not run).
CONTROLS = ("cubic", "bic", "stcp", "hstcp")
SCENARIOS = ("1f_bdp1", "1f_bdp01", "2f_bdp1")
#: ns-3's settings where they differ from the simulation's defaults: RTO floor 1 s (TcpSocketBase MinRto),
#: delayed-ACK timeout 0.2 s (TcpSocket DelAckTimeout), PPP's 2 bytes on the wire, STCP's AIFactor 50.
NS3_MIN_RTO, NS3_DELACK = 1.0, 0.2
NS3_OVERHEAD = 54
NS3_PARAMS = {"stcp": {"ai_count": 50.0}}
#: Flow i's application starts at 0.1 + 0.5·i s; its data one RTT later (the handshake).
FIRST_START, NEXT_START = 0.1, 0.5


@dataclass(frozen=True)
class Compared:
    name: str
    ns3_goodput_bps: float
    sim_goodput_bps: float
    ns3_losses: int
    sim_losses: int

    @property
    def goodput_ratio(self) -> float:
        return self.sim_goodput_bps / self.ns3_goodput_bps

    @property
    def loss_ratio(self) -> float:
        return self.sim_losses / self.ns3_losses


@cache
def compare(alg: str, scenario: str) -> Compared:
    name = f"{alg}_{scenario}"
    doc = json.loads((DATA / f"{name}.ns3.json").read_text())
    rtt = doc["rtt_ms"] / 1000.0
    rate = float(doc["rate"].removesuffix("Mbps")) * 1e6
    # the device queue holds one packet waiting besides the queue disc's B (testbed/ns3/scenario.cc)
    link = Link(rate, buffer_packets=int(doc["buffer_packets"]) + 1, overhead_bytes=NS3_OVERHEAD)
    flows = [FlowSpec(alg, rtt, FIRST_START + rtt, NS3_PARAMS.get(alg, {}))]
    if doc["flows"] > 1:
        flows.append(FlowSpec("newreno", rtt, FIRST_START + NEXT_START + rtt))
    cfg = SimConfig(20.0, mss=int(doc["mss"]), min_rto_s=NS3_MIN_RTO, delack_timeout_s=NS3_DELACK)
    result = simulate(link, flows, cfg)
    cap = ingest_capture(DATA / f"{name}.pcap.gz")
    ns3_flow = max(cap.flows, key=lambda f: f.goodput_bps)
    ours = result.flows[0]
    ns3_losses = sum(1 for x in doc["losses"] if x["flow"] == doc["captured_flow"])
    # ns-3's goodput is over the capture (SYN to FIN, from 0.1 s); the simulation's from the flow's first data
    span_ns3 = 20.0 - FIRST_START
    sim_goodput = ours.delivered_bytes * 8.0 / span_ns3
    return Compared(name, ns3_flow.goodput_bps, sim_goodput, ns3_losses, ours.loss_events)


def table() -> str:
    rows = ["| scenario | ns-3 goodput (Mbit/s) | simulated | ratio | ns-3 loss events | simulated | ratio |",
            "|---|---|---|---|---|---|---|"]
    for alg in CONTROLS:
        for sc in SCENARIOS:
            c = compare(alg, sc)
            rows.append(f"| {c.name} | {c.ns3_goodput_bps / 1e6:.3f} | {c.sim_goodput_bps / 1e6:.3f} | "
                        f"{c.goodput_ratio:.3f} | {c.ns3_losses} | {c.sim_losses} | {c.loss_ratio:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
