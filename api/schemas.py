"""Response and request models (Pydantic) with examples: every JSON response of the API is one of these.

Documents whose keys follow the estimators (scores per estimator, a flow's summary fields) are typed to
the level their keys are fixed and keep further keys (``extra="allow"``), so that a new score or summary
field reaches clients without a schema change.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from ackreplay.core import bounds

#: A time in UTC with its offset (RFC 3339). SQLite hands timestamps back without their zone (found by the
#: schema fuzz test: "2026-11-23T08:55:38" is no `date-time`); they were stored in UTC.
Timestamp = Annotated[datetime, AfterValidator(lambda d: d if d.tzinfo else d.replace(tzinfo=UTC))]
RUN_ID = "5b7e2c4d9a1f4e8b8c3d2e1f0a9b8c7d"
CAPTURE_ID = "8c1d5e0f6a2b4c7d9e0f1a2b3c4d5e6f"
BATCH_ID = "0f9e8d7c6b5a49382716a5b4c3d2e1f0"
SCORES_EXAMPLE: dict[str, Any] = {"mean_bps": 2.63e6, "mean_signed_rel_error": 0.056, "mean_abs_rel_error": 0.144,
                                  "cov": 0.2, "convergence_s": 5.24, "decisions": 39, "parameters": {}}


class Open(BaseModel):
    """A document that may carry more keys than the ones listed."""

    model_config = ConfigDict(extra="allow")


class ErrorOut(BaseModel):
    """Every error: a stable machine-readable code and a message (or, for 422 validation errors, the list
    of the fields at fault)."""

    error: str = Field(description="stable machine-readable code", examples=["capture_not_found"])
    detail: Any = Field(description="what is wrong, for people", examples=["no capture 3f2a…"])


class CaptureOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str = Field(examples=[CAPTURE_ID])
    name: str = Field(examples=["s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap"])
    sha256: str = Field(examples=["9a3f0c…"])
    size_bytes: int = Field(examples=[894468])
    format: str = Field(description="pcap | pcapng | gzip (sniffed from the bytes)", examples=["pcap"])
    tags: list[str] = Field(examples=[["lab", "random-loss"]])
    truth: dict[str, Any] | None = Field(examples=[{"bottleneck_bps": 10e6, "shared_by": "all"}])
    status: str = Field(description="uploaded | ingested | failed", examples=["ingested"])
    error_code: str | None = Field(None, examples=[None])
    error: str | None = Field(None, examples=[None])
    stats: dict[str, Any] | None = Field(None, description="ingest statistics (packets, flows, skipped, …)",
                                         examples=[{"records": 7403, "flows": 3, "format": "pcap"}])
    created_at: Timestamp


class UploadOut(BaseModel):
    capture: CaptureOut
    created: bool = Field(description="false when the same bytes were uploaded before by the same owner")
    run_id: str | None = Field(None, description="the default run started for a new capture", examples=[RUN_ID])
    run_url: str | None = Field(None, examples=[f"/api/v1/runs/{RUN_ID}"])


class CapturePage(BaseModel):
    items: list[CaptureOut]
    total: int = Field(examples=[1])
    limit: int = Field(examples=[50])
    offset: int = Field(examples=[0])


class FlowOut(Open):
    """One flow as ingest saw it (``ackreplay flows --json``; every field in docs/ingest.md)."""

    flow_id: int = Field(examples=[2])
    sender: str = Field(examples=["10.201.1.1:40001"])
    receiver: str = Field(examples=["10.201.2.1:5201"])
    bytes: int = Field(examples=[2394112])
    goodput_bps: float = Field(description="bytes acknowledged × 8 / connection duration (tcptrace, Wireshark)",
                               examples=[2.35e6])
    delivery_rate_bps: float | None = Field(None, description="bytes acknowledged × 8 / (last ACK − first data)",
                                            examples=[2.558e6])
    rttmin_s: float | None = Field(examples=[0.0502])
    mss: int = Field(examples=[1448])
    loss_events: int = Field(examples=[39])
    retransmissions: int = Field(0, description="data segments sent again (not the reordered originals)",
                                 examples=[41])
    spurious_retransmissions: int = Field(0, description="retransmissions a D-SACK (RFC 2883) reported received "
                                          "twice", examples=[7])
    reordered_segments: int = Field(0, description="originals the path delivered after later segments (seen away "
                                    "from the sender; docs/ingest.md)", examples=[0])
    vantage: str = Field(description="sender | receiver | mid_path | unknown", examples=["sender"])
    vantage_position: float | None = Field(None, description="the share of the handshake's round trip between the "
                                           "sender and the capture point: 0 at the sender, 1 at the receiver, "
                                           "between for a tap; null without a usable handshake", examples=[0.0004])
    capture_position: float | None = Field(None, description="the connection's capture point, the same for both its "
                                           "directions: the share of the round trip between the client and it (0 "
                                           "at the client, 1 at the server); null without a usable handshake",
                                           examples=[0.0004])
    reconstruction: str | None = Field(
        None, description="how the sender's view was rebuilt for a flow not captured at the sender "
        "(docs/estimators.md §7): receiver_side, mid_path, or null", examples=["receiver_side"])
    reconstruction_sound: bool = Field(False, description="enough evidence (RTT samples) to replay it by default",
                                       examples=[True])
    reconstruction_evidence: str = Field("", examples=["receiver-side capture rebuilt as the sender saw it: "
                                                       "5321 RTT samples from data echoing ACK TSvals, …"])
    confidence: str | None = Field(None, description="medium | low, for a reconstructed flow", examples=["medium"])
    confidence_note: str = Field("", description="what the vantage point cannot see",
                                 examples=["ACKs lost on the return path are invisible at the receiver …"])


class FlowPage(BaseModel):
    """A page of a capture's flows, in flow order."""

    items: list[FlowOut]
    total: int = Field(examples=[3])
    limit: int = Field(examples=[500])
    offset: int = Field(examples=[0])
    next: str | None = Field(None, description="the next page, when there is one", examples=[None])


