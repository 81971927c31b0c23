"""The path's ``confidence`` calibrated on every capture with a known path (ESTIMATORS.md §9): the shared
testbed captures, ``tests/data`` ``pairs``, ``paths``, ``testbed``, ``limits`` (their testbed JSON) and
``ns3`` (the simulator's JSON). Every path a score document shows — each replayed flow's and each group's —
is compared, figure by figure, with the truth within the §9 tolerances; the hit rate per (figure, grade)
must reach :data:`BOUNDS`. ``python -m tests.estimators.path_calibration`` prints the table and writes it
into ``docs/path-calibration.md``.

Truth: the configured bottleneck rate (capacity within 10 %); the base RTT between the configured delays'
sum and the idle ping minimum (within 3 % outside that range; ns-3: the configured RTT); buffer/BDP the
router's queue limit over the BDP (within 25 %); the random-loss rate the router's realised drops per data
transmission (:func:`realised_random_loss`; within 30 %; where the path drops nothing at random, at most 0.1 % of
the segments).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import ackreplay.estimators as E
from ackreplay.ingest import ingest_capture
from ackreplay.replay.capture import replay_capture
from tests.conftest import ROOT, SHARED

DATA = ROOT / "tests" / "data"
DOC = ROOT / "docs" / "path-calibration.md"
FIGURES = ("capacity_bps", "base_rtt_s", "buffer_over_bdp", "random_loss_rate")
TOLERANCE = {"capacity_bps": 0.10, "base_rtt_s": 0.03, "buffer_over_bdp": 0.25, "random_loss_rate": 0.30}
#: Where the path drops nothing at random, a random-loss rate up to this is a hit.
NO_LOSS = 0.001
#: The least hit rate of a figure labelled with each grade.
BOUNDS = {"high": 0.95, "medium": 0.80}
SUFFIXES = (".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz")


def truth_captures() -> list[tuple[Path, Path]]:
    """(capture, its truth JSON) for every capture with a known path."""
    out: list[tuple[Path, Path]] = []
    for folder in (SHARED / "generated", DATA / "pairs", DATA / "paths", DATA / "testbed", DATA / "limits"):
        for meta in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            out += [(c, meta) for c in sorted(folder.iterdir()) if c.name.endswith(SUFFIXES)
                    and c.name.split(".")[0] in (meta.stem, meta.stem + "_rcv", meta.stem + "_mid")]
    for meta in sorted((DATA / "ns3").glob("*.ns3.json")):
        stem = meta.name[:-len(".ns3.json")]
        out += [(c, meta) for c in sorted((DATA / "ns3").iterdir()) if c.name.endswith(SUFFIXES)
                and c.name.startswith(stem + ".")]
    return out


def truth_of(meta: Path) -> dict[str, Any]:
    """The figures the path had: ``base_rtt_s`` as a (low, high) range, the rest numbers (``random_loss_rate``
    0 where nothing dropped at random)."""
    d = json.loads(meta.read_text())
    if "simulator" in d:  # ns-3: point-to-point links, no random loss
        rate = float(re.match(r"([\d.]+)Mbps", d["rate"]).group(1)) * 1e6  # type: ignore[union-attr]
        rtt = float(d["rtt_ms"]) / 1e3
        # the queue the bottleneck really has (testbed/ns3/scenario.cc): the FIFO queue disc of buffer_packets
        # and the device's own one-packet queue below it
        held = (d["buffer_packets"] + 1) / (d["buffer_packets"] / d["buffer_bdp"])
        return {"capacity_bps": rate, "base_rtt_s": (rtt, rtt), "buffer_over_bdp": held, "random_loss_rate": 0.0}
    configured = d.get("base_rtt_configured_ms") or (d.get("fwd_delay_ms", 0) + d.get("rev_delay_ms", 0))
    ping = (d.get("base_rtt_ping_ms") or {}).get("min") or configured
    realised = realised_random_loss(d)
    # the queue the router really had: never below one packet (r2_rtt50_b01 asked for 1250 B and got 1514)
    limit = re.search(r"limit (\d+)", d.get("bottleneck_qdisc", ""))
    buffer = float(limit.group(1)) if limit else float(d["buffer_bytes"])
    return {"capacity_bps": float(d["bottleneck_rate_bps"]),
            "base_rtt_s": (min(configured, ping) / 1e3, max(configured, ping) / 1e3),
            "buffer_over_bdp": buffer / float(d["bdp_bytes"]), "random_loss_rate": realised}


def realised_random_loss(d: dict[str, Any]) -> float:
    """The testbed's realised random-loss rate (0 where it dropped nothing at random): the data rule's drops
    (``random_loss_drops``' first counter; a second one is the ACK rule's) per data transmission that passed the
    dropper — the bytes the receiver got over the MSS plus the sender's retransmissions (iperf3's ``bytes_sent``
    also counts what was still in the socket's buffer when the run ended, never sent: 4 429 segments against the
    4 145 that ``paths/r20_rtt30_loss``'s sender sent), else ``bytes_sent`` over the MSS; the configured
    probability without counters."""
    prob = float(d.get("random_loss_prob_data") or 0.0)
    drops = d.get("random_loss_drops")
    if not prob or not isinstance(drops, list) or not drops:
        return prob
    mss = 1448 if (d.get("sender_sysctl") or {}).get("tcp_timestamps", 1) else 1460
    flows = d.get("flow_details") or []
    if flows and all(f.get("receiver_bytes") is not None and f.get("retransmits") is not None for f in flows):
        segments = sum(f["receiver_bytes"] / mss + f["retransmits"] for f in flows)
    else:
        segments = sum(f.get("bytes_sent") or 0 for f in flows) / mss
    return float(drops[0]) / segments if segments else prob


def shown_paths(capture: Path) -> list[dict[str, Any]]:
    """Every ``path`` a score document of ``capture`` shows, with what the flows it comes from measured:
    ``path``; ``rtt_min`` (their smallest RTT sample), ``rttmin`` (the smallest round trip their summaries
    timed), ``flight`` (their largest flights added, payload bytes; None at the receiver) and ``wire`` (wire
    bytes per payload byte) — each replayed flow's (judged on its group's flows where it has one) and each
    group's. Replay with NewReno only: the path does not depend on the estimators."""
    with tempfile.TemporaryDirectory() as tmp:
        plain = capture
        if capture.suffix == ".gz":
            plain = Path(tmp) / capture.name[:-3]
            with gzip.open(capture) as src, plain.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        cap = ingest_capture(plain)
        rep = replay_capture(cap, [E.create("newreno")])
    summaries = {s.flow_id: s for s in cap.flows}
    group_of = {f: g["flows"] for g in rep.path_groups for f in g["flows"]}
    out = [_measured(f.path, group_of.get(f.flow_id, [f.flow_id]), cap, summaries) for f in rep.flows if f.path]
    return out + [_measured(g["path"], g["flows"], cap, summaries) for g in rep.path_groups]


