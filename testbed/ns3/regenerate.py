"""Regenerate the ns-3 oracle data of ``tests/data/ns3/`` (see README.md beside this file).

Compiles ``scenario.cc`` against the system's ns-3 (Debian ``libns3-dev``, ns-3.37: ``apt-get install
libns3-dev g++ pkg-config``), runs every scenario, and keeps for each: the sender's capture cut to its
headers (gzip) and ``<name>.ns3.json`` with ns-3's own ssthresh at every loss (of both flows of a two-flow
run; the NewReno competitor's capture is kept for ``COMPETITOR_KEPT``), the bottleneck's mean backlog and
the bytes each receiver got. With ``--grid``, the wider grid of ``GRID`` (every control of the simulation,
buffers 0.1–4 BDP, random loss, pairs) as summaries only, in one file ``grid.json``; a run with random loss
there is the mean of ``LOSS_DRAWS`` ns-3 runs (``RngRun`` 1, 2, …). Deterministic: ns-3's default seed (and
those run numbers), so a rerun writes the same files.

    python testbed/ns3/regenerate.py [--out tests/data/ns3] [--only cubic_1f_bdp1 ...] [--grid] [--bbr]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import dpkt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODULES = ("ns3-core", "ns3-network", "ns3-internet", "ns3-point-to-point", "ns3-applications",
           "ns3-traffic-control")
#: ackreplay name → ns-3 TypeId (without ``ns3::``).
ALGORITHMS = {"stcp": "TcpScalable", "hstcp": "TcpHighSpeed", "htcp": "TcpHtcp", "bic": "TcpBic",
              "cubic": "TcpCubic"}
#: scenario → (flows, buffer in BDPs): one flow at B = 1·BDP and 0.1·BDP, and two flows (the second NewReno)
#: at B = 1·BDP.
SCENARIOS = {"1f_bdp1": (1, 1.0), "1f_bdp01": (1, 0.1), "2f_bdp1": (2, 1.0)}
RATE, RTT_MS, DURATION_S = "10Mbps", 60.0, 20.0
#: The grid's controls (ackreplay name → ns-3 TypeId; TcpWestwoodPlus is TcpWestwood with ProtocolType
#: WestwoodPlus, scenario.cc) and scenarios: name → (flows, buffer in BDPs, random loss, second flow's control:
#: None for NewReno, "same" for the flow's own).
GRID_CONTROLS = {"newreno": "TcpNewReno", "westwood_plus": "TcpWestwoodPlus", **ALGORITHMS}
#: ns-3 runs (``RngRun`` 1…) averaged for a grid run with random loss: one run is one draw of the drops, and a
#: 20-s flow's goodput scatters by ±25 % over draws (NewReno at 1 BDP, 0.1 %: 9.4–16.0 MB over run numbers
#: 1–10). The simulation's side is the mean over as many seeds (``ackreplay.whatif.runs.RANDOM_LOSS_SEEDS``).
LOSS_DRAWS = 10
GRID: dict[str, tuple[int, float, float, str | None]] = {
    "1f_bdp01": (1, 0.1, 0.0, None), "1f_bdp025": (1, 0.25, 0.0, None), "1f_bdp05": (1, 0.5, 0.0, None),
    "1f_bdp1": (1, 1.0, 0.0, None), "1f_bdp2": (1, 2.0, 0.0, None), "1f_bdp4": (1, 4.0, 0.0, None),
    "1f_bdp05_loss": (1, 0.5, 1e-3, None), "1f_bdp1_loss": (1, 1.0, 1e-3, None),
    "2f_bdp05": (2, 0.5, 0.0, None), "2f_bdp1": (2, 1.0, 0.0, None), "2f_bdp4": (2, 4.0, 0.0, None),
    "2f_bdp1_same": (2, 1.0, 0.0, "same"), "2f_bdp1_loss": (2, 1.0, 1e-3, None),
}
#: BBR's runs (``--bbr``: ``bbr_grid.json``, the same summaries): ns-3.37's ``TcpBbr`` (BBR v1 after Linux's
#: tcp_bbr.c, on a pacing socket) alone at 0.5, 1 and 2 BDP, without and with 1 % random loss (each the mean of
#: ``LOSS_DRAWS`` runs).
BBR_GRID: dict[str, tuple[int, float, float, str | None]] = {
    "1f_bdp05": (1, 0.5, 0.0, None), "1f_bdp1": (1, 1.0, 0.0, None), "1f_bdp2": (1, 2.0, 0.0, None),
    "1f_bdp05_loss": (1, 0.5, 1e-2, None), "1f_bdp1_loss": (1, 1.0, 1e-2, None), "1f_bdp2_loss": (1, 2.0, 1e-2, None),
}
#: Two-flow runs whose NewReno competitor is kept too (``<name>.newreno.pcap.gz``; its losses are flow 1 of the
#: JSON): one is enough to check replayed ``newreno`` against ns-3's.
COMPETITOR_KEPT = ("cubic_2f_bdp1",)
STATE_RECOVERY, STATE_LOSS = 3, 4  # TcpSocketState::CA_RECOVERY, CA_LOSS
PPP_HEADER = 2
SNAPLEN = 128  # PPP + IP (20) + TCP with options (≤ 60)


def compile_scenario(work: Path) -> Path:
    """g++ against pkg-config's ns-3 (its ``--libs`` name GSL files that only ``libgsl-dev`` ships: the
    library names are given instead, the shared libraries bring their own dependencies)."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs-only-L", *MODULES], check=True, text=True,
                           capture_output=True).stdout.split()
    exe = work / "scenario"
    subprocess.run(["g++", "-O1", "-std=c++17", "-o", str(exe), str(HERE / "scenario.cc"), *flags,
                    *(f"-l{m}" for m in MODULES)], check=True)
    return exe


