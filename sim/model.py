"""The simulation's Python face: a path (``Link``), the flows on it (``FlowSpec``), the sender's and receiver's
settings (``SimConfig``) in; each flow's goodput, losses, retransmissions, queueing delay and series out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ackreplay.estimators.base import Estimator
from ackreplay.estimators.params import EstimatorError
from ackreplay.estimators.registry import create, names
from ackreplay.sim import layout as L
from ackreplay.sim.bbr import bbr_row
from ackreplay.sim.bbr_layout import N_BBR, N_TX
from ackreplay.sim.controls import (
    EPOCH,
    N_AP,
    P_AI,
    P_BETA,
    P_BETA_MAX,
    P_BETA_MIN,
    P_FAST,
    P_FLOOR,
    P_GAIN,
    P_HDEC,
    P_HIGH,
    P_HYSTART,
    P_LOW,
    P_NS3,
    P_RTT_STEP,
    P_SMOOTH,
    P_THR_RATIO,
    P_WIN,
    control_code,
)
from ackreplay.sim.engine import resume, run_loop, seed_random
from ackreplay.sim.external import ExternalControl, ExternalDecision
from ackreplay.sim.state import SimState
from ackreplay.sim.streams import heap_update, new_heap

#: The loss-based controls the loop runs, by their estimator names: each backs off at a loss by its own rule.
LOSS_BASED = ("newreno", "westwood_plus", "cubic", "bic", "stcp", "hstcp", "htcp")
#: Every control the loop runs: the loss-based ones and ``bbr`` (BBR v1 whole, sim/bbr.py: it paces at its model
#: of the path instead of backing off; the replay's ``bbr_bw`` is its bandwidth filter only).
CONTROLS = (*LOSS_BASED, "bbr")


def controllable() -> tuple[str, ...]:
    """Every name ``FlowSpec.control`` takes: the compiled ``CONTROLS``, then every other registered estimator
    (plugins included), which grows as NewReno does and takes its own decision at each loss from its estimate of
    the ACKs its sender received (``ackreplay.sim.external``)."""
    return CONTROLS + tuple(n for n in names() if n not in CONTROLS)

#: ns-3.37's stack where it departs from Linux's and from the loop's defaults — the settings a run meant to match an
#: ns-3 scenario takes, besides ``SimConfig.ns3_ack_counting``: RTO floor 1 s (TcpSocketBase MinRto), delayed-ACK
#: timeout 0.2 s (TcpSocket DelAckTimeout), PPP's 2 bytes on the wire besides IP, TCP and timestamps (54 bytes of
#: overhead a packet), Scalable TCP's AIFactor 50 and BIC's SmoothPart 5, and H-TCP and CUBIC as ns-3's own
#: ``TcpHtcp`` and ``TcpCubic`` run them (``ns3``: sim/htcp.py, ``_cubic_ns3_avoid`` of sim/controls.py).
NS3_MIN_RTO_S, NS3_DELACK_S, NS3_OVERHEAD = 1.0, 0.2, 54
NS3_PARAMS = {"stcp": {"ai_count": 50.0}, "bic": {"smooth_part": 5.0}, "htcp": {"ns3": 1.0}, "cubic": {"ns3": 1.0}}

#: Growth parameters the loop has beyond the replay's decision parameters (``FlowSpec.params``), and defaults:
#: STCP's ``ai_count`` (Kelly 2003: a = 0.01, one segment per 100 acknowledged; ns-3's AIFactor is 50) and
#: BIC's ``smooth_part`` (Linux tcp_bic.c 20; ns-3's SmoothPart 5), CUBIC's ``hystart`` (1: Linux's HyStart,
#: sim/hystart.py, as Linux runs it before a 2025 fix; 2: as since that fix (6.14 on), rounds from the first
#: ACK; 0: slow start until the first loss; off with ns-3's settings), and
#: ``ns3`` of H-TCP and CUBIC (0: Linux's and the papers' rules; 1: ns-3.37's ``TcpHtcp`` and ``TcpCubic``).
GROWTH_PARAMS = {"stcp": {"ai_count": 100.0}, "bic": {"smooth_part": 20.0}, "cubic": {"hystart": 1.0, "ns3": 0.0},
                 "htcp": {"ns3": 0.0}}


class SimError(ValueError):
    """A simulation asked for with figures it cannot run (``code``: machine-readable)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Link:
    """The bottleneck: rate (bit/s), a drop-tail buffer of packets and/or bytes (waiting, the packet being sent
    not counted), Bernoulli loss on data before it, and the bytes of headers each packet adds to its MSS."""

    rate_bps: float
    buffer_packets: int | None = None
    buffer_bytes: int | None = None
    loss: float = 0.0
    overhead_bytes: int = 52  # IPv4 20 + TCP 20 + timestamps 12