class SampleOut(BaseModel):
    t_rel: float = Field(examples=[12.30402])
    bps: float = Field(examples=[1.5445e10])
    interval_us: float = Field(examples=[3.0])
    bytes: int = Field(examples=[5792])
    cause: str = Field(description="ack_compression | stretch_ack | burst", examples=["ack_compression"])


class DiagnosticsOut(BaseModel):
    """Why a flow's estimates are what they are (docs/estimators.md §7; docs/estimators.md "Diagnostics")."""

    ack_compression_share: float | None = Field(None, description="share of ACK intervals under 100 µs",
                                                examples=[0.058])
    largest_samples: list[SampleOut] = Field(default_factory=list, description="BE's three largest raw samples")
    dispersion_capacity_bps: float | None = Field(None, examples=[9.8e6])
    dispersion_from: str | None = Field(None, description="data | acks", examples=["acks"])
    loss_classes: dict[str, Any] = Field(
        default_factory=dict, description="per classifier (crb, newbr): per_episode class, counts, and with "
        "labelled losses correct_share", examples=[{"crb": {"per_episode": {"0": "random"}, "congestion": 0,
                                                            "random": 1}}])
    ack_timing_seen_at: str | None = Field(None, description="off the sender only: where the ACK timing above was "
                                           "seen (receiver | mid_path | unknown) — the capture point's share, not "
                                           "the sender's", examples=["receiver"])
    not_reproducible: dict[str, str] = Field(default_factory=dict, description="off the sender: each estimator "
                                             "that depends on the ACKs' timing at the sender (BE, CRB), with why",
                                             examples=[{"be": "not reproducible from this vantage: …"}])


class LimitsOut(BaseModel):
    """What limited the flow's sender, round trip by round trip (docs/estimators.md "What limited the sender")."""

    shares: dict[str, float] = Field(default_factory=dict, description="each label's share of the flow's time "
                                     "(cwnd, rwnd, app, sndbuf, unknown; summing to 1)",
                                     examples=[{"cwnd": 0.69, "rwnd": 0.01, "app": 0.27, "sndbuf": 0.03,
                                                "unknown": 0.0}])
    intervals: list[tuple[float, float, str]] = Field(
        default_factory=list, description="[start, end, label] (s since the flow's first packet), consecutive "
        "round trips of one label merged", examples=[[[0.0, 1.25, "cwnd"], [1.25, 1.6, "app"]]])


class PathOut(BaseModel):
    """The path a flow crossed (docs/path.md §9; docs/estimators.md "The path")."""

    path: dict[str, Any] | None = Field(
        None, description="capacity_bps, capacity_hop, capture_link_bps, base_rtt_s, buffer_bytes, buffer_over_bdp, "
        "random_loss_rate, confidence, evidence (one sentence per figure; a null figure's says why)",
        examples=[{"capacity_bps": 1.0e7, "capacity_hop": "bottleneck", "capture_link_bps": None, "base_rtt_s": 0.0405,
                   "buffer_bytes": 50786, "buffer_over_bdp": 0.99, "random_loss_rate": 0.0, "confidence": "high",
                   "evidence": {}}])
    path_models: dict[str, Any] | None = Field(None, description="busy_link: the busy-link rule and single-flow "
                                               "model per congestion control (decrease b, busy_link iff "
                                               "B ≥ b/(1−b)·BDP, utilisation); share_model and "
                                               "share_model_floor_half: the NewReno/Westwood+ shares of C of Möller "
                                               "et al., NGI 2007, without and with Westwood+ floored at half its "
                                               "window; share_model_curve: both over a range of buffer/BDP; "
                                               "replayed: the busy-link rule for each replayed decision at the "
                                               "flow's losses (docs/models.md)")
    path_group: dict[str, Any] | None = Field(None, description="the flows sharing the bottleneck and their pooled "
                                              "path (null when the flow is alone); share_model: where a NewReno-like "
                                              "and a Westwood+-like sender share it, the model's shares beside the "
                                              "measured ones")


