"""Which RTT sample an ACK gives HyStart (``sim.sender.on_ack``): Linux gives CUBIC ``ca_rtt_us``, the RTT of the
last segment the ACK newly acknowledges (``tcp_clean_rtx_queue``'s ``last_ackt``, the rate sample's ``rtt_us`` that
``cubictcp_acked`` passes to delay_min and ``hystart_update``), while SRTT takes ``seq_rtt_us``, that of the first
(``first_ackt``). On a delayed ACK of two segments they part by the time between the two segments' sending."""

from __future__ import annotations

import pytest

from ackreplay.sim import layout as L
from ackreplay.sim.hystart import HS_CURR, HS_DMIN
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state
from ackreplay.sim.sender import on_ack

FIRST_SENT, LAST_SENT, NOW = 0.050, 0.053, 0.100


def test_hystart_takes_the_last_segments_rtt_and_srtt_the_firsts() -> None:
    """Segments 0 and 1 sent 3 ms apart, one delayed ACK for both at 100 ms: SRTT's first sample is 50 ms (the
    first segment's), delay_min and the round's least RTT 47 ms (the second's)."""
    st = build_state(Link(10e6, buffer_packets=100), [FlowSpec("cubic", 0.04, params={"hystart": 2.0})],
                     SimConfig(1.0))
    fi, fs = st.fi[0], st.fs[0]
    st.seg[0, :2] = L.IN_FLIGHT
    fi[L.UNA], fi[L.NXT], fi[L.PIPE], fi[L.SENT], fi[L.STARTED], fi[L.RTO_ARMED] = 0, 2, 2, 2, 1, 1
    fs[L.CWND] = 20.0
    on_ack(st, 0, NOW, 2, -1, FIRST_SENT, LAST_SENT)
    assert fs[L.SRTT] == pytest.approx(NOW - FIRST_SENT)
    assert fs[HS_DMIN] == pytest.approx(NOW - LAST_SENT)
    assert fs[HS_CURR] == pytest.approx(NOW - LAST_SENT)
