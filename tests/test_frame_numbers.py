"""Back to the packet: the frame numbers ingest keeps open the same packet in tshark, and the xplot export agrees
with the flow's tables and with tcptrace's own graph.

Each frame number taken from the ACK export (``ackreplay acks``), the segments and loss episodes, the graph's
points and the xpl file is looked up with ``tshark -r FILE -Y 'frame.number == N'`` (one query per capture for
all of them): the packet there must be the row's — its time within 2 µs (tshark prints the capture's resolution),
its raw sequence number (a segment) or acknowledgement number (an ACK) the row's relative one shifted by the one
offset every packet of the flow shares (its ISN + 1).
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from ackreplay.graphs.congestion import source_for
from ackreplay.graphs.frame_numbers import episode_frames, flow_frames
from ackreplay.ingest import CaptureIngest, ingest_capture
from tests import pcapgen as g
from tests.conftest import ROOT, SHARED

runner = CliRunner()
S04 = SHARED / "generated" / "s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap"  # pcap, loss episodes
S03 = SHARED / "generated" / "s03_cubic_2f_10M_rtt60_buf1bdp.pcapng"  # pcapng, two flows
NFS = SHARED / "public" / "gh-wirerust__nfs_bad_stalls.cap"  # a non-TCP packet before the first TCP one
ESPN = ROOT / "tests" / "data" / "public" / "gh-packets__http_espn.pcapng"  # pcapng, non-TCP packets first
BRO = ROOT / "tests" / "data" / "public" / "gh-zeek__http_bro.org.pcap.gz"  # gzip
#: Rows sampled per table and flow: evenly spread over the flow.
SAMPLES = 12
WRAP = 1 << 32


def need(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        pytest.fail(f"{tool} is not installed: scripts/test.sh installs it (Debian package)")
    return exe


def tshark_packets(path: Path, frames: set[int]) -> dict[int, tuple[int | None, int | None, float]]:
    """frame → (tcp.seq_raw, tcp.ack_raw, frame.time_epoch) of those frames, as tshark reads them."""
    wanted = " || ".join(f"frame.number == {f}" for f in sorted(frames))
    out = subprocess.run([need("tshark"), "-n", "-r", str(path), "-Y", wanted, "-T", "fields", "-e", "frame.number",
                          "-e", "tcp.seq_raw", "-e", "tcp.ack_raw", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    rows = {}
    for line in out.splitlines():
        num, seq, ack, t = line.split("\t")
        rows[int(num)] = (int(seq) if seq else None, int(ack) if ack else None, float(t))
    return rows


def spread(frame: pl.DataFrame, n: int = SAMPLES) -> pl.DataFrame:
    return frame[np.unique(np.linspace(0, frame.height - 1, n).astype(int))] if frame.height > n else frame


def check_flow(path: Path, segments: pl.DataFrame, acks: pl.DataFrame, episodes: pl.DataFrame) -> int:
    """The sampled rows of one flow's tables (segments, ACKs, episodes' packets) are tshark's packets of their
    frame numbers; the number of packets checked."""
    fin = acks["ack"].max() if acks.height else None
    segs = spread(segments)
    acks = spread(acks.filter(pl.col("ack") < fin)) if fin is not None else acks  # (an ACK of the FIN: one more)
    eps = episode_frames(segments, episodes)[:4]
    ep_frames = {f for e in eps for f in (e["first_frame"], e["last_frame"], *e["retransmission_frames"][:2])
                 if f is not None}
    seen = tshark_packets(path, {*segs["frame"], *acks["frame"], *ep_frames})
    offsets = set()
    for kind, rows, field in (("segment", segs, 0), ("ACK", acks, 1)):
        for f, t_ns, rel in zip(rows["frame"], rows["t_ns"], rows["seq" if field == 0 else "ack"], strict=True):
            assert f in seen, f"{path.name}: {kind} frame {f} is not a packet tshark shows"
            raw, t = seen[f][field], seen[f][2]
            assert raw is not None and abs(t - t_ns / 1e9) <= 2e-6, (path.name, kind, f, t, t_ns)
            offsets.add((raw - rel) % WRAP)
    assert len(offsets) == 1, f"{path.name}: frames whose packets are not the rows' ({offsets})"
    retx = set(segments.filter(pl.col("kind") == "retransmission")["frame"])
    for e in eps:
        assert e["first_frame"] in retx and set(e["retransmission_frames"]) <= retx
        assert e["first_frame"] == e["retransmission_frames"][0]
        assert e["last_frame"] is None or e["last_frame"] in seen
    return len(segs) + len(acks)


def largest_flows(cap: CaptureIngest, n: int = 2) -> list[int]:
    return cap.flows.frame.sort("bytes", descending=True)["flow_id"].head(n).to_list()


@pytest.mark.parametrize("path", [S04, S03, NFS, ESPN, BRO], ids=lambda p: p.name)
def test_frame_numbers_open_the_same_packet_in_tshark(path: Path) -> None:
    cap = ingest_capture(path)
    checked = 0
    for fid in largest_flows(cap):
        fd = cap.flow(fid)
        checked += check_flow(path, fd.segments, fd.acks, fd.episodes)
    assert checked > 10


def test_the_frames_of_non_tcp_records_are_counted(tmp_capture) -> None:
    """Frame numbers count every record — UDP, truncated — as Wireshark does, in pcap and pcapng (the packet blocks
    of two interfaces, in file order), across read chunks (the first record of a batch) and a spilled ingest."""
    recs, t = [], 1_700_000_000_000_000_000
    for k in range(1800):
        if k % 3 == 0:  # a record that is not a TCP packet between the flow's, on the other interface
            recs.append(g.Rec(t, g.ether(g.ipv4("10.0.0.9", "10.0.0.8", b"\0" * 8, proto=17)), iface=1))
            t += 1000
        if k % 5 == 1:  # a record cut short by the snaplen
            recs.append(g.Rec(t, g.ether(g.ipv4("10.0.0.9", "10.0.0.8", b"\0" * 40))[:20], origlen=74))
            t += 1000
        if k % 2 == 0:
            l4 = g.tcp_header(4000, 80, 1000 + 100 * (k // 2), 1, g.ACK) + b"x" * 100
            recs.append(g.Rec(t, g.ether(g.ipv4("10.0.0.1", "10.0.0.2", l4))))
        else:
            l4 = g.tcp_header(80, 4000, 1, 1000 + 100 * (k // 2 + 1), g.ACK)
            recs.append(g.Rec(t, g.ether(g.ipv4("10.0.0.2", "10.0.0.1", l4))))
        t += 1000
    for path in (tmp_capture(g.pcap(recs)), tmp_capture(g.pcapng(recs, (g.Iface(), g.Iface(tsresol=9))), "x.pcapng"),
                 tmp_capture(gzip.compress(g.pcap(recs)), "x.pcap.gz")):
        whole = ingest_capture(path)
        assert whole.segments["frame"].min() == 2  # the UDP record is frame 1
        for cap in (ingest_capture(path, chunk_bytes=4096), ingest_capture(path, memory_budget=1)):
            assert cap.segments["frame"].equals(whole.segments["frame"])
            assert cap.acks["frame"].equals(whole.acks["frame"])
        fd = whole.flow(0)
        assert check_flow(path, fd.segments, fd.acks, fd.episodes) > 10


def test_the_ack_export_and_the_graph_name_the_packets(tmp_path: Path) -> None:
    """The frame numbers of ``ackreplay acks`` (CSV), of the graph's points and of the score document's evidence
    are the capture's packets."""
    cap = ingest_capture(S04)
    fid = largest_flows(cap, 1)[0]
    out = tmp_path / "acks.csv"
    res = runner.invoke(app, ["acks", str(S04), "--flow", str(fid), "-o", str(out)])
    assert res.exit_code == 0, res.output
    exported = pl.read_csv(out)
    fd = cap.flow(fid)
    assert exported["frame"].to_list() == fd.acks["frame"].to_list()
    check_flow(S04, fd.segments, exported.with_columns(pl.col("t_ns").cast(pl.Int64)), fd.episodes)
    g_data = source_for(cap, None, fid).window()
    seq = g_data["sequence"]
    drawn = {f for part in ("sent", "retransmitted", "ack") for f in seq[part]["frame"]}
    assert drawn and drawn <= {*fd.segments["frame"], *fd.acks["frame"]}
    assert set(seq["retransmitted"]["frame"]) <= set(fd.segments.filter(pl.col("retransmission"))["frame"])
    eps = g_data["episodes"]
    assert sum(len(e["retransmission_frames"]) for e in eps) == fd.summary.retransmissions
    res = runner.invoke(app, ["score", str(S04), "--format", "json"])
    assert res.exit_code == 0, res.output
    (doc,) = [f for f in json.loads(res.stdout)["captures"][0]["flows"] if f["flow_id"] == fid]
    ev = doc["frames"]
    assert ev == flow_frames(cap.acks, cap.segments)[fid]
    rtt_min = fd.acks.filter(pl.col("frame") == ev["rtt_min"])["rtt"].item()
    assert rtt_min == pytest.approx(fd.acks["rtt"].min(), rel=1e-12)
    assert rtt_min == pytest.approx(doc["rttmin_s"], rel=1e-12)
    assert ev["first_data"] == fd.segments["frame"][0] and ev["last_ack"] == fd.acks["frame"][-1]
    check_flow(S04, fd.segments.filter(pl.col("frame") == ev["first_data"]),
               fd.acks.filter(pl.col("frame").is_in([ev["rtt_min"], ev["last_ack"]])), fd.episodes[:0])