def _measured(path: dict[str, Any], flows: list[int], cap: Any, summaries: dict[int, Any]) -> dict[str, Any]:
    """A shown path with what its flows measured (:func:`shown_paths`)."""
    rtt = [r for f in flows for r in cap.acks.filter(pl.col("flow_id") == f)["rtt"].drop_nulls().to_list()]
    timed = [summaries[f].rttmin_s for f in flows if summaries[f].rttmin_s]
    flights = [_flight(cap, f) for f in flows]
    s = summaries[flows[0]]
    return {"path": path, "rtt_min": min(rtt, default=None), "rttmin": min(timed, default=None),
            "flight": None if any(x is None for x in flights) else sum(flights),
            "wire": (s.mss + 66) / max(s.mss, 1)}


def _flight(cap: Any, flow: int) -> float | None:
    """The most payload a flow had in flight at the capture point: at each ACK, the highest sequence sent by
    then less the highest acknowledged (None at the receiver, which sees data only as it arrives)."""
    s = cap.flows.by_id()[flow]
    a = cap.acks.filter(pl.col("flow_id") == flow)
    g = cap.segments.filter(pl.col("flow_id") == flow)
    if s.vantage == "receiver" or not len(a) or not len(g):
        return None
    st = g["t_rel"].to_numpy()
    order = np.argsort(st, kind="stable")
    st, ends = st[order], np.maximum.accumulate((g["seq"] + g["len"]).to_numpy()[order].astype(float))
    at, acked = a["t_rel"].to_numpy(), np.maximum.accumulate(a["ack"].to_numpy().astype(float))
    k = np.searchsorted(st, at, side="right") - 1
    return float(max(0.0, np.max(ends[k[k >= 0]] - acked[k >= 0]))) if bool(np.any(k >= 0)) else None


