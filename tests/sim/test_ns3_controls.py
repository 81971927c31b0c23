"""H-TCP and CUBIC as ns-3.37 runs them (``TcpHtcp``, ``TcpCubic``; the ``ns3`` growth parameter, which the
simulation's ns-3 settings ``NS3_PARAMS`` set) on states checkable by hand, and in the loop: the ns-3 variants
are taken where ns-3's settings are, Linux's rules everywhere else."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.sim import model
from ackreplay.sim.controls import CNT_NS3, EPOCH, K_CUBIC, N_AP, ORIGIN, P_BETA, P_NS3, W_MAX, avoid_increment
from ackreplay.sim.htcp import (
    H3_BETA,
    H3_DATA,
    H3_LAST_CON,
    H3_LAST_THR,
    H_FRESH,
    H_MAXRTT,
    H_MINRTT,
    htcp_ns3_ack,
    htcp_ns3_increment,
    htcp_ns3_ssthresh,
)
from ackreplay.sim.layout import CUBIC, CWND, N_FS, RTT_MIN
from ackreplay.sim.model import FlowSpec, Link, SimConfig, simulate
from ackreplay.whatif.runs import run_one
from tests.whatif.self_checks import DATA, Checked, checked

MSS = 1448.0


def _row(cwnd: float, **cols: float) -> np.ndarray:
    fs = np.zeros((1, N_FS))
    fs[0, CWND] = cwnd
    for col, value in cols.items():
        fs[0, int(col.removeprefix("c"))] = value
    return fs


@pytest.mark.parametrize(("since", "beta", "adder_bytes"), [
    (0.5, 0.5, 15.0),    # Δ ≤ Δ_L: α = 2(1 − 0.5)·1 = 1 byte; ⌊1448/100 + 1⌋ = 15
    (3.0, 0.5, 36.0),    # α(Δ) = 1 + 10·2 + 0.25·2² = 22 bytes, not segments; ⌊14.48 + 22⌋ = 36
    (3.0, 0.75, 25.0),   # α = 2(1 − 0.75)·22 = 11: ⌊25.48⌋
    (3.0, 0.0, 58.0),    # before the first loss m_beta is 0: α = 2·22 = 44
])
def test_ns3_htcp_adds_alpha_bytes_an_ack_unscaled_by_the_rtt(since: float, beta: float, adder_bytes: float) -> None:
    """``TcpHtcp::CongestionAvoidance``: ⌊max(1, MSS²/cwnd + α)⌋ bytes once an ACK (cwnd 100 segments), where
    Linux's H-TCP adds α segments a window (22 at Δ = 3 s: 0.22 of a segment an ACK, against ns-3's 0.025)."""
    fs = _row(100.0, **{f"c{H3_LAST_CON}": 10.0, f"c{H3_BETA}": beta})
    assert htcp_ns3_increment(fs, 0, 10.0 + since, MSS) == pytest.approx(adder_bytes / MSS)


@pytest.mark.parametrize(("epoch_bytes", "last", "adapts"), [
    (1.5e6, 1.0e6, True),    # throughput rose by 50 %: ⌊0.5⌋ = 0 ≤ 0.2, β = RTTmin/RTTmax unclamped (0.9 > 0.8)
    (2.5e6, 1.0e6, False),   # rose by 150 %: ⌊1.5⌋ = 1 > 0.2, DefaultBackoff 0.5
    (0.95e6, 1.0e6, False),  # fell by 5 % (Linux's H-TCP would adapt): DefaultBackoff
    (1.5e6, 0.0, False),     # the first loss: no throughput before
])
def test_ns3_htcp_adapts_beta_only_when_the_throughput_rose(epoch_bytes: float, last: float, adapts: bool) -> None:
    """``TcpHtcp::UpdateBeta`` (its integer division) and ``GetSsThresh``: β·BytesInFlight of the window the
    stack hands it (60 segments here, cwnd 100), a new epoch (bytes, RTTs and Δ restarted)."""
    fs = _row(100.0, **{f"c{H3_LAST_CON}": 9.0, f"c{H3_DATA}": epoch_bytes, f"c{H3_LAST_THR}": last,
                        f"c{H_MINRTT}": 0.09, f"c{H_MAXRTT}": 0.1, f"c{H_FRESH}": 1.0})
    beta = 0.09 / 0.1 if adapts else 0.5
    assert htcp_ns3_ssthresh(fs, 0, 10.0, 60.0, MSS, 0.5, 0.2) == pytest.approx(np.floor(60 * MSS * beta) / MSS)
    assert fs[0, H3_BETA] == beta and fs[0, H3_LAST_THR] == epoch_bytes and fs[0, H3_LAST_CON] == 10.0
    assert fs[0, H3_DATA] == 0.0 and fs[0, H_FRESH] == 0.0


def test_ns3_htcp_takes_the_epochs_rtts_and_counts_bytes_outside_recovery_only() -> None:
    fs = _row(100.0)
    for srtt, in_recovery in ((0.08, False), (0.07, True), (0.11, False)):
        htcp_ns3_ack(fs, 0, srtt, MSS, in_recovery)
    assert (fs[0, H_MINRTT], fs[0, H_MAXRTT], fs[0, H3_DATA]) == (0.07, 0.11, 2 * MSS)


def _cubic(cwnd: float, w_max: float, credit: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    fs = _row(cwnd, **{f"c{W_MAX}": w_max, f"c{EPOCH}": -1.0, f"c{RTT_MIN}": 0.06, f"c{CNT_NS3}": credit})
    ap = np.zeros((1, N_AP))
    ap[0, P_NS3] = 1.0
    return fs, ap


def test_ns3_cubic_counts_acked_segments_up_to_its_whole_segment_cnt() -> None:
    """``TcpCubic::Update`` after a loss at 59 (W_max 59, cwnd 41): K = ∛(18/0.4), the target ⌊0.4·(K − t)³⌋
    below the origin, cnt = ⌊41/(target − 41)⌋; a segment is added once that many are acknowledged."""
    fs, ap = _cubic(41.0, 59.0)
    k = (18 / 0.4) ** (1 / 3)
    target = 59 - np.floor(0.4 * (k - 0.06) ** 3)
    cnt = np.floor(41 / (target - 41))
    acks = int(np.ceil(cnt / 2))  # two segments an ACK
    steps = [avoid_increment(CUBIC, fs, ap, 0, 2.0, 5.0, MSS) for _ in range(acks)]
    assert fs[0, K_CUBIC] == pytest.approx(k) and fs[0, ORIGIN] == 59.0 and fs[0, EPOCH] == 5.0
    assert steps == [0.0] * (acks - 1) + [1.0] and fs[0, CNT_NS3] == 2 * acks - cnt


def test_ns3_cubic_has_no_reno_friendly_region_and_keeps_its_count() -> None:
    """At the origin (target = cwnd) ns-3's cnt is 100·cwnd: no growth for 3 999 segments where RFC 9438's
    Reno-friendly W_est would add 0.53 a window, and ``m_cWndCnt`` (never reset) carries what it counted."""
    fs, ap = _cubic(40.0, 40.0, credit=3990.0)
    assert avoid_increment(CUBIC, fs, ap, 0, 2.0, 5.0, MSS) == 0.0 and fs[0, CNT_NS3] == 3992.0
    assert sum(avoid_increment(CUBIC, fs, ap, 0, 2.0, 5.0, MSS) for _ in range(4)) == 1.0
    ap[0, P_NS3], ap[0, P_BETA] = 0.0, 0.7
    linux = _cubic(40.0, 40.0)[0]  # W_est: a window's ACKs add 3(1 − β)/(1 + β) = 0.53 of a segment
    assert avoid_increment(CUBIC, linux, ap, 0, 40.0, 5.0, MSS) == pytest.approx(0.9 / 1.7)


def test_the_ns3_variants_are_ns3s_settings_only() -> None:
    assert model.NS3_PARAMS["htcp"] == {"ns3": 1.0} and model.NS3_PARAMS["cubic"] == {"ns3": 1.0}
    assert model.GROWTH_PARAMS["htcp"]["ns3"] == 0.0 and model.GROWTH_PARAMS["cubic"]["ns3"] == 0.0


@pytest.mark.parametrize("control", ["htcp", "cubic"])
def test_a_flow_runs_linuxs_rules_unless_given_ns3s(control: str) -> None:
    """The default run is Linux's control (the same as ``ns3`` 0), and ns-3's variant differs from it."""
    link = Link(10e6, buffer_packets=6, overhead_bytes=model.NS3_OVERHEAD)
    cfg = SimConfig(20.0, min_rto_s=model.NS3_MIN_RTO_S, delack_timeout_s=model.NS3_DELACK_S, ns3_ack_counting=True)

    def run(params: dict[str, float]) -> tuple[int, int]:
        r = simulate(link, [FlowSpec(control, 0.06, 0.16, params)], cfg).flows[0]
        return r.delivered_bytes, r.loss_events

    assert run({}) == run({"ns3": 0.0}) != run({"ns3": 1.0})


def _ok(name: str) -> Checked:
    got = checked(DATA / "ns3" / f"{name}.pcap.gz")
    assert isinstance(got, Checked), got
    return got


@pytest.mark.parametrize("name", ["htcp_1f_bdp01", "htcp_1f_bdp1", "htcp_2f_bdp1"])
def test_linuxs_htcp_does_not_reproduce_an_ns3_htcp_capture(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the same inferred path, with ns-3's stack, the Linux H-TCP gets 1.4–1.6 times the loss events of ns-3's
    captured flow (its α in segments a window, scaled by the RTT), where ns-3's own variant (the self-check's)
    gets them within 30 %."""
    got = _ok(name)
    ns3 = run_one(got.path.central, "htcp", got.captured.span_s, 1, True, got.cross)[0]
    monkeypatch.setitem(model.NS3_PARAMS, "htcp", {"ns3": 0.0})
    linux = run_one(got.path.central, "htcp", got.captured.span_s, 1, True, got.cross)[0]
    assert linux.loss_events > 1.3 * got.captured.loss_events
    assert abs(ns3.loss_events / got.captured.loss_events - 1) <= 0.3 and got.check.passed