# ---- the xplot export


def parse_xpl(text: str) -> tuple[list[str], list[tuple[str, str, list[str]]]]:
    """An xpl file as tcptrace writes it: its header (``timeval double``, ``title`` and the title's line, the
    axes' labels) and its commands — (colour in effect, command, arguments; a text command's text appended)."""
    lines = text.splitlines()
    assert lines[0] == "timeval double" and lines[1] == "title", lines[:2]
    header = lines[:7]
    assert header[3:7] == ["xlabel", "time", "ylabel", "sequence number"]
    assert lines[-1] == "go"
    colours = {"white", "green", "red", "yellow", "purple", "orange", "blue", "magenta"}
    arity = {"line": 4, "darrow": 2, "uarrow": 2, "dtick": 2, "utick": 2, "htick": 2, "diamond": 2, "dot": 2,
             "box": 2, "atext": 2, "rtext": 2, "ltext": 2}
    out: list[tuple[str, str, list[str]]] = []
    colour = ""
    k = 7
    while k < len(lines) - 1:
        word, *args = lines[k].split()
        k += 1
        if word in colours and not args:
            colour = word
            continue
        assert word in arity, f"line {k}: unknown command {word!r}"
        if args and args[-1] in colours:  # a point's own colour (tcptrace writes "diamond t y white")
            args = args[:-1]
        assert len(args) == arity[word], lines[k - 1]
        [float(a) for a in args]
        if word.endswith("text"):
            args.append(lines[k])
            k += 1
        out.append((colour, word, args))
    return header, out


