"""Connection identity and the flows' invariants, on hand-built captures.

A 4-tuple carries several connections one after another: a SYN with a new ISN, or with the same ISN once the
connection is over (an RST, a FIN from each side, 5 min idle), starts the next one. An RST is never data. A flow
whose figures still rest on another connection's sequence numbers breaks an invariant and is not replayed.

Sender 10.0.0.1:40000 (the client), receiver 10.0.0.2:5201; times in ms; MSS 1000.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ackreplay.ingest import ingest_capture
from ackreplay.ingest.invariants import FlowFigures, violations
from ackreplay.replay.capture import bulk_flow_ids
from ackreplay.replay.engine import INVALID, plan
from ackreplay.scoring.truth import Truth
from tests import pcapgen as g
from tests.conftest import ROOT
from tests.ingest.test_public_conformance import captures_in

MSS = 1000
#: Far from the connection's numbers: the older connection's sequence space a challenge ACK comes from.
OLD_SEQ, OLD_ACK = 3_000_000_000, 2_000_000_000


def transfer(c: g.Conv, t0: float, isn: int, irs: int, n: int = 3, *, syn: bool = True) -> None:
    """A handshake (its SYN only when ``syn``) and ``n`` segments, each ACKed 10 ms later."""
    if syn:
        c.raw(t0, True, isn, 0, g.SYN, opts=g.opt_mss(MSS))
    c.raw(t0 + 10, False, irs, isn + 1, g.SYN | g.ACK, opts=g.opt_mss(MSS))
    c.raw(t0 + 10.01, True, isn + 1, irs + 1, g.ACK)
    for i in range(n):
        c.raw(t0 + 11 + i, True, isn + 1 + i * MSS, irs + 1, g.ACK | g.PSH, length=MSS)
        c.raw(t0 + 21 + i, False, irs + 1, isn + 1 + (i + 1) * MSS, g.ACK)


def close(c: g.Conv, t: float, isn: int, irs: int, n: int = 3, *, both: bool = True) -> None:
    """The client's FIN after ``n`` segments, and the server's (``both``)."""
    c.raw(t, True, isn + 1 + n * MSS, irs + 1, g.FIN | g.ACK)
    if both:
        c.raw(t + 10, False, irs + 1, isn + 2 + n * MSS, g.FIN | g.ACK)
        c.raw(t + 10.01, True, isn + 2 + n * MSS, irs + 2, g.ACK)


def challenged(isn: int, *, rst: bool = True) -> g.Conv:
    """A client's SYN answered by a challenge ACK (RFC 5961 §4: the server still holds an older connection on these
    ports), the client's RST (``rst``), then its SYN with ``isn`` 1 s later and a transfer."""
    c = g.Conv()
    c.raw(0, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS))
    c.raw(10, False, OLD_SEQ, OLD_ACK, g.ACK)  # the challenge ACK: the older connection's numbers
    if rst:
        c.raw(10.1, True, OLD_ACK, 0, g.RST)  # RFC 9293 SYN-SENT: <SEQ=SEG.ACK><CTL=RST>
    transfer(c, 1000, isn, 90_000)
    return c


def ingest(tmp_capture, c: g.Conv):
    return ingest_capture(tmp_capture(c.pcap()))


def data_flows(cap) -> list:
    return [s for s in cap.flows if s.sender.endswith(":40000")]