@dataclass(frozen=True)
class FlowSpec:
    """One bulk sender: its control, base RTT (half each way), start time and the control's parameters (the
    replay's defaults, ``ackreplay.estimators``, unless given here; the loop's growth parameters of
    ``GROWTH_PARAMS`` too)."""

    control: str
    rtt_s: float
    start_s: float = 0.0
    params: dict[str, float] = field(default_factory=dict)
    #: Decide through the registered estimator of this name in Python, growing as NewReno does, even where the
    #: loop has the control compiled (always so for a name outside ``CONTROLS``): ``westwood_plus`` so is the
    #: replay's Westwood+ in control, a check of the compiled one.
    external: bool = False
    #: The TCP options the connection negotiated: SACK (RFC 2018; without it NewReno's recovery, RFC 6582, as
    #: Linux runs it: ``sim/dupacks.py``) and timestamps (RFC 7323; without them RTT samples follow Karn's rule).
    sack: bool = True
    timestamps: bool = True
    #: The receive window its receiver offers, segments (None: ``SimConfig.rwnd_segments``, the run's): the
    #: sender sends nothing beyond the cumulative ACK + this window.
    rwnd_segments: int | None = None
    #: Linux's internal pacing (``sim/pacing.py``): the sender's socket was marked for pacing (an fq qdisc, or a
    #: control such as BBR set on it first), so it spreads its segments at 200 % (slow start) or 120 % of
    #: cwnd/SRTT instead of sending what the window allows at once. A ``bbr`` flow always paces, at BBR's rate.
    pacing: bool = False
    #: Random drops replayed (int8, one per segment from the first: k ≥ 0 drops the segment's first k
    #: transmissions at the random loss and no later one; −1 leaves it to the link's Bernoulli loss, as for every
    #: segment beyond): a capture's realised draw (``ackreplay.path.drops``), so that runs meet the same drops —
    #: a re-enactment the capture's, several controls each other's. None: Bernoulli throughout.
    loss_fates: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def decided_outside(self) -> bool:
        """Whether the loop pauses for this flow's decisions (``ackreplay.sim.external``)."""
        return self.external or self.control not in CONTROLS


@dataclass(frozen=True)
class SimConfig:
    """Sender and receiver: MSS, initial window (RFC 6928), delayed ACKs (every ``delack_count``-th segment or
    after ``delack_timeout_s``), RTO floor (Linux 0.2 s; RFC 6298 and ns-3: 1 s), receive window.
    ``ns3_ack_counting``: ns-3.37's stack instead of Linux's: grow as ns-3 does (one segment an ACK in slow
    start, NewReno's, Westwood+'s and H-TCP's avoidance once an ACK) instead of Linux's count of the segments each
    ACK acknowledges, and multiply ns-3's bytes in flight at a loss (NewReno, STCP, HSTCP) instead of Linux's
    cwnd (``sim.sender.loss_window``)."""

    duration_s: float
    mss: int = 1448
    initial_window: int = 10
    delack_count: int = 2
    delack_timeout_s: float = 0.04
    min_rto_s: float = 0.2
    initial_rto_s: float = 1.0
    rwnd_segments: int = 16384
    samples: int = 1000
    seed: int = 1
    ns3_ack_counting: bool = False


@dataclass(frozen=True)
class FlowResult:
    """One flow's outcome. ``series``: time (s), cwnd and flight (segments), queue (bytes), downsampled."""

    control: str
    goodput_bps: float
    delivered_bytes: int
    loss_events: int
    timeouts: int
    retransmissions: int
    segments_sent: int
    mean_queue_delay_s: float
    p95_queue_delay_s: float
    series: dict[str, np.ndarray]
    #: An external control's decision at each of its loss events (none for the compiled ones).
    decisions: tuple[ExternalDecision, ...] = ()
    #: The flow's packets the drop-tail buffer dropped because it was full (random drops not counted).
    overflow_drops: int = 0


@dataclass(frozen=True)
class SimResult:
    """Each flow's outcome, the events handled, and the bottleneck's mean backlog: the packets waiting (the one
    being sent not counted), averaged over the run (Little's law: the waiting times of all packets summed,
    over the duration)."""

    flows: list[FlowResult]
    events: int
    mean_queue_packets: float = math.nan