def xpl_segments(cmds: list[tuple[str, str, list[str]]]) -> list[tuple[float, int, int, bool]]:
    """(time, start, end, retransmitted) of each data segment: a ``darrow`` at its start, its top marked (an
    ``uarrow``; tcptrace draws a pushed segment's as a ``diamond`` and a ``dot``) and the vertical ``line`` between."""
    segs = []
    for k, (colour, word, args) in enumerate(cmds):
        if word != "darrow":
            continue
        for _, w, a in cmds[k + 1: k + 4]:
            if w == "line" and a[0] == a[2] == args[0] and a[1] == args[1]:
                segs.append((float(args[0]), int(args[1]), int(a[3]), colour == "red"))
                break
            if w not in ("uarrow", "diamond", "dot"):
                break
    return segs


def test_xpl_export_is_the_flows_time_sequence_graph(tmp_path: Path) -> None:
    cap = ingest_capture(S04)
    fid = largest_flows(cap, 1)[0]
    fd = cap.flow(fid)
    out = tmp_path / "flow.xpl"
    res = runner.invoke(app, ["graph", str(S04), "--flow", str(fid), "--format", "xpl", "-o", str(out)])
    assert res.exit_code == 0, res.output
    header, cmds = parse_xpl(out.read_text())
    assert header[2] == f"{fd.summary.sender}_==>_{fd.summary.receiver} (time sequence graph)"
    segs = xpl_segments(cmds)
    assert len(segs) == fd.segments.height
    assert np.allclose([s[0] for s in segs], fd.segments["t"].to_numpy(), rtol=0, atol=1e-6)
    assert [s[1] for s in segs] == fd.segments["seq"].to_list()
    assert [s[2] - s[1] for s in segs] == fd.segments["len"].to_list()
    assert [s[3] for s in segs] == fd.segments["retransmission"].to_list()
    assert sum(1 for _, w, a in cmds if w == "atext" and a[-1] == "R") == fd.summary.retransmissions
    ticks = [(float(a[0]), int(a[1])) for c, w, a in cmds if w == "dtick" and c == "green"]
    assert [y for _, y in ticks] == fd.acks["ack"].to_list()
    assert np.allclose([t for t, _ in ticks], fd.acks["t"].to_numpy(), rtol=0, atol=1e-6)
    sacks = [a for c, w, a in cmds if w == "line" and c == "purple"]
    assert len(sacks) == fd.acks["sack_lo"].drop_nulls().len() > 0