def headers_only(src: Path, dst: Path) -> None:
    """The capture with every record cut after its TCP header (PPP + IP + TCP; each record keeps its original
    length), gzip-compressed: a few hundred kB instead of tens of MB."""
    with src.open("rb") as f, dst.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9,
                                                                      mtime=0) as g:
        reader = dpkt.pcap.Reader(f)
        g.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, reader.datalink()))
        for ts, buf in reader:
            ip = buf[PPP_HEADER:]
            ihl = (ip[0] & 0x0F) * 4
            keep = PPP_HEADER + ihl + ((ip[ihl + 12] >> 4) * 4 if len(ip) > ihl + 12 else 0)
            sec, usec = divmod(round(ts * 1e6), 1_000_000)
            g.write(struct.pack("<IIII", sec, usec, keep, len(buf)) + buf[:keep])


def losses(trace: Path) -> tuple[dict[str, str], list[dict[str, object]]]:
    """The scenario line and one entry per loss row of the trace."""
    lines = trace.read_text().splitlines()
    meta = dict(kv.split("=", 1) for kv in lines[0].lstrip("# ").split())
    out: list[dict[str, object]] = []
    for line in lines[2:]:
        t_ns, what, flow, kind, ssthresh, cwnd, inflight, _ = line.split(",")
        if what != "loss":
            continue
        out.append({"t": int(t_ns) / 1e9, "flow": int(flow),
                    "kind": "timeout" if int(kind) == STATE_LOSS else "fast_retransmit",
                    "ssthresh_bytes": int(ssthresh), "cwnd_bytes": int(cwnd), "inflight_bytes": int(inflight)})
    return meta, out


def summary(path: Path) -> dict[str, float]:
    """scenario.cc's ``.summary``: the bottleneck's mean backlog, each receiver's bytes, the random drops."""
    pairs = (line.split("=", 1) for line in path.read_text().split())
    return {k: float(v) for k, v in pairs}


def simulate_ns3(exe: Path, prefix: Path, cc: str, flows: int, buffer_bdp: float, loss: float = 0.0,
                 cc1: str = "TcpNewReno", rng_run: int = 1) -> None:
    extra = [f"--loss={loss}", f"--cc1={cc1}"] if loss > 0 or cc1 != "TcpNewReno" else []
    extra += [f"--RngRun={rng_run}"] if rng_run != 1 else []
    subprocess.run([str(exe), f"--cc={cc}", f"--prefix={prefix}", f"--rate={RATE}", f"--rtt={RTT_MS}",
                    f"--buffer={buffer_bdp}", f"--duration={DURATION_S}", f"--flows={flows}", *extra], check=True)


def run(exe: Path, name: str, cc: str, flows: int, buffer_bdp: float, work: Path, out: Path) -> None:
    prefix = work / name
    simulate_ns3(exe, prefix, cc, flows, buffer_bdp)
    headers_only(Path(f"{prefix}-0-1.pcap"), out / f"{name}.pcap.gz")  # sender 0 (node 0, device 1)
    if name in COMPETITOR_KEPT:  # the NewReno sender's side too (node 1, device 1)
        headers_only(Path(f"{prefix}-1-1.pcap"), out / f"{name}.newreno.pcap.gz")
    meta, events = losses(Path(f"{prefix}.trace.csv"))
    doc = {"simulator": "ns-3.37 (Debian libns3-dev)", "scenario": "testbed/ns3/scenario.cc", "cc": cc,
           "rate": meta["rate"], "rtt_ms": float(meta["rtt_ms"]), "buffer_bdp": float(meta["buffer_bdp"]),
           "buffer_packets": int(meta["buffer_packets"]), "flows": flows, "mss": int(meta["mss"]),
           "captured_flow": 0, "competitor": "TcpNewReno" if flows > 1 else None, "losses": events,
           **_link_figures(Path(f"{prefix}.summary"), flows)}
    (out / f"{name}.ns3.json").write_text(json.dumps(doc, indent=1) + "\n")


def _link_figures(path: Path, flows: int) -> dict[str, object]:
    queue, rx, drops = link_figures(path, flows)
    return {"queue_mean_packets": round(queue, 4), "rx_bytes": rx, "random_drops": drops}