class XY(BaseModel):
    t: list[float] = Field(description="s since the flow's first packet")
    y: list[float | None]


class EpisodeOut(BaseModel):
    start: float
    end: float
    kind: str = Field(examples=["fast_retransmit"])
    count: int = Field(description="loss episodes merged into this one (closer than a pixel column)")
    first_frame: int | None = Field(None, description="frame number (in the capture file, as Wireshark numbers "
                                    "it) of the retransmission that opened the (first merged) episode",
                                    examples=[230])
    last_frame: int | None = Field(None, description="frame number of the packet that ended the (last merged) "
                                   "episode: the ACK reaching its recovery point, or the retransmission that timed "
                                   "out in it; null while open at the capture's end", examples=[430])
    retransmission_frames: list[int] = Field(default_factory=list, description="frame numbers of the episode's "
                                             "retransmitted segments", examples=[[230, 233]])


class GraphOut(BaseModel):
    """The congestion graph of one flow over a time window (graphs/congestion.py; docs/service.md)."""

    flow_id: int = Field(examples=[2])
    mss: int = Field(examples=[1448])
    replayed: bool = Field(True, description="false: the capture's panels alone (no rates, no estimators' marks)")
    t_span: list[float] = Field(description="the whole flow: first and last packet (s)", examples=[[0.0, 20.2]])
    window: list[float] = Field(description="the window drawn, [t0, t1] (s)", examples=[[0.0, 20.2]])
    px: int = Field(description="pixel columns: every series keeps ≤ 4 points per column (first, min, max, last)",
                    examples=[1200])
    full_resolution: bool = Field(description="true when no point of the window was left out", examples=[False])
    points: int = Field(examples=[52958])
    sequence: dict[str, Any] = Field(description="sent, retransmitted, ack, rwnd ({t, y}: bytes) and sack "
                                                 "({t, lo, hi}); sent, retransmitted and ack also carry frame: "
                                                 "each point's frame number in the capture file, as Wireshark "
                                                 "numbers it (null when unknown)")
    flight: dict[str, Any] = Field(description="flight ({t, y}: bytes), ideal ({t, y}) and estimators: "
                                               "name → {t: loss events (s), ssthresh (bytes), cwnd_t: when the "
                                               "cwnd takes effect (Westwood+: one RTT later), cwnd (bytes)}")
    flight_top: float | None = Field(None, description="the flight panel's top (bytes): 2 × the larger of the "
                                     "flight's 99th percentile and the largest ideal")
    flight_clipped: dict[str, XY] = Field(default_factory=dict, description="per estimator, its decisions "
                                          "(ssthresh or cwnd, bytes) above flight_top: marked at the edge")
    limits: list[tuple[float, float, str]] = Field(default_factory=list, description="what limited the sender "
                                                   "in the window: [start, end, label] (cwnd, rwnd, app, sndbuf, "
                                                   "unknown), the flight panel's shaded bands")
    rates: dict[str, XY] = Field(description="achieved, truth (when known) and each estimator (bit/s)")
    clipped: dict[str, XY] = Field(description="per estimator, the drawn points above y_top")
    y_top: float | None = Field(description="the rate panel's top (bit/s): 2 × the larger of the achieved "
                                            "rate's 99th percentile, the truth and the path's capacity")
    capacity_bps: float | None = Field(description="the path's capacity (packet-pair dispersion mode, §9)")
    rtt: dict[str, XY] = Field(description="samples, srtt and rttmin (ms)")
    queue: dict[str, Any] | None = Field(None, description="queue ({t, y}: (RTT − RTTmin)·capacity, bytes) and "
                                         "buffer_bytes (the path's inferred buffer); null without a capacity")
    episodes: list[EpisodeOut]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


def _parameters(value: dict[str, Any]) -> dict[str, Any]:
    """Estimator parameters: finite numbers (JSON has no NaN or infinity; the database refuses them), no NUL,
    at most ``MAX_PARAMETER_VALUES`` values nested at most ``bounds.MAX_DEPTH`` deep (walked without
    recursion: a deeply nested value must be a 422, not a stack overflow)."""
    try:
        return bounds.check(value, max_nodes=MAX_PARAMETER_VALUES)
    except bounds.JsonOutOfBounds as exc:
        raise ValueError(str(exc)) from None


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError("must not repeat an item")
    return values