@pytest.mark.parametrize(("args", "why"), [(["--format", "xpl", "-o", "x.png"], "but the output is"),
                                           (["--format", "dot"], "the graph is written as")])
def test_xpl_export_refuses_a_format_it_does_not_write(tmp_path: Path, args: list[str], why: str) -> None:
    res = runner.invoke(app, ["graph", str(S04), *args])
    assert res.exit_code == 2 and why in res.stderr


def test_xpl_export_matches_tcptrace(tmp_path: Path) -> None:
    """tcptrace -S draws the same data segments (raw sequence numbers: ours shifted by one offset), the same
    retransmissions marked R and the same SACK blocks as ackreplay's xpl of the flow."""
    subprocess.run([need("tcptrace"), "-S", "-n", str(S04)], cwd=tmp_path, capture_output=True, check=True,
                   timeout=300)
    cap = ingest_capture(S04)
    fid = largest_flows(cap, 1)[0]
    ours = tmp_path / "ours.xpl"
    res = runner.invoke(app, ["graph", str(S04), "--flow", str(fid), "--format", "xpl", "-o", str(ours)])
    assert res.exit_code == 0, res.output
    title = parse_xpl(ours.read_text())[0][2]
    theirs = next(p for p in sorted(tmp_path.glob("*_tsg.xpl")) if parse_xpl(p.read_text())[0][2] == title)
    _, t_cmds = parse_xpl(theirs.read_text())
    _, o_cmds = parse_xpl(ours.read_text())
    t_segs = xpl_segments(t_cmds)
    o_segs = xpl_segments(o_cmds)
    assert len(t_segs) == len(o_segs)
    shift = {(t[1] - o[1]) % WRAP for t, o in zip(t_segs, o_segs, strict=True)}
    assert len(shift) == 1
    assert np.allclose([t[0] for t in t_segs], [o[0] for o in o_segs], rtol=0, atol=1e-6)
    assert [t[3] for t in t_segs] == [o[3] for o in o_segs]
    marks = [sum(1 for _, w, a in cmds if w == "atext" and a[-1] == m) for cmds in (t_cmds, o_cmds) for m in "RS"]
    assert marks[:2] == marks[2:]