def link_figures(path: Path, flows: int) -> tuple[float, list[int], int]:
    """A run's summary file: the bottleneck's mean backlog (packets), each receiver's bytes, the random drops."""
    figures = summary(path)
    return (figures["queue_mean_packets"], [int(figures[f"rx_bytes_{i}"]) for i in range(flows)],
            int(figures["random_drops"]))


@dataclass(frozen=True)
class Draw:
    """One ns-3 run of a grid scenario: the buffer in packets, each flow's loss events up to the applications'
    end (entries into recovery, timeouts; the trace runs 0.5 s longer), the mean backlog, each receiver's bytes
    and the packets dropped at random."""
    buffer_packets: int
    loss_events: list[dict[str, int]]
    queue_mean_packets: float
    rx_bytes: list[int]
    random_drops: int


def grid_draw(exe: Path, prefix: Path, cc: str, scenario: tuple[int, float, float, str | None],
              rng_run: int) -> Draw:
    flows, buffer_bdp, loss, other = scenario
    simulate_ns3(exe, prefix, cc, flows, buffer_bdp, loss, cc if other == "same" else "TcpNewReno", rng_run)
    meta, events = losses(Path(f"{prefix}.trace.csv"))
    within = [e for e in events if float(str(e["t"])) <= DURATION_S]
    counts = [{kind: sum(1 for e in within if e["flow"] == i and e["kind"] == kind)
               for kind in ("fast_retransmit", "timeout")} for i in range(flows)]
    return Draw(int(meta["buffer_packets"]), counts, *link_figures(Path(f"{prefix}.summary"), flows))


def mean_of_draws(draws: list[Draw]) -> dict[str, object]:
    """The grid's figures of a run: one draw's as they are; several draws' means (loss events and bytes as
    floats), with each draw's receivers' bytes kept under ``rx_bytes_draws``."""
    n, flows = len(draws), range(len(draws[0].rx_bytes))
    doc: dict[str, object] = {
        "loss_events": [{kind: sum(d.loss_events[i][kind] for d in draws) / n for kind in draws[0].loss_events[i]}
                        for i in flows],
        "queue_mean_packets": round(sum(d.queue_mean_packets for d in draws) / n, 4),
        "rx_bytes": [sum(d.rx_bytes[i] for d in draws) / n for i in flows],
        "random_drops": sum(d.random_drops for d in draws) / n}
    if n == 1:  # as integers, as one run counts them
        return {**doc, "loss_events": draws[0].loss_events, "rx_bytes": draws[0].rx_bytes,
                "random_drops": draws[0].random_drops}
    return {**doc, "ns3_runs": n, "rx_bytes_draws": [d.rx_bytes for d in draws]}


def run_grid(exe: Path, work: Path, out: Path, controls: dict[str, str] = GRID_CONTROLS,
             grid: dict[str, tuple[int, float, float, str | None]] = GRID, name: str = "grid.json") -> None:
    """Every control of ``controls`` in every scenario of ``grid``: per run the settings and the figures of
    ``grid_draw`` — with random loss the mean of ``LOSS_DRAWS`` runs (``mean_of_draws``)."""
    runs = []
    for alg, cc in controls.items():
        for scen, scenario in grid.items():
            flows, buffer_bdp, loss, other = scenario
            draws = [grid_draw(exe, work / f"grid_{alg}_{scen}_{k}", cc, scenario, k)
                     for k in range(1, 1 + (LOSS_DRAWS if loss > 0 else 1))]
            runs.append({"name": f"{alg}_{scen}", "control": alg, "competitor": None if flows == 1 else
                         (alg if other == "same" else "newreno"), "flows": flows, "buffer_bdp": buffer_bdp,
                         "buffer_packets": draws[0].buffer_packets, "loss": loss, **mean_of_draws(draws)})
            print(f"ran {alg}_{scen}")
    doc = {"simulator": "ns-3.37 (Debian libns3-dev)", "scenario": "testbed/ns3/scenario.cc", "rate": RATE,
           "rtt_ms": RTT_MS, "duration_s": DURATION_S, "mss": 1448, "starts_s": [0.1, 0.6], "runs": runs}
    (out / name).write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "ns3")
    ap.add_argument("--only", nargs="*", help="scenario names, e.g. cubic_1f_bdp1")
    ap.add_argument("--grid", action="store_true", help="run the summary grid (grid.json) instead")
    ap.add_argument("--bbr", action="store_true", help="run BBR's summaries (bbr_grid.json) instead")
    ap.add_argument("--exe", type=Path, help="a scenario.cc already compiled (else compiled here)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ackreplay-ns3-"))
    try:
        exe = args.exe or compile_scenario(work)
        if args.grid:
            run_grid(exe, work, args.out)
            return
        if args.bbr:
            run_grid(exe, work, args.out, {"bbr": "TcpBbr"}, BBR_GRID, "bbr_grid.json")
            return
        for alg, cc in ALGORITHMS.items():
            for scen, (flows, buffer_bdp) in SCENARIOS.items():
                name = f"{alg}_{scen}"
                if not args.only or name in args.only:
                    run(exe, name, cc, flows, buffer_bdp, work, args.out)
                    print(f"wrote {args.out / name}.pcap.gz, .ns3.json")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