def tshark_streams(path: Path) -> int:
    exe = shutil.which("tshark")
    if exe is None:
        pytest.fail("tshark is not installed: scripts/test.sh installs it (Debian package)")
    out = subprocess.run([exe, "-n", "-r", str(path), "-T", "fields", "-e", "tcp.stream"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return len(set(out.split()))


@pytest.mark.parametrize("isn", [1000, 700_000_000], ids=["same_isn", "new_isn"])
def test_a_syn_sent_again_after_a_challenge_ack_and_rst_opens_a_new_connection(tmp_capture, isn):
    """The challenge ACK acknowledges the older connection's byte 2·10⁹: taken for this connection's, it made a
    flow of 2 GB out of 3 kB with every segment a retransmission. It stays with the attempt it answered."""
    cap = ingest(tmp_capture, challenged(isn))
    assert cap.stats.connections == 2
    [f] = data_flows(cap)
    assert (f.connection, f.bytes, f.bytes_sent, f.data_segments) == (1, 3 * MSS, 3 * MSS, 3)
    assert f.retransmissions == 0 and f.loss_events == 0 and f.invalid == ""
    assert f.handshake_rtt_s == pytest.approx(0.010)  # the SYN-ACK answers the SYN sent again


def test_a_new_isn_splits_as_tsharks_streams_do(tmp_capture):
    c = challenged(700_000_000)
    assert tshark_streams(tmp_capture(c.pcap(), "tshark.pcap")) == ingest(tmp_capture, c).stats.connections == 2


@pytest.mark.parametrize("isn2", [1000, 50_000], ids=["same_isn", "new_isn"])
def test_a_syn_after_a_fin_from_each_side_opens_a_new_connection(tmp_capture, isn2):
    c = g.Conv()
    transfer(c, 0, 1000, 5000)
    close(c, 40, 1000, 5000)
    transfer(c, 2000, isn2, 7000)
    cap = ingest(tmp_capture, c)
    assert cap.stats.connections == 2
    assert [(f.connection, f.bytes, f.retransmissions, f.invalid) for f in data_flows(cap)] == \
        [(0, 3 * MSS, 0, ""), (1, 3 * MSS, 0, "")]


def test_a_syn_with_the_same_isn_on_a_half_closed_connection_is_the_same_one(tmp_capture):
    """One FIN: the server may still send; a SYN with the connection's ISN then is a copy of the first."""
    c = g.Conv()
    transfer(c, 0, 1000, 5000)
    close(c, 40, 1000, 5000, both=False)
    c.raw(45, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS))
    assert ingest(tmp_capture, c).stats.connections == 1


@pytest.mark.parametrize(("idle_s", "connections"), [(100, 1), (300, 2)])
def test_a_syn_with_the_same_isn_after_5_min_idle_opens_a_new_connection(tmp_capture, idle_s, connections):
    """Zeek's inactivity timeout (5 min); within it, a SYN with the same ISN is taken for the connection's own (a
    retransmitted SYN comes at most 63 s after the first on Linux)."""
    c = g.Conv()
    transfer(c, 0, 1000, 5000)
    transfer(c, 31 + idle_s * 1000, 1000, 7000)
    cap = ingest(tmp_capture, c)
    assert cap.stats.connections == connections
    if connections == 2:
        assert [(f.bytes, f.retransmissions) for f in data_flows(cap)] == [(3 * MSS, 0), (3 * MSS, 0)]



@pytest.mark.parametrize(("closed", "connections"), [(True, 2), (False, 1)], ids=["after_fins", "open"])
def test_a_synack_with_a_new_isn_after_the_fins_opens_a_new_connection(tmp_capture, closed, connections):
    """The next connection's SYN is not in the capture: its SYN-ACK, which does not answer the first connection's SYN,
    comes after a FIN from each side. Taken for the first connection's, the second's numbers were unwrapped against
    the first's (its data 556 MB above it in an nDPI capture). On an open connection a SYN-ACK alone splits
    nothing."""
    c = g.Conv()
    transfer(c, 0, 1000, 5000)
    close(c, 40, 1000, 5000, both=closed)
    transfer(c, 60_000, 800_000_000, 9000, syn=False)
    cap = ingest(tmp_capture, c)
    assert cap.stats.connections == connections
    if closed:
        # (without its SYN, the second flow's bytes acknowledged count from its first ACK, of its first segment)
        assert [(f.connection, f.bytes, f.bytes_sent, f.retransmissions, f.invalid) for f in data_flows(cap)] == \
            [(0, 3 * MSS, 3 * MSS, 0, ""), (1, 2 * MSS, 3 * MSS, 0, "")]


def test_a_synack_answering_the_syn_after_an_rst_stays_in_its_connection(tmp_capture):
    """A SYN-ACK acknowledging the SYN's ISN + 1 after an RST (an injected one, in a Zeek capture) answers that SYN."""
    c = g.Conv()
    c.raw(0, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS))
    c.raw(5, False, 0, 0, g.RST)
    transfer(c, 5, 1000, 5000, syn=False)
    cap = ingest(tmp_capture, c)
    assert cap.stats.connections == 1 and [f.bytes for f in data_flows(cap)] == [3 * MSS]