def hit(figure: str, value: float, truth: Any) -> bool:
    """Whether a figure is within its tolerance of the truth."""
    tol = TOLERANCE[figure]
    if figure == "base_rtt_s":
        lo, hi = truth
        return bool((1 - tol) * lo <= value <= (1 + tol) * hi)
    if figure == "random_loss_rate" and truth == 0:
        return value <= NO_LOSS
    return abs(value - truth) <= tol * truth


def outcomes(cases: list[tuple[Path, Path]] | None = None,
             shown_of: Callable[[Path], list[dict[str, Any]]] = shown_paths) -> Iterator[tuple[str, str, str, bool]]:
    """(capture, figure, grade, hit) for every figure shown with a grade on every capture with truth
    (``shown_of``: :func:`shown_paths`, or a cache of it)."""
    for capture, meta in truth_captures() if cases is None else cases:
        truth = truth_of(meta)
        for shown in shown_of(capture):
            p = shown["path"]
            for figure in FIGURES:
                if p[figure] is not None and p["confidence"] is not None:
                    yield capture.name, figure, p["confidence"], hit(figure, p[figure], truth[figure])


def table(rows: list[tuple[str, str, str, bool]]) -> dict[tuple[str, str], tuple[int, int]]:
    """(figure, grade) → (figures shown, hits)."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for _, figure, grade, ok in rows:
        n, h = out.get((figure, grade), (0, 0))
        out[(figure, grade)] = (n + 1, h + ok)
    return out


def markdown(tab: dict[tuple[str, str], tuple[int, int]]) -> str:
    """The calibration table in Markdown: per figure and grade, n, hits and the rate against its bound."""
    lines = ["| figure | grade | n | hits | rate | bound |", "|---|---|---:|---:|---:|---:|"]
    for figure in FIGURES:
        for grade in ("high", "medium", "low"):
            n, h = tab.get((figure, grade), (0, 0))
            bound = f"≥ {BOUNDS[grade]:.0%}" if grade in BOUNDS else "—"
            rate = f"{h / n:.1%}" if n else "—"
            lines.append(f"| {figure} | {grade} | {n} | {h} | {rate} | {bound} |")
    return "\n".join(lines) + "\n"


def misses(tab: dict[tuple[str, str], tuple[int, int]]) -> list[str]:
    """The (figure, grade) cells under their bound, in words."""
    return [f"{figure} {grade}: {h}/{n}" for (figure, grade), (n, h) in sorted(tab.items())
            if grade in BOUNDS and n and h / n < BOUNDS[grade]]


BEGIN, END = "<!-- calibration table: python -m tests.estimators.path_calibration -->", "<!-- end of table -->"


def write_doc(text: str) -> None:
    """Put the table between the markers of docs/path-calibration.md."""
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    tab = table(list(outcomes()))
    text = markdown(tab)
    print(text, "\n".join(misses(tab)) or "every bound met")
    write_doc(text)
