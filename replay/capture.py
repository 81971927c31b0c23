"""A capture's replay: which of its flows are replayed, their truth, their batches through
:func:`replay.engine.replay_batch`, the groups that share a bottleneck, and the capture's aggregate.

One pipeline for every caller, each handing it a :class:`CaptureSource`: ``ackreplay score`` and the benchmarks
an ingested capture (``ingest.CaptureIngest``), a service task the stored tables of its share of a capture's
flows (``core.stored_capture.StoredCapture``). The service stores each flow's scores and aggregates the capture
once every task is done, from those scores (:func:`flow_score_columns`) through the same
:func:`capture_aggregate` the CLI runs on the batches' columns (``replay.results.column_values``).

Pure: tables and summaries in, results out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import polars as pl

from ackreplay.estimators.base import Estimator
from ackreplay.estimators.flow_batch import FlowBatch
from ackreplay.estimators.inputs import ACK_COLUMNS, SEGMENT_COLUMNS
from ackreplay.path.links import Links
from ackreplay.replay.engine import (
    REFERENCE_WINDOW,
    FlowColumns,
    FlowSource,
    describe,
    flow_columns,
    flow_rows,
    plan,
    replay_batch,
    share_paths,
)
from ackreplay.replay.gcpause import gc_paused
from ackreplay.replay.plan import summaries_of, summary_frame
from ackreplay.replay.results import BatchScores, CaptureReplay, FlowReplay, ScoreColumns, column_values
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE
from ackreplay.scoring.references import truth_rate
from ackreplay.scoring.scores import jain
from ackreplay.scoring.truth import Truth, min_flow_bytes

__all__ = ["CaptureSource", "bulk_flow_ids", "bulk_flows", "capture_aggregate", "flow_score_columns", "is_bulk",
           "replay_capture", "replay_flows"]

#: A spilled capture's flows of at least this many ACK rows hand their input pages back after every
#: estimator's job, not only once replayed (a system call per column range: not worth it on short flows).
RELEASE_PER_JOB_ROWS = 1_000_000
#: The ACK table's columns the limits read besides replay's (``scoring.limits``): the advertised window and the
#: SACKed bytes; a table without them (an older stored capture's) is replayed without them.
LIMIT_COLUMNS = ("rwnd", "sacked")
def ack_columns(have: Sequence[str]) -> tuple[str, ...]:
    """The ACK columns replay reads from a table with columns ``have``: :data:`ACK_COLUMNS` and those of
    :data:`LIMIT_COLUMNS` it has and that are not among them already."""
    return ACK_COLUMNS + tuple(c for c in LIMIT_COLUMNS if c in have and c not in ACK_COLUMNS)


#: Events per batch of flows: the batch's columns and every job's temporaries grow with it, and replay keeps to
#: the memory budget by batch (a flow longer than this is a batch of its own).
BATCH_EVENTS = 1 << 20
#: Bytes per event a batch costs besides its input columns (the held arrays, the largest job's footprint, the
#: scratch): replay makes batches no larger than the memory budget allows at this rate.
BATCH_BYTES_PER_EVENT = 256


class CaptureSource(Protocol):
    """A capture's flows and columns, as replay reads them.

    ``flows``: every flow's summary (ingest's ``FlowSummaries``, or FlowSummary-likes), in flow order — which
    flows are replayed and which are bulk flows is decided over all of them. ``acks``, ``segments`` and
    ``episodes``: ingest's tables (column ``flow_id``, in flow order as ingest writes them), holding at least
    the rows of the flows replayed. ``mapped``: a spilled capture's table columns as mapped from its files
    (table → column → raw values; empty when held in memory), ``memory_budget`` the budget it was ingested
    within (bytes; None = unlimited), and ``release(table, lo, hi)`` hands the file pages of rows ``lo..hi``
    back to the kernel (a no-op for tables in memory)."""

    @property
    def flows(self) -> Sequence[Any]: ...

    @property
    def acks(self) -> pl.DataFrame: ...

    @property
    def segments(self) -> pl.DataFrame: ...

    @property
    def episodes(self) -> pl.DataFrame: ...

    @property
    def mapped(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def memory_budget(self) -> int | None: ...

    def release(self, table: str, lo: int, hi: int) -> None: ...


def replay_capture(source: CaptureSource, estimators: Sequence[Estimator], *, truth: Truth | None = None,
                   allow_vantage: bool = False, progress: Callable[[int, int], None] | None = None,
                   only: set[int] | None = None, keep_series: bool = True,
                   deliveries: list[np.ndarray] | None = None, network_only: bool = True,
                   on_batch: Callable[[list[FlowReplay]], None] | None = None) -> CaptureReplay:
    """Replay the flows of a capture that :func:`replay.engine.plan` chooses (``only``: of these), in batches of
    consecutive flows (:func:`replay_flows`), pool the path evidence of those that share a bottleneck and
    aggregate their scores (:func:`capture_aggregate`). Without ``keep_series`` each batch's series are dropped
    once scored (``FlowReplay.columns`` None): memory then grows with the largest batch, not with the capture.
    Replay keeps to the source's memory budget, if any. ``deliveries``: the times of each bulk flow's ACKs
    that delivered data (the truth's fair share divides among the flows delivering at each moment), when the
    source's ``acks`` hold only some flows' rows (a service task's); else read from them. ``network_only``: the
    scores over the time the network limited each sender (``replay_batch``). ``on_batch``: called with each
    batch's flows once replayed (the service writes their series there and drops them: ``replay_flows``)."""
    with gc_paused():  # (many small acyclic objects: replay.gcpause)
        todo, skipped = plan(source.flows, allow_vantage=allow_vantage, only=only)
        acks = flow_columns(source.acks, ack_columns(source.acks.columns), source.mapped.get("acks"))
        # (tables stored before segments carried the sender's TSval read without it: bbr_bw then rebuilds send
        # times off the sender from the RTT alone)
        segments = flow_columns(source.segments, tuple(n for n in SEGMENT_COLUMNS if n in source.segments.columns))
        bulk = bulk_flows(source.flows, truth)
        bulk_ids = bulk["flow_id"].to_list()
        if deliveries is None:
            deliveries = delivery_times(acks, bulk_ids) if truth is not None else []
        chosen = summaries_of(source.flows, todo)
        sources = flow_sources(chosen, source.episodes, truth, deliveries)
        flows, scored = replay_flows(sources, [s.mss for s in chosen], acks, segments, source.episodes, estimators,
                                     keep_series=keep_series, memory_budget=source.memory_budget,
                                     release=source.release, progress=progress, network_only=network_only,
                                     on_batch=on_batch)
        ids = np.concatenate([b.flow_ids for b in scored]) if scored else np.empty(0, np.int64)
        scores = capture_aggregate(ids, {e.name: column_values(scored, e.name) for e in estimators}, bulk)
        groups = share_paths(flows, dict(zip(todo, chosen, strict=True)), bulk_ids)
        return CaptureReplay(flows, skipped, scores, describe(estimators), groups, scored)


def delivery_times(acks: FlowColumns, flow_ids: Sequence[int]) -> list[np.ndarray]:
    """For each of ``flow_ids``, the times of its ACKs that delivered data (sorted, as the ACK rows are)."""
    out = []
    for fid in flow_ids:
        a = acks(fid)
        out.append(a["t"][a["acked"] > 0])
    return out


def is_bulk(size: Any, truth: Truth | None) -> Any:
    """The bulk-flow rule (§4): a flow that carried at least the truth's ``min_flow_bytes`` (64 kB without truth)
    competes for the fair share; a shorter one is a control connection. ``size``: the bytes a flow carried — a
    number, a numpy or Polars column or expression, or a database column (the comparison is that type's)."""
    return size >= min_flow_bytes(truth)


def bulk_flows(summaries: Sequence[Any], truth: Truth | None) -> pl.DataFrame:
    """The bulk flows (:func:`is_bulk`) of ``summaries``, in order: their ``flow_id`` and ``goodput_bps``. A flow
    that breaks ingest's invariants is none: its bytes are not the data it carried."""
    f = summary_frame(summaries, ("flow_id", "bytes", "goodput_bps", "invalid"), {"invalid": ""})
    valid = pl.col("invalid").cast(pl.String).fill_null("") == ""
    return f.filter(is_bulk(pl.col("bytes"), truth) & valid).select("flow_id", "goodput_bps")


def bulk_flow_ids(summaries: Sequence[Any], truth: Truth | None) -> list[int]:
    """The ids of :func:`bulk_flows`."""
    return bulk_flows(summaries, truth)["flow_id"].to_list()


def truth_function(truth: Truth | None, flow_id: int, deliveries: list[np.ndarray]
                   ) -> Callable[[np.ndarray], np.ndarray] | None:
    """The true share of one flow as a function of absolute time; ``deliveries``: for each bulk flow, the
    times of its ACKs that delivered data (sorted)."""
    if truth is None:
        return None

    def fn(at: np.ndarray) -> np.ndarray:
        return truth_rate(truth, flow_id, at, deliveries, REFERENCE_WINDOW)

    return fn


def flow_sources(summaries: Sequence[Any], episodes: pl.DataFrame, truth: Truth | None,
                 deliveries: list[np.ndarray]) -> list[FlowSource]:
    """What replay reads of each flow besides its ACK events, from its summary (``FlowSummary``-like: ``flow_id``,
    ``vantage``, ``sender``, ``receiver`` and what ``LinkInfo.of`` reads) and the capture's episode table
    (column ``flow_id``); ``deliveries``: the bulk flows' delivery times, for the truth's fair share."""
    # (replay_flows hands each batch its rows of the episode table: a source's own are read for the truth's
    # loss labels only)
    ep_ids = episodes["flow_id"].to_numpy() if truth is not None else np.empty(0, np.int64)
    with_episodes = set(np.unique(ep_ids).tolist()) if len(ep_ids) else set()
    of = flow_rows(episodes) if with_episodes else None
    out = []
    infos = Links.of(summaries)  # (a field at a time)
    for i, s in enumerate(summaries):
        fid = s.flow_id
        eps = of(fid) if of is not None and fid in with_episodes else None
        labels = (truth.loss_labels(s.sender, s.receiver, eps["start_t"].to_list())
                  if truth is not None and eps is not None else None)
        out.append(FlowSource(fid, s.vantage, eps, truth_function(truth, fid, deliveries), labels, infos.info(i),
                              getattr(s, "vantage_position", None)))
    return out


def batches(sizes: np.ndarray, budget: int | None) -> list[tuple[int, int]]:
    """Consecutive ranges ``[lo, hi)`` of flows whose rows (``sizes``) add up to at most one batch's worth (a
    longer flow alone): :data:`BATCH_EVENTS`, or fewer when the memory budget is smaller."""
    limit = BATCH_EVENTS if budget is None else max(1, min(BATCH_EVENTS, budget // BATCH_BYTES_PER_EVENT))
    return consecutive_ranges(sizes, limit)


def consecutive_ranges(sizes: np.ndarray, limit: int, most: int | None = None) -> list[tuple[int, int]]:
    """Consecutive ranges ``[lo, hi)`` of items whose ``sizes`` add up to at most ``limit`` (a larger item alone),
    at most ``most`` items each."""
    ends = np.cumsum(sizes)
    out = []
    lo = 0
    while lo < len(sizes):
        base = ends[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(ends, base + limit, side="right")), lo + 1)
        hi = min(hi, lo + most) if most is not None else hi
        out.append((lo, hi))
        lo = hi
    return out


class ReplayedFlows(NamedTuple):
    """:func:`replay_flows`' result: the flows' results in order, and each batch's score columns."""

    flows: list[FlowReplay]
    scored: list[BatchScores]


def replay_flows(sources: Sequence[FlowSource], mss: Sequence[int], acks: FlowColumns, segments: FlowColumns,
                 episodes: pl.DataFrame, estimators: Sequence[Estimator], *, keep_series: bool = True,
                 memory_budget: int | None = None,
                 release: Callable[[str, int, int], None] | None = None,
                 progress: Callable[[int, int], None] | None = None, network_only: bool = True,
                 on_batch: Callable[[list[FlowReplay]], None] | None = None) -> ReplayedFlows:
    """Replay the flows of ``sources`` (with their ``mss``) from a table of many flows' ACK rows and segments
    (``acks``, ``segments``: ``FlowColumns``), consecutive flows batched up to :data:`BATCH_EVENTS` events
    (fewer under a smaller ``memory_budget``; a longer flow alone). ``release(table, lo, hi)`` hands a spilled
    capture's file pages of those rows back to the kernel after each batch (and after each job of a batch of
    one flow of at least ``RELEASE_PER_JOB_ROWS`` rows)."""
    ids = np.asarray([s.flow_id for s in sources], np.int64)
    ep_ids = episodes["flow_id"].to_numpy()
    if len(ep_ids) > 1 and bool(np.any(ep_ids[1:] < ep_ids[:-1])):  # (ingest writes it in flow order)
        episodes = episodes.sort("flow_id", maintain_order=True)
        ep_ids = episodes["flow_id"].to_numpy()
    a_lo, a_hi = acks.bounds(ids)
    s_lo, s_hi = segments.bounds(ids)
    out = ReplayedFlows([], [])
    for lo, hi in batches(a_hi - a_lo, memory_budget):
        if progress is not None:
            progress(lo, len(ids))
        rows = acks.gather(a_lo[lo:hi], a_hi[lo:hi])
        segs = segments.gather(s_lo[lo:hi], s_hi[lo:hi])
        batch = FlowBatch.build(rows, _offsets(a_lo[lo:hi], a_hi[lo:hi]), segs, _offsets(s_lo[lo:hi], s_hi[lo:hi]),
                                mss[lo:hi], ids[lo:hi])
        spans = [(table, (int(b[lo]), int(e[hi - 1]))) for table, cols, b, e in
                 (("acks", acks, a_lo, a_hi), ("segments", segments, s_lo, s_hi))
                 if release is not None and cols.in_order]

        def release_batch(spans: list[tuple[str, tuple[int, int]]] = spans) -> None:
            for table, (b, e) in spans:
                release(table, b, e)  # type: ignore[misc]  # (spans is empty without it)

        big = hi - lo == 1 and int(a_hi[lo] - a_lo[lo]) >= RELEASE_PER_JOB_ROWS
        got, sc = replay_batch(batch, sources[lo:hi], estimators, keep_series=keep_series,
                               memory_budget=memory_budget, release=release_batch if spans and big else None,
                               path_rows=(rows, segs), episodes=_batch_episodes(episodes, ep_ids, ids[lo:hi]),
                               network_only=network_only)
        out.flows.extend(got)
        out.scored.append(sc)
        if on_batch is not None:  # (e.g. the batch's series written and dropped: memory then grows by batch)
            on_batch(got)
        del batch, rows, segs
        if spans:
            release_batch()
    if progress is not None:
        progress(len(ids), len(ids))
    return out


def _batch_episodes(episodes: pl.DataFrame, ep_ids: np.ndarray, ids: np.ndarray) -> pl.DataFrame:
    """The rows of the episode table (in flow order: ``ep_ids`` its flow ids) of the batch's flows ``ids``
    (consecutive in flow order): one slice, filtered only when flows between them are not replayed."""
    e_lo = np.searchsorted(ep_ids, ep_ids.dtype.type(ids[0]))
    e_hi = np.searchsorted(ep_ids, ep_ids.dtype.type(ids[-1]), side="right")
    eps = episodes.slice(int(e_lo), int(e_hi - e_lo))
    if eps.height and int(e_hi - e_lo) and len(ids) != int(ids[-1] - ids[0]) + 1:  # flows skipped between
        eps = eps.filter(pl.col("flow_id").is_in(ids.tolist()))
    return eps


def _offsets(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lo) + 1, np.int64)
    np.cumsum(hi - lo, out=out[1:])
    return out


# ------------------------------------------------------------------------------------------ the aggregate


def flow_score_columns(per_flow: Sequence[Mapping[str, Any]]) -> ScoreColumns:
    """One estimator's scores over some flows (in order) from each flow's score dictionary
    (``FlowReplay.scores[name]``, as the service stores it), as :func:`replay.results.column_values` gives them
    from the batches' columns: a value that is not a number counts as none."""
    n = len(per_flow)
    columns: dict[str, np.ndarray] = {}
    for i, s in enumerate(per_flow):
        for k, v in s.items():
            if k in ("parameters", "error", NOT_REPRODUCIBLE):
                continue
            col = columns.get(k)
            if col is None:
                col = columns[k] = np.full(n, np.nan)
            if isinstance(v, int | float):
                col[i] = v
    return ScoreColumns(list(columns), columns, sum(1 for s in per_flow if s.get("error")),
                        sum(1 for s in per_flow if NOT_REPRODUCIBLE in s))


def score_means(scores: ScoreColumns, flows: int) -> dict[str, Any]:
    """``flows``, ``failed_flows`` and ``not_reproducible_flows`` (when any), then every score's mean over the
    flows that have it (None where none has)."""
    out: dict[str, Any] = {"flows": flows}
    if not flows:
        return out
    if scores.failed:
        out["failed_flows"] = scores.failed
    if scores.labelled:
        out[f"{NOT_REPRODUCIBLE}_flows"] = scores.labelled
    for k in scores.keys:
        col = scores.columns[k]
        vals = col[np.isfinite(col)]
        out[k] = float(np.mean(vals)) if len(vals) else None
    return out


def capture_aggregate(flow_ids: np.ndarray, scores: Mapping[str, ScoreColumns], bulk: pl.DataFrame
                      ) -> dict[str, Any]:
    """A capture's aggregate (§5): per estimator (``scores``, over the replayed flows ``flow_ids`` in order) the
    mean of every score (:func:`score_means`), and under ``fairness`` Jain's index over the bulk flows (``bulk``:
    :func:`bulk_flows`) of their goodput and of each estimator's mean estimate. ``scores`` come from replay's
    columns (:func:`replay.results.column_values`) or from stored score dictionaries (:func:`flow_score_columns`).
    """
    in_bulk = np.isin(flow_ids, bulk["flow_id"].cast(pl.Int64).to_numpy())
    out: dict[str, Any] = {}
    fairness: dict[str, float | None] = {"goodput": jain(bulk["goodput_bps"].to_list())}
    for name, cols in scores.items():
        out[name] = score_means(cols, len(flow_ids))
        if len(flow_ids):
            mean = cols.columns["mean_bps"][in_bulk]
            fairness[name] = jain(mean[np.isfinite(mean)].tolist())
        else:
            fairness[name] = None
    out["fairness"] = fairness
    return out