def test_a_syn_recorded_after_its_synack_is_the_same_connection(tmp_capture):
    """The SYN-ACK recorded 0.26 ms before the SYN it acknowledges (a Zeek capture): one connection, as tshark has
    it, whose duration starts at the SYN-ACK — the SYN on a key that carried packets without one started a second."""
    c = g.Conv()
    c.raw(0, False, 5000, 1001, g.SYN | g.ACK, opts=g.opt_mss(MSS))
    c.raw(0.26, True, 1000, 0, g.SYN, opts=g.opt_mss(MSS))
    c.raw(0.3, True, 1001, 5001, g.ACK)
    for i in range(3):
        c.raw(1 + i, True, 1001 + i * MSS, 5001, g.ACK | g.PSH, length=MSS)
        c.raw(11 + i, False, 5001, 1001 + (i + 1) * MSS, g.ACK)
    path = tmp_capture(c.pcap(), "reorder.pcap")
    cap = ingest_capture(path)
    assert cap.stats.connections == tshark_streams(path) == 1
    [f] = data_flows(cap)
    assert (f.bytes, f.bytes_sent, f.syn_seen, f.duration_s) == (3 * MSS, 3 * MSS, True, pytest.approx(0.013))

def test_an_rsts_sequence_number_is_not_data(tmp_capture):
    """An RST 2³¹ below the data (another connection's number): it moved the reference that 32-bit sequence
    numbers are unwrapped against, and the data after it unwrapped 4 GiB low — every segment a retransmission."""
    c = g.Conv()
    transfer(c, 0, 1000, 5000, n=2)
    c.raw(40, True, 1000 + 1 + 2 * MSS - 2**31, 5001, g.RST)
    for i in range(2, 4):
        c.raw(41 + i, True, 1001 + i * MSS, 5001, g.ACK | g.PSH, length=MSS)
        c.raw(51 + i, False, 5001, 1001 + (i + 1) * MSS, g.ACK)
    [f] = data_flows(ingest(tmp_capture, c))
    assert (f.bytes, f.bytes_sent, f.data_segments, f.retransmissions, f.invalid) == (4 * MSS, 4 * MSS, 4, 0, "")


def test_an_rsts_payload_is_not_data(tmp_capture):
    """RFC 9293 §3.5.3: an RST may carry a diagnostic text. Far from the data, it counted 2·10⁹ bytes sent."""
    c = g.Conv()
    transfer(c, 0, 1000, 5000, n=2)
    c.raw(40, True, 1000 + 1 + 2_000_000_000, 5001, g.RST, length=40)
    cap = ingest(tmp_capture, c)
    [f] = data_flows(cap)
    assert (f.bytes, f.bytes_sent, f.data_segments, f.invalid) == (2 * MSS, 2 * MSS, 2, "")
    assert len(cap.segments) == 2


def test_an_rst_alone_with_payload_makes_no_flow(tmp_capture):
    c = g.Conv()
    c.raw(0, True, 1000, 0, g.SYN)
    c.raw(10, False, 0, 1001, g.RST | g.ACK, length=20)  # refused, with a reason
    cap = ingest(tmp_capture, c)
    assert cap.stats.connections == 1 and len(cap.flows) == 0 and len(cap.segments) == 0