#: Bounds of what a request may carry, mirroring the database's columns (ids are 32 hex digits, names
#: String(500), flow ids 32-bit integers, offsets 64-bit), so that the database never sees what it refuses.
ID_PATTERN = "^[0-9a-f]{32}$"
MAX_NAME = 500
MAX_FLOW_ID = (1 << 31) - 1
MAX_OFFSET = (1 << 63) - 1
MAX_TAGS, MAX_TAG = 100, 100
MAX_TRUTH = 1 << 20
MAX_RUN_CAPTURES = 1000
#: Values in one estimator's parameters: 100 parameters, each a value or a sweep's list of values.
MAX_PARAMETER_VALUES = 10_000
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Text = Annotated[str, AfterValidator(_no_nul)]
Parameters = Annotated[dict[str, Any], AfterValidator(_parameters)]


class EstimatorSpec(BaseModel):
    name: Annotated[Text, StringConstraints(min_length=1, max_length=40)] = Field(examples=["abse"])
    parameters: Parameters = Field(
        default_factory=dict, max_length=100, examples=[{"N": 12}, {"tau": [0.25, 0.5, 1, 2]}, {"tau": "0.1:2:0.1"}],
        description="parameter values; a list, a comma-separated string or START:STOP:STEP sweeps the parameter: "
                    "one variant per value, named e.g. re[tau=0.5] (at most 64)")


class EstimatorUsed(Open):
    """An estimator as a run used it; a sweep's variant also names its registry ``estimator``."""

    name: str = Field(examples=["re[tau=0.5]"])
    parameters: dict[str, Any] = Field(examples=[{"tau": 0.5, "pairing": True, "window": None}])


class RunIn(BaseModel):
    captures: Annotated[list[Id], AfterValidator(_unique)] = Field(
        min_length=1, max_length=MAX_RUN_CAPTURES, examples=[[CAPTURE_ID]],
        description=f"capture ids, each once (at most {MAX_RUN_CAPTURES})")
    estimators: list[Annotated[Text, StringConstraints(min_length=1, max_length=40)] | EstimatorSpec] | None = Field(
        None, max_length=100, examples=[["be", {"name": "abse", "parameters": {"N": 12}}]],
        description="names, group words (highspeed: the controls of docs/controls.md; all, default) or {name, "
                    "parameters}; default: the default set "
                    "(be, re, crb, abse, tibet, tibet_tx, newbr, westwood_plus, bbr_bw, newreno) with default "
                    "parameters")


class RunCreated(BaseModel):
    run_id: str = Field(examples=[RUN_ID])
    url: str = Field(examples=[f"/api/v1/runs/{RUN_ID}"])
    status: str = Field(examples=["queued"])


class Progress(BaseModel):
    tasks_done: int = Field(examples=[3])
    tasks_total: int = Field(examples=[3])


class Timings(BaseModel):
    ingest: float = Field(description="seconds spent ingesting", examples=[0.41])
    replay: float = Field(description="seconds spent replaying", examples=[0.93])


class RunCaptureStatus(BaseModel):
    capture_id: str = Field(examples=[CAPTURE_ID])
    status: str = Field(description="queued | replaying | succeeded | failed", examples=["succeeded"])
    error_code: str | None = Field(None, examples=[None])
    error: str | None = Field(None, examples=[None])
    skipped_flows: dict[str, str] = Field(description="flow id → why it was not replayed: the first 100 by flow id "
                                          "(all of them: `GET /runs/{id}/captures/{capture_id}/skipped`)",
                                          examples=[{"1": "vantage receiver: no reconstruction"}])
    skipped_total: int = Field(0, description="how many flows were not replayed", examples=[1])
    skipped_counts: dict[str, int] = Field(default_factory=dict, description="per kind of reason (the reason up to "
                                           "its first colon), how many flows", examples=[{"vantage receiver": 1}])


class RunStatusOut(BaseModel):
    id: str = Field(examples=[RUN_ID])
    status: str = Field(description="queued | running | succeeded | failed", examples=["succeeded"])
    is_default: bool
    estimators: list[EstimatorUsed]
    version: str = Field(examples=["0.1.0"])
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    error: str | None = Field(None, examples=[None])
    progress: Progress
    timings_s: Timings
    captures: list[RunCaptureStatus] = Field(description="one page of the run's captures (`offset`, `limit`)")
    captures_total: int = Field(0, description="how many captures the run has", examples=[1])
    offset: int = Field(0, examples=[0])
    limit: int = Field(100, examples=[100])
    next: str | None = Field(None, description="the next page of captures, when there is one",
                             examples=[None])
    waiting: str | None = Field(None, description="an unfinished run whose tasks wait for their turn (the workers "
                                "are shared fairly between owners), or whose work was lost (its worker died, its "
                                "broker message vanished) and is dispatched again, says so here",
                                examples=["1 task: its worker stopped (no heartbeat); dispatched again"])


class SkippedFlow(BaseModel):
    flow_id: int = Field(examples=[1])
    reason: str = Field(examples=["vantage receiver: no reconstruction"])


