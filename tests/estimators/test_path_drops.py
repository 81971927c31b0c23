"""The random drops a capture realised, segment by segment (``ackreplay.path.drops``, docs/path.md "Random-loss
rate"), against the testbed's log of every random drop (``random_loss_log``: the sequence number of each) on
``paths/r20_rtt30_loss`` and ``pairs/tapnear``, and its count on ``pairs/dloss``."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import dpkt
import numpy as np
import pytest

import ackreplay.estimators as E
from ackreplay.ingest import ingest_capture
from ackreplay.path.drops import RandomDrops, random_drops
from ackreplay.path.evidence import PathBatch
from ackreplay.path.inference import loss_kinds
from ackreplay.replay.capture import replay_capture
from ackreplay.replay.results import FlowReplay
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"


@cache
def largest(capture: Path) -> FlowReplay:
    cap = ingest_capture(capture)
    rep = replay_capture(cap, [E.create("newreno")], keep_series=False)
    sizes = {f.flow_id: f.bytes for f in cap.flows.by_id().values()}
    return max(rep.flows, key=lambda fr: sizes[fr.flow_id])


def first_byte(capture: Path, port: int) -> int:
    """The first data byte's sequence number of the flow the client on ``port`` sent (its SYN's + 1)."""
    with gzip.open(capture) as fh:
        for _, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(tcp := ip.data, dpkt.tcp.TCP) and tcp.sport == port \
                    and tcp.flags & dpkt.tcp.TH_SYN:
                return int(tcp.seq) + 1
    raise AssertionError("no SYN")


@pytest.mark.parametrize(("name", "logged", "shown"), [("paths/r20_rtt30_loss", 18, 14), ("pairs/tapnear", 27, 22)])
def test_the_drops_are_the_logged_ones_whose_fate_the_capture_shows(name: str, logged: int, shown: int) -> None:
    """Every random drop the testbed logged is either a drop of the list, at its segment, or lies in the window of
    an episode the rate leaves out (the first slow start's overflows: 4 of r20's 18, 5 of tapnear's 27), where its
    fate is not shown; and the list holds no other. Its length is the rate's count of drops."""
    capture = DATA / f"{name}.pcap.gz"
    meta = json.loads(capture.with_name(capture.name.replace(".pcap.gz", ".json")).read_text())
    port = meta["flow_details"][0]["client_port"]
    base = first_byte(capture, port)
    segs = sorted((d["seq"] - base) // 1448 for d in meta["random_loss_log"] if d["src_port"] == port)
    fr = largest(capture)
    drops = random_drops(fr.path_parts)
    assert drops is not None and fr.path is not None and fr.path_parts is not None and len(segs) == logged
    fates = drops.fates()
    assert [s for s in segs if fates[s] >= 0] == list(drops.drops) and len(drops.drops) == shown
    assert all(fates[s] < 0 for s in segs if s not in drops.drops)
    assert f"{shown} segments retransmitted" in fr.path["evidence"]["random_loss_rate"]
    assert drops.segments == pytest.approx(fr.path_parts.data_segments, rel=0.03)  # (less the retransmissions)


def test_dloss_replays_the_testbeds_19_drops_and_hides_nothing() -> None:
    """``pairs/dloss``: no loss followed a full queue, so every episode is random and nothing is hidden; the drops
    are as many as the testbed's random dropper counted (19), each a segment the capture retransmitted."""
    fr = largest(DATA / "pairs" / "dloss.pcap.gz")
    meta = json.loads((DATA / "pairs" / "dloss.json").read_text())
    drops = random_drops(fr.path_parts)
    assert drops is not None and fr.path_parts is not None and drops.hidden == ()
    assert len(drops.drops) == meta["random_loss_drops"][0] == 19
    assert set(loss_kinds(fr.path_parts).tolist()) == {0}
    assert set(drops.drops) <= {seg for seg, _ in fr.path_parts.retransmissions}


def test_the_fates_count_each_segments_drops_and_mark_what_is_hidden() -> None:
    drops = RandomDrops((3, 7, 7, 12), ((5, 9), (20, 30)), 25)
    fates = drops.fates()
    assert fates.dtype == np.int8 and len(fates) == 25
    assert fates[3] == 1 and fates[7] == 2 and fates[12] == 1  # (a drop inside a hidden range is replayed)
    assert (fates[[5, 6, 8, 20, 24]] == -1).all() and fates[[0, 4, 9, 19]].tolist() == [0, 0, 0, 0]
    assert int((fates < 0).sum()) == 3 + 5
    assert RandomDrops.from_dict(drops.as_dict()) == drops
    assert RandomDrops.from_dict(None) is None and RandomDrops.from_dict({"hidden": []}) is None


def test_pooled_evidence_keeps_each_retransmissions_episode_and_gives_no_drop_list() -> None:
    """Two flows' evidence pooled (``PathBatch.merge``): each retransmission still names its own episode, counted
    among the group's (the second flow's after the first's), and a pooled row has no one sequence to replay."""
    one = largest(DATA / "pairs" / "dloss.pcap.gz").path_parts
    two = largest(DATA / "paths" / "r20_rtt30_loss.pcap.gz").path_parts
    assert one is not None and two is not None
    pooled = PathBatch.stack([one, two]).merge([0, 2])[0]
    first = len(one.loss_retx)
    assert pooled.retransmissions == one.retransmissions + [(s, e + first) for s, e in two.retransmissions]
    assert pooled.loss_windows == one.loss_windows + two.loss_windows
    assert random_drops(pooled) is None