def test_a_flow_resting_on_another_connections_numbers_breaks_the_invariants_and_is_not_replayed(tmp_capture):
    """The client's RST is not in the capture: its SYN, sent again with the same ISN, cannot be told from a copy,
    and the challenge ACK stays in the connection. Its figures break all three invariants; the flow keeps them,
    with the reasons, and is neither replayed nor a bulk flow."""
    cap = ingest(tmp_capture, challenged(1000, rst=False))
    [f] = data_flows(cap)
    assert f.bytes_sent == OLD_ACK - 1001 and f.retransmissions == 3  # what the jump makes of 3 kB
    assert f.invalid.startswith("bytes: 1999998999 sent, but the data segments carry 0 bytes of new data and the ACKs "
                                "prove 65535 the capture missed (a sequence jump of 1999998999 bytes); goodput: ")
    assert "; loss: 3 retransmission(s) resend bytes that only a sequence jump claims were sent" in f.invalid
    todo, skipped = plan(cap.flows)
    assert f.flow_id not in todo and skipped[f.flow_id] == INVALID + f.invalid
    assert bulk_flow_ids(cap.flows, Truth(bottleneck_bps=1e7, shared_by="all", min_flow_bytes=1)) == []


def figures(**kw: int | float) -> FlowFigures:
    """One flow's figures: 3 segments of 1000 bytes, all acknowledged over 1 s; ``kw`` changes some."""
    base = dict(bytes_sent=3000, bytes_acked=3000, duration_s=1.0, goodput_bps=24_000.0, seen=3000, proven=0,
                jump=0, jump_retx=0, early=0, wmax=65535)
    base.update(kw)
    return FlowFigures(*(np.array([base[name]]) for name in FlowFigures._fields))


def test_each_invariant_alone():
    assert violations(figures()).to_list() == [""]
    # a hole the ACKs prove (the capture missed 2 segments): within the invariants
    assert violations(figures(bytes_sent=5000, bytes_acked=5000, proven=2000)).to_list() == [""]
    bytes_only = violations(figures(bytes_sent=5000, jump=2000))[0]
    assert bytes_only.startswith("bytes: 5000 sent") and "goodput" not in bytes_only and "loss" not in bytes_only
    goodput = violations(figures(bytes_acked=9000, goodput_bps=72_000.0))[0]
    assert goodput == ("goodput: 0.072 Mbit/s, but the 3000 bytes its segments and ACKs account for allow 0.024 "
                       "Mbit/s over its 1 s")
    # a flow captured without its start: ACKs below its first segment count, one window of them at most
    assert violations(figures(bytes_acked=9000, early=6000)).to_list() == [""]
    assert violations(figures(bytes_acked=9000, early=6000, wmax=5000))[0].startswith("goodput: ")
    assert violations(figures(jump_retx=2))[0] == ("loss: 2 retransmission(s) resend bytes that only a sequence jump "
                                                   "claims were sent")


#: Made here (testbed, ns-3, pcapgen): every flow keeps the invariants. The public captures made by others are
#: checked flow by flow in ``test_public_conformance``, whose table of known bugs names the flows that break one.
DATA_CAPTURES = sorted(p for p in (ROOT / "tests" / "data").rglob("*.pcap*") if "public" not in p.parts)
#: Public captures with flows that break an invariant through an ingest bug still open
#: (``test_public_conformance.BUGS``): capture → the invariants broken. Those flows are flagged, so they are reported
#: and never replayed; the flows of every other public capture keep them all.
BROKEN_PUBLIC: dict[str, set[str]] = {}


@pytest.mark.parametrize("path", captures_in(ROOT / "tests" / "data" / "public"), ids=lambda p: p.name)
def test_public_flows_keep_the_invariants_or_are_flagged_and_not_replayed(path):
    cap = ingest_capture(path)
    invalid = [s for s in cap.flows if s.invalid]
    assert {s.invalid.split(":", 1)[0] for s in invalid} == BROKEN_PUBLIC.get(path.name, set())
    replayed, skipped = plan(cap.flows, allow_vantage=True)
    assert not {s.flow_id for s in invalid} & set(replayed)
    assert all(skipped.get(s.flow_id, "").startswith("invalid: ") for s in invalid)