class FlowLimitShares(BaseModel):
    flow_id: int = Field(examples=[1])
    shares: dict[str, float] | None = Field(None, description="each label's share of the flow's time (cwnd, "
                                            "rwnd, app, sndbuf, unknown; summing to 1 within 1e-12); null for a "
                                            "run replayed before the service stored them",
                                            examples=[{"cwnd": 0.69, "rwnd": 0.01, "app": 0.27, "sndbuf": 0.03,
                                                       "unknown": 0.0}])


class RunFlowPage(BaseModel):
    """A page of some flows of one capture of a run, by flow id: how many there are, and the next page's URL."""

    total: int = Field(examples=[1])
    limit: int = Field(examples=[1000])
    offset: int = Field(examples=[0])
    next: str | None = Field(None, examples=[None])


class SkippedPage(RunFlowPage):
    """A page of the flows one capture of a run did not replay, by flow id."""

    items: list[SkippedFlow]


class LimitsPage(RunFlowPage):
    """A page of what limited the sender of each flow of one capture a run replayed, by flow id."""

    items: list[FlowLimitShares]


class RunSummaryOut(BaseModel):
    id: str = Field(examples=[RUN_ID])
    status: str = Field(examples=["succeeded"])
    is_default: bool
    batch_id: str | None = Field(None, examples=[None])
    created_at: Timestamp
    captures: list[str] = Field(description="the run's first 100 captures by name (all of them: "
                                "`GET /runs/{id}`, a page at a time)", examples=[[CAPTURE_ID]])
    capture_names: list[str] = Field(default_factory=list, description="the captures' names, in the order of "
                                     "captures", examples=[["sample.pcap"]])
    captures_total: int = Field(description="how many captures the run has", examples=[1])
    estimators: list[str] = Field(examples=[["be", "re", "abse"]])


class CaptureDocument(Open):
    capture_id: str = Field(examples=[CAPTURE_ID])
    file: str = Field(examples=["sample.pcap"])
    status: str = Field(examples=["succeeded"])
    error: str | None = None
    stats: dict[str, Any] | None = None
    truth: dict[str, Any] | None = None
    truth_source: str | None = Field(None, examples=["upload"])
    flows: list[dict[str, Any]] = Field(description="each flow's summary, `replayed`, `skipped_reason`, `scores` "
                                                    "per estimator, `score_window_rel_s` and `limits` (what limited "
                                                    "its sender: each label's share of its time), `comparable`, "
                                                    "`comparable_reason` and `frames` (the packets behind its "
                                                    "figures by frame number in the capture file: first_data, "
                                                    "last_ack, rtt_min; null for a flow not replayed)")
    scores: dict[str, Any] = Field(description="capture-level scores (fairness, means over bulk flows)")


class RunDocumentOut(BaseModel):
    """The run as ``ackreplay score --format json`` prints the same captures (docs/estimators.md)."""

    ackreplay_version: str = Field(examples=["0.1.0"])
    run_id: str = Field(examples=[RUN_ID])
    estimators: list[dict[str, Any]] = Field(examples=[[{"name": "re", "parameters": {}, "version": "0.1.0"}]])
    captures: list[CaptureDocument]


class ScoreRow(Open):
    """One (capture, flow, estimator) with its scores (docs/scores.md §5; every key in docs/estimators.md)."""

    capture_id: str = Field(examples=[CAPTURE_ID])
    flow_id: int = Field(examples=[2])
    estimator: str = Field(examples=["re"])
    version: str = Field(examples=["0.1.0"])
    vantage: str = Field("unknown", description="where the flow was captured: sender | receiver | mid_path | unknown",
                         examples=["sender"])
    reconstruction: str | None = Field(None, description="receiver_side | mid_path when the sender's view was "
                                       "rebuilt (docs/estimators.md §7)", examples=[None])
    not_reproducible: str | None = Field(None, description="present when this estimator's result cannot be "
                                         "reproduced from the flow's vantage (BE and CRB off the sender: they "
                                         "depend on the ACKs' timing at the sender): why", examples=[None])
    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [
        {"capture_id": CAPTURE_ID, "flow_id": 2, "estimator": "re", "version": "0.1.0", "vantage": "sender",
         "reconstruction": None, **SCORES_EXAMPLE}]})


class ScorePage(BaseModel):
    items: list[ScoreRow]
    total: int = Field(examples=[9])
    limit: int = Field(examples=[500])
    offset: int = Field(examples=[0])


class SeriesOut(BaseModel):
    """Estimates over time (JSON form of the series endpoint)."""

    columns: list[str] = Field(examples=[["t", "t_rel", "achieved_bps", "re_bps"]])
    rows: int = Field(examples=[2000])
    data: list[dict[str, float | None]] = Field(
        examples=[[{"t": 1763800000.12, "t_rel": 0.12, "achieved_bps": 2.4e6, "re_bps": 2.6e6}]])


