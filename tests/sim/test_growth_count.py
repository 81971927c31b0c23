"""What an ACK's window growth counts (``sim.sender.grown_segments``): Linux grows cwnd by the segments the ACK newly
delivered (``acked_sacked``) and only on an ACK that moved the cumulative ACK (``tcp_cong_control``,
``tcp_may_raise_cwnd``), so the ACK that ends a recovery does not count again the segments SACKed during it; ns-3's
stack counts the segments its cumulative ACK acknowledged."""

from __future__ import annotations

import pytest

from ackreplay.sim import layout as L
from ackreplay.sim.controls import EPOCH, W_MAX
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state
from ackreplay.sim.sender import on_ack
from ackreplay.sim.state import SimState

LINK = Link(20e6, buffer_bytes=75000, overhead_bytes=66)
SACKED_IN_RECOVERY = 20  # segments 1 … 20 SACKed while the hole, segment 0, was retransmitted
SSTHRESH = 14.0


def _recovering(control: str, ns3: bool) -> SimState:
    """A sender in recovery at cwnd = ssthresh = 14 (CUBIC's last maximum 20): segment 0 retransmitted, the 20
    above it SACKed, nothing else out."""
    st = build_state(LINK, [FlowSpec(control, 0.03)], SimConfig(2.0, ns3_ack_counting=ns3))
    fi, fs = st.fi[0], st.fs[0]
    top = SACKED_IN_RECOVERY
    st.seg[0, 0] = L.RETRANSMITTED
    st.seg[0, 1:top + 1] = L.SACKED
    fi[L.UNA], fi[L.NXT], fi[L.PIPE] = 0, top + 1, 1
    fi[L.H1], fi[L.H2], fi[L.H3], fi[L.LOST_PTR], fi[L.HI_LOST], fi[L.RTX_PTR] = top, top - 1, top - 2, top - 2, 0, 1
    fi[L.IN_REC], fi[L.RECOVER], fi[L.SENT], fi[L.STARTED] = 1, top, 40, 1
    fs[L.CWND], fs[L.SSTHRESH], fs[L.SRTT], fs[L.RTT_MIN], fs[L.RTO] = SSTHRESH, SSTHRESH, 0.03, 0.03, 0.23
    if control == "cubic":
        fs[W_MAX], fs[EPOCH] = 20.0, -1.0
    return st


@pytest.mark.parametrize("control", ["cubic", "newreno"])
def test_the_ack_that_ends_a_recovery_grows_by_the_hole_it_filled(control: str) -> None:
    """Linux: the cumulative ACK that passes the 20 SACKed segments delivers one, the retransmitted hole, and cwnd
    leaves recovery at ssthresh plus one ACK's growth (under 0.1 segment), as every recovery of the kernel's traces
    on the r20 path does (tests/data/kernel/r20_*: cwnd at ssthresh at the first sample after it). Counting the 21
    segments acknowledged gave CUBIC 1.2 segments at once (its Reno-friendly estimate's growth of 21 ACKs, chased
    within the ACK) and NewReno 1.5 (21/14)."""
    st = _recovering(control, ns3=False)
    on_ack(st, 0, 1.0, SACKED_IN_RECOVERY + 1, -1, 0.97, 0.97)
    assert st.fi[0, L.IN_REC] == 0
    assert SSTHRESH <= st.fs[0, L.CWND] < SSTHRESH + 0.1


def test_ns3_counts_the_segments_its_cumulative_ack_acknowledged() -> None:
    """ns-3's settings keep ``segsAcked``, the 21 segments the cumulative ACK moved over (NewReno's avoidance then
    takes one an ACK: 1/14)."""
    st = _recovering("newreno", ns3=True)
    on_ack(st, 0, 1.0, SACKED_IN_RECOVERY + 1, -1, 0.97, 0.97)
    assert st.fs[0, L.CWND] == pytest.approx(SSTHRESH + 1.0 / SSTHRESH)


def test_a_duplicate_ack_without_sack_does_not_grow_the_window() -> None:
    """Without SACK a duplicate ACK counts one segment delivered (Linux ``tcp_add_reno_sack``) but moves no cumulative
    ACK, so Linux does not grow on it (``FLAG_DATA_ACKED`` unset)."""
    st = build_state(LINK, [FlowSpec("newreno", 0.03, sack=False)], SimConfig(2.0))
    fi, fs = st.fi[0], st.fs[0]
    fi[L.UNA], fi[L.NXT], fi[L.PIPE], fi[L.SENT], fi[L.STARTED] = 0, 10, 10, 10, 1
    fs[L.CWND], fs[L.SSTHRESH], fs[L.SRTT], fs[L.RTT_MIN], fs[L.RTO] = 10.0, 5.0, 0.03, 0.03, 0.23
    on_ack(st, 0, 1.0, 0, -1, 0.97, 0.97)
    assert fi[L.DUPS] == 1
    assert fs[L.CWND] == 10.0