def _check(link: Link, flows: list[FlowSpec], cfg: SimConfig) -> None:
    problems = []
    if not flows:
        problems.append(("no_flows", "at least one flow is needed"))
    if not (link.rate_bps > 0 and math.isfinite(link.rate_bps)):
        problems.append(("bad_rate", f"the link rate must be a positive number of bit/s, not {link.rate_bps!r}"))
    if link.buffer_packets is None and link.buffer_bytes is None:
        problems.append(("no_buffer", "give the buffer in packets or bytes (or both)"))
    if (link.buffer_packets or 0) < 0 or (link.buffer_bytes or 0) < 0:
        problems.append(("bad_buffer", "the buffer cannot be negative"))
    if not 0.0 <= link.loss < 1.0:
        problems.append(("bad_loss", f"the random loss must be in [0, 1), not {link.loss!r}"))
    if not 0 < cfg.duration_s <= 3600 or cfg.mss < 1 or cfg.initial_window < 1 or cfg.samples < 1:
        problems.append(("bad_config", "duration in (0, 3600] s, MSS, initial window and samples ≥ 1"))
    known = controllable()
    for fl in flows:
        if fl.control not in known:
            problems.append(("unknown_control", f"{fl.control!r} is not one of {', '.join(known)}"))
        if not (fl.rtt_s > 0 and math.isfinite(fl.rtt_s)) or fl.start_s < 0:
            problems.append(("bad_flow", f"a flow's RTT must be > 0 and its start ≥ 0 ({fl.rtt_s!r}, {fl.start_s!r})"))
        if fl.rwnd_segments is not None and not 1 <= fl.rwnd_segments <= cfg.rwnd_segments:
            problems.append(("bad_flow", f"a flow's receive window must be 1 to {cfg.rwnd_segments} segments "
                                         f"(the run's), not {fl.rwnd_segments!r}"))
        if fl.loss_fates is not None and (np.ndim(fl.loss_fates) != 1 or not np.all(
                (np.asarray(fl.loss_fates) >= -1) & (np.asarray(fl.loss_fates) <= 127))):
            problems.append(("bad_flow", "a flow's replayed drops are one count a segment, from −1 (none "
                                         "replayed) to 127"))
    if problems:
        raise SimError(problems[0][0], "; ".join(m for _, m in problems))


def _control_params(fl: FlowSpec) -> np.ndarray:
    """The control's parameters as ``ap`` columns: the replay's defaults (its registry), then ``fl.params``."""
    row = np.zeros(N_AP)
    own = dict(fl.params)
    if fl.decided_outside:
        external_estimator(fl)
        return row
    growth = {k: float(own.pop(k, v)) for k, v in GROWTH_PARAMS.get(fl.control, {}).items()}
    known = create(fl.control).params if fl.control not in ("newreno", "bbr") else {}
    unknown = set(own) - set(known)
    if unknown:
        raise SimError("unknown_parameter", f"{fl.control} has no parameter {', '.join(sorted(unknown))}")
    p = {**known, **own}
    row[P_BETA] = p.get("b", p.get("beta", 0.0))
    row[P_LOW] = p.get("low_window", 0.0)
    row[P_HIGH] = p.get("high_window", 0.0)
    row[P_HDEC] = p.get("high_decrease", 0.0)
    row[P_FAST] = 1.0 if p.get("fast_convergence", False) else 0.0
    row[P_FLOOR] = 1.0 if p.get("floor_half", False) else 0.0
    row[P_WIN] = p.get("min_window", 0.0)
    row[P_GAIN] = p.get("gain", 0.0)
    row[P_AI] = growth.get("ai_count", 0.0)
    row[P_SMOOTH] = growth.get("smooth_part", 0.0)
    row[P_HYSTART] = growth.get("hystart", 0.0)
    row[P_NS3] = growth.get("ns3", 0.0)
    if fl.control == "htcp":
        row[P_BETA_MIN], row[P_BETA_MAX] = p["beta_min"], p["beta_max"]
        row[P_THR_RATIO], row[P_RTT_STEP] = p["throughput_ratio"], p["max_rtt_step"]
    return row


def external_estimator(fl: FlowSpec) -> Estimator:
    """The registered estimator an external flow decides with, its parameters checked."""
    try:
        return create(fl.control, **fl.params)
    except EstimatorError as exc:
        raise SimError(exc.code, exc.message) from None


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()


