"""The retransmission timer's floor: Linux applies ``TCP_RTO_MIN`` to the variance term (RTO = SRTT +
max(4·RTTVAR, 200 ms): ``tcp_rtt_estimator`` keeps ``rttvar_us`` at least ``mdev_max_us``, restarted from
``tcp_rto_min_us`` every round trip, and ``__tcp_set_rto`` adds it to SRTT); RFC 6298 §2.4 and ns-3 to the whole
(RTO = max(SRTT + 4·RTTVAR, 1 s))."""

from __future__ import annotations

import pytest

from ackreplay.sim import layout as L
from ackreplay.sim.model import FlowSpec, Link, SimConfig, build_state
from ackreplay.sim.sender import rtt_sample

LINK = Link(3e6, buffer_packets=80)


def _rto_after(samples: list[float], cfg: SimConfig) -> float:
    st = build_state(LINK, [FlowSpec("cubic", 0.3)], cfg)
    for r in samples:
        rtt_sample(st, 0, r)
    return float(st.fs[0, L.RTO])


def test_linux_adds_the_floor_to_srtt_where_rfc_6298_takes_the_larger() -> None:
    """A steady 300-ms round trip: Linux's RTO is SRTT + 200 ms, where the RFC's floor would leave it a few ms
    above SRTT — below the round trip a queue filling in one more round trip reaches (a spurious timeout on
    ``paths/r3_rtt300_b1``'s path, 3 Mbit/s, 300 ms, one BDP of buffer: the capture has none)."""
    steady = [0.3] * 200
    linux = _rto_after(steady, SimConfig(5.0))
    assert linux == pytest.approx(0.5, abs=0.002)
    ns3 = _rto_after(steady, SimConfig(5.0, min_rto_s=1.0, ns3_ack_counting=True))
    assert ns3 == pytest.approx(1.0)
    rfc_like = _rto_after(steady, SimConfig(5.0, min_rto_s=0.2, ns3_ack_counting=True))
    assert rfc_like == pytest.approx(0.3, abs=0.005)  # (the RFC's rule at Linux's floor: no headroom)
    varied = [0.3, 0.5] * 50  # 4·RTTVAR above the floor: the same either way
    rfc = _rto_after(varied, SimConfig(5.0, ns3_ack_counting=True))
    assert _rto_after(varied, SimConfig(5.0)) == pytest.approx(rfc) and rfc > 0.7