class DecisionOut(Open):
    """One estimator's decision at one loss event (every column in docs/estimators.md)."""

    episode: int = Field(examples=[0])
    kind: str = Field(description="fast_retransmit | timeout", examples=["fast_retransmit"])
    t_rel: float = Field(examples=[1.93])
    estimator: str = Field(examples=["abse"])
    ssthresh_segments: float | None = Field(examples=[21.4])
    ideal_segments: float | None = Field(examples=[19.0])
    newreno_ssthresh_segments: float | None = Field(examples=[17.0])


class DecisionPage(BaseModel):
    """A page of one flow's decisions, by loss event."""

    items: list[DecisionOut]
    total: int = Field(examples=[84])
    limit: int = Field(examples=[1000])
    offset: int = Field(examples=[0])
    next: str | None = Field(None, description="the next page, when there is one", examples=[None])


class FlowRef(BaseModel):
    run_id: str = Field(examples=[RUN_ID])
    capture_id: str = Field(examples=[CAPTURE_ID])
    flow_id: int = Field(examples=[2])


class BoardEntry(BaseModel):
    mean: float | None = Field(examples=[0.144])
    median: float | None = Field(None, description="median over flows (the rank's basis)", examples=[0.121])
    q1: float | None = Field(None, description="first quartile over flows", examples=[0.08])
    q3: float | None = Field(None, description="third quartile over flows", examples=[0.19])
    ci: tuple[float, float] | None = Field(None, description="bootstrap interval of the median (the board's "
                                           "confidence; seeded: the same every time)", examples=[[0.09, 0.15]])
    flows: int = Field(description="flows behind the figures", examples=[12])
    few: bool = Field(False, description="fewer flows than the board's min_flows: the interval is rough",
                      examples=[False])
    ties: list[str] = Field(default_factory=list, description="ranked estimators whose interval of the ranking "
                            "key overlaps this one's: their order may be chance", examples=[["tibet"]])
    wins: int = Field(description="flows on which it was best (0 for a score that is not ranked)", examples=[5])
    won_flows: list[FlowRef]
    rank: int | None = Field(None, description="by median over flows; absent when the score is not ranked or "
                             "the estimator has no value for it", examples=[1])


class ScoreBoard(BaseModel):
    better: Literal["min", "max", "zero", "one"] = Field(
        description="min: smaller is better; max: larger; zero: closer to 0; one: closer to 1", examples=["min"])
    ranked: bool = Field(True, description="false for one-sided shares (over_share, under_share): reported, "
                         "ranked only together as off_share", examples=[True])
    meaning: str = Field("", examples=["time-weighted mean |E−R|/R"])
    estimators: dict[str, BoardEntry]


class LeaderboardOut(BaseModel):
    flows: int = Field(description="bulk flows compared", examples=[12])
    estimators: list[str] = Field(examples=[["abse", "be", "re"]])
    include_not_reproducible: bool = Field(False, description="whether scores labelled not reproducible from "
                                           "their flow's vantage were ranked (the parameter of the same name)",
                                           examples=[False])
    left_out: dict[str, int] = Field(default_factory=dict, description="per estimator, the flows whose scores "
                                     "are labelled not_reproducible (BE and CRB off the sender: they depend on the "
                                     "ACKs' timing at the sender): left out of the board unless "
                                     "include_not_reproducible", examples=[{"be": 3, "crb": 3}])
    incomparable: int = Field(0, description="bulk flows the estimators cannot be compared on (too little "
                              "network-limited time or too few loss events, or limited by the application or the "
                              "receiver most of the time): left out of the board unless include_incomparable",
                              examples=[2])
    include_incomparable: bool = Field(False, description="whether those flows were ranked (the parameter of the "
                                       "same name)", examples=[False])
    confidence: float = Field(0.95, description="the intervals' confidence", examples=[0.95])
    resamples: int = Field(1000, description="bootstrap resamples (seeded)", examples=[1000])
    resampled: Literal["flows", "captures"] = Field("captures", description="what the bootstrap resamples: "
                                                    "whole captures (their flows are not independent)",
                                                    examples=["captures"])
    min_flows: int = Field(10, description="under this many flows a figure is marked few", examples=[10])
    warning: str | None = Field(None, description="set when the board rests on fewer than min_flows flows",
                                examples=[None])
    scores: dict[str, ScoreBoard] = Field(description="per score")


class Placing(BaseModel):
    estimator: str = Field(examples=["re"])
    composite_error: float | None = Field(None, description="median over flows of composite_error",
                                          examples=[0.09])
    mean_rank: float = Field(description="mean rank over the ranked scores", examples=[2.4])
    place: int = Field(description="by composite_error (then mean rank)", examples=[1])