def _globals(link: Link, cfg: SimConfig) -> np.ndarray:
    g = np.zeros(L.N_G)
    wire = cfg.mss + link.overhead_bytes
    g[L.RATE], g[L.END], g[L.WIRE], g[L.LOSS_P] = link.rate_bps, cfg.duration_s, wire, link.loss
    g[L.BUF_PKTS] = np.inf if link.buffer_packets is None else link.buffer_packets
    g[L.BUF_BYTES] = np.inf if link.buffer_bytes is None else link.buffer_bytes
    g[L.DELACK_T], g[L.MIN_RTO], g[L.INIT_RTO] = cfg.delack_timeout_s, cfg.min_rto_s, cfg.initial_rto_s
    g[L.RWND], g[L.IW], g[L.SAMPLE_DT] = cfg.rwnd_segments, cfg.initial_window, cfg.duration_s / cfg.samples
    g[L.DELACK_COUNT], g[L.MSS], g[L.QD_BIN] = cfg.delack_count, cfg.mss, 1e-4
    g[L.PER_ACK] = 1.0 if cfg.ns3_ack_counting else 0.0
    return g


def _flow_columns(flows: list[FlowSpec], cfg: SimConfig) -> np.ndarray:
    """Start and one-way delays (half the base RTT each way: the ACK path is uncongested, so only the sum and
    the forward part's place before the receiver matter), the options SACK and timestamps, the receive window."""
    out = np.zeros((len(flows), L.N_FLOW))
    for f, fl in enumerate(flows):
        out[f, L.START], out[f, L.PROP_FWD], out[f, L.PROP_REV] = fl.start_s, fl.rtt_s / 2, fl.rtt_s / 2
        out[f, L.SACK_OK], out[f, L.TS_OK] = float(fl.sack), float(fl.timestamps)
        out[f, L.RWND_SEGS] = cfg.rwnd_segments if fl.rwnd_segments is None else fl.rwnd_segments
        out[f, L.PACING] = float(fl.pacing or fl.control == "bbr")  # (bbr_init marks its socket for pacing)
    return out


def build_state(link: Link, flows: list[FlowSpec], cfg: SimConfig) -> SimState:
    """The arrays of a run, every flow before its start."""
    _check(link, flows, cfg)
    n = len(flows)
    g = _globals(link, cfg)
    wire = g[L.WIRE]
    segs = int(link.rate_bps * cfg.duration_s / 8 / wire) + cfg.rwnd_segments + cfg.initial_window + 16
    ring = _pow2(2 * cfg.rwnd_segments + 64)
    queue = min(link.buffer_packets if link.buffer_packets is not None else 1 << 30,
                int(link.buffer_bytes // wire) if link.buffer_bytes is not None else 1 << 30)
    logged = 3 * segs // 2 + 1024 if any(fl.decided_outside for fl in flows) else 1
    fi = np.zeros((n, L.N_FI), np.int64)
    fi[:, [L.H1, L.H2, L.H3, L.HI_LOST]] = -1
    fs = np.zeros((n, L.N_FS))
    fs[:, L.CWND], fs[:, L.SSTHRESH], fs[:, L.RTO_AT] = cfg.initial_window, np.inf, np.inf
    heap, pos, key = new_heap(n * L.N_STREAMS)
    state = SimState(
        fi=fi, fs=fs, g=g, flow=_flow_columns(flows, cfg),
        alg=np.array([L.EXTERNAL if fl.decided_outside else control_code(fl.control) for fl in flows], np.int64),
        ap=np.array([_control_params(fl) for fl in flows]).reshape(n, N_AP),
        seg=np.zeros((n, segs), np.int8), got=np.zeros((n, segs), np.bool_),
        dqf=np.zeros((n, ring, 2)), dqs=np.zeros((n, ring), np.int64), aqf=np.zeros((n, ring, 3)),
        aqi=np.zeros((n, ring, 2), np.int64), ring=np.zeros((n, 6), np.int64),
        rqs=np.zeros((n, ring), np.int64), rqt=np.zeros((n, ring)), heap=heap, pos=pos, key=key,
        qf=np.zeros(_pow2(queue + 4)), qi=np.zeros(2, np.int64), last_fin=np.zeros(1),
        qd_hist=np.zeros((n, L.QD_BINS), np.int64), ts=np.zeros((n, cfg.samples, 4)),
        tally=np.zeros(L.N_TALLY, np.int64), alog=np.zeros((n, logged, L.N_LOG)), slog=np.zeros((n, logged, 2)),
        fate=_fates(flows),
        bbr=np.array([bbr_row(fl.rtt_s, fl.start_s, cfg.initial_window) if fl.control == "bbr" else np.zeros(N_BBR)
                      for fl in flows]).reshape(n, N_BBR),
        tx=np.zeros((n, ring if any(fl.control == "bbr" for fl in flows) else 1, N_TX)))
    fs[state.alg == L.CUBIC, EPOCH] = -1.0  # no congestion-avoidance epoch yet (Linux: epoch_start 0)
    for f, fl in enumerate(flows):
        heap_update(heap, pos, key, f * L.N_STREAMS + L.S_START, fl.start_s)
    return state


def _fates(flows: list[FlowSpec]) -> np.ndarray:
    """The flows' replayed random drops as one array (a row each, −1 where a flow has none: Bernoulli)."""
    width = max([1, *(len(fl.loss_fates) for fl in flows if fl.loss_fates is not None)])
    out = np.full((len(flows), width), -1, np.int8)
    for f, fl in enumerate(flows):
        if fl.loss_fates is not None:
            out[f, :len(fl.loss_fates)] = fl.loss_fates
    return out


def _p95(hist: np.ndarray, width: float) -> float:
    total = int(hist.sum())
    if total == 0:
        return math.nan
    k = int(np.searchsorted(np.cumsum(hist), math.ceil(0.95 * total)))
    return (k + 0.5) * width


def flow_results(state: SimState, flows: list[FlowSpec], cfg: SimConfig,
                 externals: dict[int, ExternalControl] | None = None) -> list[FlowResult]:
    """Each flow's figures from the arrays after a run (goodput: in-order bytes at the receiver over the time
    from the flow's start to the run's end; an external flow's decisions from ``externals``)."""
    out = []
    for f, fl in enumerate(flows):
        ext = (externals or {}).get(f)
        row = state.fi[f]
        n = int(row[L.SAMPLES])
        delivered = int(row[L.DELIVERED]) * cfg.mss
        span = cfg.duration_s - fl.start_s
        qn = int(row[L.QD_N])
        ts = state.ts[f, :n]
        out.append(FlowResult(
            control=fl.control, goodput_bps=8.0 * delivered / span if span > 0 else 0.0, delivered_bytes=delivered,
            loss_events=int(row[L.LOSS_EVENTS]), timeouts=int(row[L.TIMEOUTS]), retransmissions=int(row[L.RETRANS]),
            segments_sent=int(row[L.SENT]),
            mean_queue_delay_s=float(state.fs[f, L.QD_SUM] / qn) if qn else math.nan,
            p95_queue_delay_s=_p95(state.qd_hist[f], state.g[L.QD_BIN]),
            series={"t": ts[:, 0].copy(), "cwnd": ts[:, 1].copy(), "flight": ts[:, 2].copy(),
                    "queue_bytes": ts[:, 3].copy()},
            decisions=tuple(ext.decisions) if ext is not None else (), overflow_drops=int(row[L.OVERFLOWS])))
    return out


def simulate(link: Link, flows: list[FlowSpec], cfg: SimConfig) -> SimResult:
    """Run the flows through the link for ``cfg.duration_s`` simulated seconds (deterministic for ``cfg.seed``)."""
    state = build_state(link, flows, cfg)
    externals = {f: ExternalControl(external_estimator(fl), f, fl.start_s)
                 for f, fl in enumerate(flows) if fl.decided_outside}
    seed_random(cfg.seed)
    while True:
        run_loop(state)
        paused = int(state.tally[L.T_PAUSED])
        if not paused:
            break
        externals[paused - 1].decide(state, state.tally[L.T_KIND] == L.PAUSE_TIMEOUT)
        resume(state)
    if state.tally[L.T_OVERFLOW] == 1:
        raise SimError("window_too_large", "a flow's window outgrew the simulation's arrays: lower rwnd_segments "
                                           "or the buffer")
    if state.tally[L.T_OVERFLOW] == 2:
        raise SimError("log_too_large", "an external control's ACK log outgrew its arrays (a lossy path's "
                                        "retransmissions): shorten the run")
    backlog = float(state.fs[:, L.QD_SUM].sum() / cfg.duration_s)
    return SimResult(flow_results(state, flows, cfg, externals), int(state.tally[L.T_EVENTS]), backlog)