class ScoreboardOut(LeaderboardOut):
    ranking: list[Placing] = Field(description="overall: by the median composite_error (docs/estimators.md)")
    batch_id: str = Field(examples=[BATCH_ID])
    run_id: str = Field(examples=[RUN_ID])
    status: str = Field(examples=["succeeded"])
    captures: int = Field(examples=[20])


class Rejected(BaseModel):
    name: str = Field(examples=["notes.txt"])
    error: str = Field(examples=["unsupported_media_type"])
    detail: Any = Field(examples=["not a pcap, pcapng or gzip file (starts with 68656c6c)"])


class BatchCreated(BaseModel):
    batch_id: str = Field(examples=[BATCH_ID])
    run_id: str | None = Field(examples=[RUN_ID])
    url: str = Field(examples=[f"/api/v1/batches/{BATCH_ID}"])
    captures: list[str] = Field(description="the first 100 captures (all of them: `GET /batches/{id}`)",
                                examples=[[CAPTURE_ID]])
    captures_total: int = Field(0, examples=[1])
    rejected: list[Rejected] = Field(description="the first 100 members that are not captures")
    rejected_total: int = Field(0, examples=[0])


class BatchOut(BaseModel):
    """A batch, with one page (`offset`, `limit`) of its captures, of its rejected members and of its run's
    captures."""

    id: str = Field(examples=[BATCH_ID])
    name: str = Field(examples=["lab-sweep.zip"])
    captures: list[str] = Field(examples=[[CAPTURE_ID]])
    captures_total: int = Field(0, examples=[1])
    rejected: list[Rejected]
    rejected_total: int = Field(0, examples=[0])
    offset: int = Field(0, examples=[0])
    limit: int = Field(100, examples=[100])
    next: str | None = Field(None, description="the next page, when there is one", examples=[None])
    run: RunStatusOut | None


class ParameterInfo(Open):
    name: str = Field(examples=["N"])
    type: str = Field(examples=["float"])
    default: Any = Field(examples=[10.0])
    description: str = Field(examples=["τ scale factor N (eq. (6))"])
    alternatives: dict[str, Any] | None = Field(
        None, examples=[{"buffer_study": 0.8}],
        description="other documented values by name (accepted in place of the value, e.g. cubic.beta = "
                    "\"buffer_study\")")


class EstimatorInfo(Open):
    name: str = Field(examples=["abse"])
    title: str = Field(examples=["ABSE (adaptive bandwidth share estimation)"])
    citation: str = Field(examples=["R. Wang, M. Valla, M. Y. Sanadidi, B. K. F. Ng, M. Gerla, \"Using Adaptive Rate "
                                    "Estimation to Provide Enhanced and Robust Transport over Heterogeneous "
                                    "Networks\", Proc. 10th IEEE International Conference on Network Protocols "
                                    "(ICNP 2002), 2002, §3.1.2, §3.2, eqs. (1)–(6)"],
                          description="the publication(s) it implements, in full, with the section or equation")
    doc: str | None = Field(None, examples=["docs/estimators.md#abse"],
                            description="the section of the repository's documentation that gives its formula, "
                            "defaults, units and decisions (null for a plugin that names none)")
    description: str
    has_series: bool
    parameters: list[ParameterInfo]
    origin: dict[str, Any] = Field(examples=[{"kind": "builtin"}, {"kind": "distribution", "distribution":
                                   "ackreplay-median-be", "version": "0.1.0", "entry_point": "median_be:MedianBE"}],
                                   description="where the estimator came from: the package itself, or an installed "
                                   "plugin's distribution and version")
    code_sha256: str | None = Field(None, description="SHA-256 of a plugin's module source (null for built-ins)")


class HealthOut(BaseModel):
    status: Literal["ok"] = Field("ok", examples=["ok"])


class ReadyOut(BaseModel):
    status: Literal["ready", "not_ready"] = Field(examples=["ready"])
    checks: dict[str, str] = Field(examples=[{"database": "ok", "broker": "embedded", "storage": "ok"}])


class QuotaOut(BaseModel):
    """The caller's storage against its quota: its captures and the results its runs derived from them."""

    owner: str = Field(examples=["alice"])
    used_bytes: int = Field(description="capture_bytes + derived_bytes", examples=[1_094_468])
    capture_bytes: int = Field(description="the stored captures (as uploaded)", examples=[894468])
    derived_bytes: int = Field(description="the runs' series, results, decisions and diagnostics",
                               examples=[200_000])
    captures: int = Field(examples=[1])
    limit_bytes: int | None = Field(description="null: unlimited", examples=[10_737_418_240])
    remaining_bytes: int | None = Field(description="null: unlimited", examples=[10_736_323_772])


class WhatIfIn(BaseModel):
    """What to simulate on the flow's path (docs/whatif.md)."""

    algorithms: list[Annotated[Text, StringConstraints(min_length=1, max_length=40)]] | None = Field(
        None, max_length=16, examples=[["cubic", "westwood_plus", "newreno"]],
        description="the algorithms to put in control: newreno, westwood_plus, cubic, bic, stcp, hstcp, htcp (the "
                    "default: these seven), bbr (BBR v1 as Linux runs it; bbr_bw names it too), or any other "
                    "Westwood-family estimator (be, re, crb, abse, tibet, tibet_tx, newbr) or registered plugin, "
                    "which grows as NewReno and decides at each loss from its own estimate")
    sender_cc: Annotated[Text, StringConstraints(min_length=1, max_length=40)] | None = Field(
        None, examples=["cubic"], description="the control the captured sender ran, for the self-check (default: "
                                              "cubic, Linux's default)")
    duration_s: float | None = Field(None, gt=0, le=30, examples=[20.0],
                                     description="simulated seconds per run (default: the captured flow's span, at "
                                                 "most 30)")
    seed: int = Field(1, ge=0, le=2**31 - 1, description="the simulation's random seed (random loss)")


class SelfCheckOut(BaseModel):
    algorithm: str = Field(examples=["cubic"])
    algorithm_source: str = Field(examples=["given"])
    goodput_ratio: float | None = Field(description="simulated / captured goodput (null: not run)", examples=[0.99])
    loss_rate_ratio: float | None = Field(description="simulated / captured loss events per second", examples=[0.94])
    passed: bool = Field(description="goodput within 10 % and loss-event rate within 30 %")
    reason: str = Field(description="why it failed or could not run (empty when passed)")
    simulated: dict[str, Any] = Field(default_factory=dict, description=(
        "the re-enactment's figures that decided (goodput_bps, utilisation, loss_rate, queue delays, share, "
        "loss_events, timeouts, loss_event_rate, span_s, seeds: the runs averaged); decided_by: replayed_drops (one "
        "run meeting the random drops the capture realised), mean_of_draws (the mean over 10 seeded draws at the "
        "random-loss rate: the drops are not known) or one_run (no random loss); drops: what was replayed (replayed, "
        "hidden_segments drawn at the rate, segments the capture sent) or null; draws: beside a replayed run, the "
        "mean over the seeded draws (goodput_bps, loss_events, loss_event_rate, goodput_ratio, loss_rate_ratio, "
        "seeds), else null"))
    tolerance: dict[str, float]


class WhatIfResultOut(BaseModel):
    goodput_bps: float
    utilisation: float
    loss_rate: float = Field(description="segments retransmitted per segment sent")
    queue_delay_mean_s: float | None
    queue_delay_p95_s: float | None
    share: float = Field(description="of the bytes every flow on the bottleneck delivered (1 without cross traffic)")
    loss_events: int
    timeouts: int
    ranges: dict[str, list[float] | None] = Field(description="per figure [low, high] over the path's plausible "
                                                              "values (capacity ±10 %, base RTT ±3 %, buffer ±25 %, "
                                                              "random loss ±30 %)")
    series: dict[str, list[float]] = Field(description="t (s), cwnd and flight (segments), queue_delay_s")


class WhatIfOut(BaseModel):
    """Each algorithm in control on the flow's path, beside the captured flow (docs/whatif.md)."""

    flow_id: int
    sender: str
    receiver: str
    duration_s: float
    seed: int
    path: dict[str, Any] = Field(description="figures, ranges, confidence, overhead_bytes, mss, rwnd_bytes, paced, "
                                             "assumed (figures the path did not give, with why: a buffer bounded "
                                             "below only is taken at the least buffer the captured sender's "
                                             "re-enactment does not overflow, its range one BDP deeper), "
                                             "random_drops (the capture's random drops every run meets: "
                                             "replayed, hidden_segments, segments; null: none replayed), "
                                             "buffer_bound (a buffer bounded below only, as numbers: seen_bytes, "
                                             "the deepest queue the flow built; least_bytes, the least buffer "
                                             "consistent with the capture, null where taken at seen_bytes; runs; "
                                             "room_bytes, what the captured flight could queue beyond the BDP — "
                                             "the flights of the room_flows flows sharing the bottleneck, added —, "
                                             "which held the search where room_checked; null: the path gives the "
                                             "buffer)")
    captured: dict[str, Any] = Field(description="the captured flow: goodput_bps, utilisation, loss_rate, "
                                                 "loss_events, loss_event_rate, span_s, share, limits, idle_share")
    self_check: SelfCheckOut
    withheld: str | None = Field(description="why the results are withheld (the self-check failed); null when shown")
    cross_traffic: list[dict[str, Any]] = Field(description="the flows sharing the bottleneck, simulated beside it: "
                                                "flow_id, control, control_source, offset_s (start after the flow's)")
    results: dict[str, WhatIfResultOut] = Field(description="per algorithm (empty when withheld)")
