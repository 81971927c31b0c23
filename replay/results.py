"""What replay returns: per-flow results (:class:`FlowReplay`) over a batch's score columns, and a capture's.

Replay computes the scores of a whole batch of flows as columns — one array per score and estimator, one
value per flow (:class:`BatchScores`) — and the CSV, Parquet and service outputs read those columns as a
table (:meth:`BatchScores.frame`). A flow's ``scores`` and ``diagnostics`` dictionaries are built from the
columns only when something reads them (a flow's table, the JSON document): on a capture of 10 000 bulk flows
building 90 000 score dictionaries up front would cost more than replaying them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ackreplay.kernels import finite_or_none
from ackreplay.path.evidence import PathParts
from ackreplay.scoring.diagnostics import burst_cause, loss_classes
from ackreplay.scoring.limits import LABELS, FlowLimits
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE
from ackreplay.scoring.scores import RELATIVE_SCORES

#: The decision scores in a score dictionary's order (without and with the truth's ideal; ``decisions`` an int)
DECISION_KEYS = ("ssthresh_over_ideal_mean", "ssthresh_over_ideal_median", "newreno_over_ideal_median",
                 "closer_than_newreno_share", "decisions")
DECISION_TRUTH_KEYS = tuple(f"{k}_truth" for k in DECISION_KEYS[:4])

#: A document as compact JSON text (ASCII: its length is its size in bytes), as the service stores and charges
#: its rows' documents; one encoder reused (a replay task encodes tens of thousands of documents).
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def compact_json(document: Any) -> str:
    """``json.dumps(document, separators=(",", ":"))``."""
    return _COMPACT.encode(document)


#: Columns of the decisions table (one row per loss event and estimator).
DECISION_SCHEMA = {
    "episode": pl.Int64, "kind": pl.String, "t": pl.Float64, "t_rel": pl.Float64, "estimator": pl.String,
    "estimate_bps": pl.Float64, "rttmin_s": pl.Float64, "ssthresh_segments": pl.Float64,
    "ssthresh_bytes": pl.Float64, "cwnd_segments": pl.Float64, "cwnd_applied_t_rel": pl.Float64,
    "note": pl.String, "newreno_ssthresh_segments": pl.Float64, "ideal_bytes": pl.Float64,
    "ideal_segments": pl.Float64, "ideal_truth_bytes": pl.Float64, "ideal_truth_segments": pl.Float64,
    "flight_before_bytes": pl.Int64, "flight_after_srtt_bytes": pl.Int64,
    "lowest_flight_in_recovery_bytes": pl.Int64,
}
#: The series scores in a score dictionary's order (rates in bits/s).
SERIES_KEYS = ("mean_bps", "median_bps", "cov", *RELATIVE_SCORES)
TRUTH_KEYS = tuple(f"{k}_truth" for k in RELATIVE_SCORES)


@dataclass
class EstimatorColumns:
    """One estimator's scores over a batch: one row per flow."""

    name: str
    parameters: dict[str, Any]
    #: ``SERIES_KEYS`` (bits/s for the rates; NaN = none), shape (flows, 9)
    series: np.ndarray
    truth: np.ndarray | None  # ``TRUTH_KEYS``, shape (flows, 6)
    #: The decision scores, ``DECISION_KEYS`` (and ``DECISION_TRUTH_KEYS`` with the truth), shape (flows, 5|9)
    decisions: np.ndarray
    failures: dict[int, str]  # position → why a plugin has no estimate there
    #: vantage → the not-reproducible label (``Estimator.not_reproducible``), None where reproducible
    labels: dict[str, str | None]


@dataclass
class BatchScores:
    """Every estimator's scores over one batch of flows, as columns."""

    flow_ids: np.ndarray
    vantages: list[str]
    columns: list[EstimatorColumns]
    _texts: dict[str, list[str]] | None = field(default=None, repr=False)

    def scores_of(self, pos: int) -> dict[str, dict[str, Any]]:
        """Flow ``pos``'s scores as ``replay_flow`` always returned them: estimator → score → value."""
        out: dict[str, dict[str, Any]] = {}
        vantage = self.vantages[pos]
        for c in self.columns:
            s: dict[str, Any] = dict(zip(SERIES_KEYS, map(finite_or_none, c.series[pos].tolist()), strict=True))
            if c.truth is not None:
                s.update(zip(TRUTH_KEYS, map(finite_or_none, c.truth[pos].tolist()), strict=True))
            why = c.failures.get(pos)
            if why is not None:
                s["error"] = why
            d = c.decisions[pos].tolist()
            s.update(zip(DECISION_KEYS[:4], map(finite_or_none, d[:4]), strict=True))
            s["decisions"] = int(d[4])
            if len(d) > 5:
                s.update(zip(DECISION_TRUTH_KEYS, map(finite_or_none, d[5:]), strict=True))
            s["parameters"] = dict(c.parameters)
            label = c.labels.get(vantage)
            if label is not None:
                s[NOT_REPRODUCIBLE] = label
            out[c.name] = s
        return out

    def score_texts(self) -> dict[str, list[str]]:
        """Each estimator's score dictionaries over the batch as compact JSON text (:func:`compact_json` of
        ``scores_of(pos)[name]`` at each position), made once, column by column: one template per estimator,
        filled with each flow's values as the encoder writes them (no dictionary per flow and estimator)."""
        if self._texts is None:
            self._texts = {c.name: self._column_texts(c) for c in self.columns}
        return self._texts

    def _column_texts(self, c: EstimatorColumns) -> list[str]:
        keys, values = [*SERIES_KEYS], [*c.series.T]
        if c.truth is not None:
            keys += TRUTH_KEYS
            values += [*c.truth.T]
        decision_keys = (*DECISION_KEYS, *DECISION_TRUTH_KEYS)[: c.decisions.shape[1]]
        if len(keys) != len(values) or len(decision_keys) != c.decisions.shape[1]:
            raise ValueError(f"estimator {c.name}: {len(values)} score columns for {len(keys)} scores")
        fields = [_number_texts(v) for v in values]
        why = [c.failures.get(pos) for pos in range(len(self.flow_ids))]
        fields.append([f",{_COMPACT.encode('error')}:{_COMPACT.encode(w)}" if w is not None else "" for w in why])
        for j, k in enumerate(decision_keys):  # (the count an int, as ``scores_of`` makes it)
            fields.append([str(int(x)) for x in c.decisions[:, j].tolist()] if k == "decisions"
                          else _number_texts(c.decisions[:, j]))
        label = {v: f",{_COMPACT.encode(NOT_REPRODUCIBLE)}:{_COMPACT.encode(t)}" for v, t in c.labels.items()
                 if t is not None}
        fields.append([label.get(v, "") for v in self.vantages])
        named = [f"{_COMPACT.encode(k)}:%s" for k in keys]
        after = [f"{_COMPACT.encode(k)}:%s" for k in decision_keys]
        parameters = _COMPACT.encode(dict(c.parameters)).replace("%", "%%")
        template = ("{" + ",".join(named) + "%s," + ",".join(after) + f",{_COMPACT.encode('parameters')}:"
                    + parameters + "%s}")
        return [template % row for row in zip(*fields, strict=True)]

    def frame(self) -> pl.DataFrame:
        """One row per (flow, estimator), flows in batch order and estimators in replay's order: ``flow_id``,
        ``estimator``, the scores (null = none), ``error``, ``parameters`` (JSON text) and ``not_reproducible``
        (null where reproducible). Built from the columns, with no per-flow Python."""
        nf = len(self.flow_ids)
        if not self.columns or not nf:
            return pl.DataFrame(schema={"flow_id": pl.Int64, "estimator": pl.String})
        vantage = pl.Series("vantage", self.vantages, pl.String)
        parts = []
        for order, c in enumerate(self.columns):
            cols: dict[str, Any] = {"flow_id": self.flow_ids, "estimator": pl.repeat(c.name, nf, eager=True),
                                    "_order": pl.repeat(order, nf, eager=True, dtype=pl.Int32)}
            for j, k in enumerate(SERIES_KEYS):
                cols[k] = c.series[:, j]
            if c.truth is not None:
                for j, k in enumerate(TRUTH_KEYS):
                    cols[k] = c.truth[:, j]
            frame = pl.DataFrame(cols)
            errors = [c.failures.get(i) for i in range(nf)] if c.failures else None
            decided = [pl.Series(k, c.decisions[:, j], pl.Int64 if k == "decisions" else pl.Float64)
                       for j, k in enumerate((*DECISION_KEYS, *DECISION_TRUTH_KEYS)[: c.decisions.shape[1]])]
            frame = frame.with_columns(
                pl.Series("error", errors, pl.String) if errors is not None else pl.lit(None, pl.String).alias("error"),
                *decided,
                pl.lit(json.dumps(jsonable(c.parameters), sort_keys=True)).alias("parameters"),
                vantage.replace_strict(c.labels, default=None, return_dtype=pl.String).alias(NOT_REPRODUCIBLE)
                if c.labels else pl.lit(None, pl.String).alias(NOT_REPRODUCIBLE),
            )
            parts.append(frame)
        out = pl.concat(parts, how="diagonal_relaxed").with_row_index("_row")
        out = out.with_columns((pl.col("_row") % nf).alias("_pos")).sort("_pos", "_order")
        return out.drop("_row", "_pos", "_order").fill_nan(None)


def _number_texts(column: np.ndarray) -> list[str]:
    """A score column's values as JSON text: a finite value as the encoder writes a float, else null."""
    out = list(map(float.__repr__, map(float, column.tolist())))
    for i in np.flatnonzero(~np.isfinite(column)).tolist():
        out[i] = "null"
    return out


def jsonable(x: Any) -> Any:
    """JSON-safe at any depth: NaN and infinities become None (the CLI's documents, the service's JSON columns)."""
    t = type(x)  # the common exact types first: a document of thousands of flows has ~10⁶ values
    if t is float:
        return x if math.isfinite(x) else None
    if t is str or t is int or t is bool or x is None:
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    return x


@dataclass
class BatchDiagnostics:
    """The §7 explanations of one batch's flows, as columns (``replay.batch_kernels.diagnostics_scan``)."""

    vantages: list[str]
    events: np.ndarray  # per flow
    compressed: np.ndarray  # per flow: intervals under 100 µs
    samples: np.ndarray  # (flows, k, 3): BE's largest samples: t_rel, interval (s), bytes (NaN = none)
    mss: np.ndarray

    def of(self, pos: int) -> dict[str, Any]:
        n = int(self.events[pos])
        largest = []
        for t_rel, dt, d in self.samples[pos].tolist():
            if math.isnan(t_rel):
                break
            b = int(d)
            largest.append({"t_rel": t_rel, "bps": 8 * (b / dt), "interval_us": dt * 1e6, "bytes": b,
                            "cause": burst_cause(dt, b, int(self.mss[pos]))})
        return {
            "ack_compression_share": int(self.compressed[pos]) / (n - 1) if n > 1 else None,
            "largest_samples": largest,
            "dispersion_capacity_bps": None,  # the path's capacity, set by replay (``ackreplay.path``)
            "dispersion_from": "data" if self.vantages[pos] == "receiver" else "acks",
        }


@dataclass
class BatchDecisions:
    """A batch's decision rows (``decisions.decision_frame``, :data:`DECISION_SCHEMA`), as a table and, on first
    use, as dictionaries (one Polars call for the batch, not one per flow)."""

    frame: pl.DataFrame
    _rows: list[dict[str, Any]] | None = None

    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows = self.frame.to_dicts()
        return self._rows


class BatchResults(NamedTuple):
    """A batch's columns that every one of its :class:`FlowReplay` reads its own row of."""

    scores: BatchScores
    diagnostics: BatchDiagnostics
    decisions: BatchDecisions | None  # None: no loss event in the batch


@dataclass(eq=False)
class FlowReplay:
    """Everything replay produced for one flow."""

    flow_id: int
    vantage: str
    #: The series as columns: t, t_rel (s), achieved, [truth], <estimator> (bytes/s, NaN = none); None when
    #: replay was asked not to keep them (``keep_series=False``: scores only, memory freed batch by batch).
    columns: dict[str, np.ndarray] | None
    window: tuple[float, float]  # score window, s since the flow's first packet
    events: int = 0  # ACK events replayed (rows with equal timestamps merged, §1.1)
    #: The path this flow crossed (§9, ``ackreplay.path``): the ``path`` object, and the evidence behind it
    #: (pooled with the flows that share its bottleneck by ``replay_capture``); None without ``link``.
    path: dict[str, Any] | None = None
    path_parts: PathParts | None = field(default=None, repr=False)
    #: What limited the sender, interval by interval, and each label's share of the flow's time
    #: (``scoring.limits``); None where replay did not find it (a flow replayed without a batch)
    limits: FlowLimits | None = field(default=None, repr=False)
    #: Why the estimators cannot be compared on this flow (``scoring.comparable``; None: they can)
    comparable_reason: str | None = None
    #: Where the scores and the diagnostics come from: the batch's columns and this flow's position in them
    _batch_scores: BatchScores | None = field(default=None, repr=False)
    _batch_diagnostics: BatchDiagnostics | None = field(default=None, repr=False)
    _pos: int = 0
    #: The batch's decision rows (``decisions.decision_frame``) and where this flow's lie in them
    _batch_decisions: BatchDecisions | None = field(default=None, repr=False)
    _decision_span: tuple[int, int] = (0, 0)
    _loss_truth: Mapping[int, str] | None = field(default=None, repr=False)
    _decision_rows: list[dict[str, Any]] | None = field(default=None, repr=False)
    #: What replay adds to the diagnostics: the loss classes, the vantage evidence, the path's capacity
    _diagnostics_extra: dict[str, Any] = field(default_factory=dict, repr=False)
    _scores: dict[str, dict[str, Any]] | None = field(default=None, repr=False)
    _diagnostics: dict[str, Any] | None = field(default=None, repr=False)
    _series: pl.DataFrame | None = field(default=None, repr=False)
    _decisions: pl.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def in_batch(cls, flow_id: int, vantage: str, columns: dict[str, np.ndarray] | None, window: tuple[float, float],
                 events: int, batch: BatchResults, pos: int, decision_span: tuple[int, int],
                 loss_truth: Mapping[int, str] | None, diagnostics_extra: dict[str, Any]) -> FlowReplay:
        """Flow ``pos`` of a replayed batch, whose scores, diagnostics and decisions (its rows ``decision_span`` of
        the batch's) are read from ``batch``'s columns on first use; ``diagnostics_extra``: what replay adds to
        them (the vantage evidence, the path's capacity)."""
        return cls(flow_id, vantage, columns, window, events, _batch_scores=batch.scores,
                   _batch_diagnostics=batch.diagnostics, _pos=pos, _batch_decisions=batch.decisions,
                   _decision_span=decision_span, _loss_truth=loss_truth, _diagnostics_extra=diagnostics_extra)

    @property
    def scores(self) -> dict[str, dict[str, Any]]:
        """estimator → score name → value (docs/scores.md §5), built from the batch's columns on first use."""
        if self._scores is None:
            self._scores = self._batch_scores.scores_of(self._pos) if self._batch_scores is not None else {}
        return self._scores

    def score_texts(self) -> dict[str, str]:
        """:attr:`scores` as compact JSON text per estimator (:func:`compact_json`), from the batch's texts
        (``BatchScores.score_texts``) unless the dictionaries were already built."""
        if self._scores is not None:
            return {name: compact_json(s) for name, s in self._scores.items()}
        if self._batch_scores is None:
            return {}
        return {name: texts[self._pos] for name, texts in self._batch_scores.score_texts().items()}

    @property
    def diagnostics(self) -> dict[str, Any]:
        """Why the estimates are what they are (§7), built on first use."""
        if self._diagnostics is None:
            base = self._batch_diagnostics.of(self._pos) if self._batch_diagnostics is not None else {}
            rows = self.decision_rows
            base["loss_classes"] = loss_classes(rows, self._loss_truth) if rows else {}
            base.update(self._diagnostics_extra)
            self._diagnostics = base
        return self._diagnostics

    def diagnostics_updates(self) -> dict[str, Any]:
        """Where replay sets what it adds to the diagnostics (the path's capacity): the dictionary itself once
        built, else what it will be built with (10 000 flows sharing a bottleneck need not build theirs)."""
        return self._diagnostics if self._diagnostics is not None else self._diagnostics_extra

    @property
    def decisions(self) -> pl.DataFrame:
        """One row per (loss event, estimator) with :data:`DECISION_SCHEMA`'s columns (a slice of the batch's)."""
        if self._decisions is None:
            lo, hi = self._decision_span
            self._decisions = (self._batch_decisions.frame.slice(lo, hi - lo)
                               if self._batch_decisions is not None else pl.DataFrame(schema=DECISION_SCHEMA))
        return self._decisions

    @property
    def decision_rows(self) -> list[dict[str, Any]]:
        """:attr:`decisions` as dictionaries, built on first use."""
        if self._decision_rows is None:
            lo, hi = self._decision_span
            b = self._batch_decisions
            self._decision_rows = b.rows()[lo:hi] if b is not None and hi > lo else []
        return self._decision_rows

    @property
    def series(self) -> pl.DataFrame:
        """t, t_rel, achieved_bps, [truth_bps], <estimator>_bps (bits/s, null = none), built on first use:
        scoring does not need it, and on a long flow it is the largest thing replay makes."""
        if self.columns is None:
            raise ValueError(f"the series of flow {self.flow_id} were not kept (replay with keep_series=True)")
        if self._series is None:
            # bytes/s → bits/s and NaN → null in one parallel Polars pass (the arrays are wrapped without a copy)
            frame = {(k if k in ("t", "t_rel") else f"{k}_bps"): v for k, v in self.columns.items()}
            self._series = pl.DataFrame(frame).with_columns((pl.exclude("t", "t_rel") * 8).fill_nan(None))
        return self._series

    def scores_frame(self) -> pl.DataFrame:
        """One row per estimator: its scores (docs/scores.md §5; parameters left out)."""
        return scores_frame({self.flow_id: self.scores})

    def _repr_html_(self) -> str:  # notebooks
        return (f"<p>flow {self.flow_id} ({self.vantage}): {self.events} ACK events, "
                f"{self.decisions['episode'].n_unique() if self.decisions.height else 0} loss events</p>"
                + self.scores_frame()._repr_html_())


@dataclass
class CaptureReplay:
    flows: list[FlowReplay]
    skipped: dict[int, str]  # flow id → why it was not replayed
    scores: dict[str, Any]  # estimator → aggregated scores; "fairness" → Jain's indices
    estimators: list[dict[str, Any]] = field(default_factory=list)  # name, parameters, version
    #: Per group of flows sharing a bottleneck (two flows or more): ``{"flows": [...], "path": {...}}`` (§9)
    path_groups: list[dict[str, Any]] = field(default_factory=list)
    #: The score columns of each batch replayed, in flow order (``score_table`` joins them)
    batches: list[BatchScores] = field(default_factory=list, repr=False)

    def score_table(self) -> pl.DataFrame:
        """One row per (replayed flow, estimator), from the batches' columns (:meth:`BatchScores.frame`)."""
        frames = [b.frame() for b in self.batches]
        frames = [f for f in frames if f.height]
        if not frames:
            return pl.DataFrame(schema={"flow_id": pl.Int64, "estimator": pl.String})
        return pl.concat(frames, how="diagonal_relaxed")

    def scores_frame(self) -> pl.DataFrame:
        """One row per (replayed flow, estimator) with its scores."""
        return scores_frame({f.flow_id: f.scores for f in self.flows})

    def failures(self) -> list[str]:
        """Why a plugin has no estimate on a flow: one message per (flow, estimator) that failed, in flow order
        (``estimators.plugins``)."""
        out = []
        for b in self.batches:
            failed = sorted({pos for c in b.columns for pos in c.failures})
            out += [c.failures[pos] for pos in failed for c in b.columns if pos in c.failures]
        return out

    def _repr_html_(self) -> str:  # notebooks
        skipped = f"; not replayed: {', '.join(map(str, self.skipped))}" if self.skipped else ""
        return f"<p>{len(self.flows)} flows replayed{skipped}</p>" + self.scores_frame()._repr_html_()


def scores_frame(per_flow: Mapping[int, Mapping[str, Mapping[str, Any]]]) -> pl.DataFrame:
    """{flow id: {estimator: scores}} as one row per (flow, estimator); parameters left out."""
    rows = [{"flow_id": fid, "estimator": name, **{k: v for k, v in sc.items() if k != "parameters"}}
            for fid, ests in per_flow.items() for name, sc in ests.items() if name != "fairness"]
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame(
        schema={"flow_id": pl.Int64, "estimator": pl.String})


def sample_columns(batch_t: np.ndarray, batch_d: np.ndarray, offsets: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The (t_rel, interval, bytes) of each flow's largest samples (``diagnostics_scan``'s ``top``), NaN where
    a flow has fewer."""
    nf, k = top.shape
    out = np.full((nf, k, 3), np.nan)
    have = top >= 0
    if not have.any():
        return out
    at = (offsets[:-1, None] + top)[have]
    out[have, 0] = batch_t[at + 1]
    out[have, 1] = batch_t[at + 1] - batch_t[at]
    out[have, 2] = batch_d[at + 1]
    return out


class ScoreColumns(NamedTuple):
    """One estimator's scores over many batches' flows (:func:`column_values`)."""

    keys: list[str]  # the score names in a score dictionary's order (``parameters``, ``error``, the label left out)
    columns: dict[str, np.ndarray]  # score name → its value per flow, NaN where a flow has none
    failed: int  # flows on which it failed (a plugin's ``error``)
    labelled: int  # flows whose scores carry the not-reproducible label


def column_values(batches: Sequence[BatchScores], name: str) -> ScoreColumns:
    """Estimator ``name``'s scores over every flow of ``batches`` (in order) as float columns, NaN where a flow
    has none (:class:`ScoreColumns`)."""
    keys: list[str] = []
    parts: dict[str, list[np.ndarray]] = {}
    failed = labelled = 0
    for b in batches:
        c = next(c for c in b.columns if c.name == name)
        cols: dict[str, np.ndarray] = {k: c.series[:, j] for j, k in enumerate(SERIES_KEYS)}
        if c.truth is not None:
            cols.update({k: c.truth[:, j] for j, k in enumerate(TRUTH_KEYS)})
        for j, k in enumerate((*DECISION_KEYS, *DECISION_TRUTH_KEYS)[: c.decisions.shape[1]]):
            cols[k] = c.decisions[:, j]
        for k, col in cols.items():
            if k not in parts:
                keys.append(k)
                parts[k] = []
            parts[k].append(col)
        failed += len(c.failures)
        labelled += sum(1 for v in b.vantages if c.labels.get(v) is not None)
    return ScoreColumns(keys, {k: np.concatenate(v) for k, v in parts.items()}, failed, labelled)


def series_table(flows: Sequence[FlowReplay]) -> pl.DataFrame:
    """The kept series of many flows as one table — :attr:`FlowReplay.series`' columns and ``flow_id`` (Int32) —
    from their columns concatenated once (a frame per flow cost ~0.4 ms: most of the time on small flows)."""
    kept = [f for f in flows if f.columns is not None]
    if not kept:
        return pl.DataFrame()
    columns = []
    for k in kept[0].columns:  # type: ignore[union-attr]  # (kept)
        joined = np.concatenate([f.columns[k] for f in kept])  # type: ignore[index]
        if k in ("t", "t_rel"):
            columns.append(pl.Series(k, joined))
        else:  # bytes/s to bit/s in place (a fresh array), NaN as null: one column's copy at a time
            joined *= 8
            columns.append(pl.Series(f"{k}_bps", joined, nan_to_null=True))
        del joined
    ids = np.repeat(np.array([f.flow_id for f in kept], np.int32), [f.events for f in kept])
    return pl.DataFrame([*columns, pl.Series("flow_id", ids, pl.Int32)])


#: Columns of the limits table (one row per interval of a flow: ``scoring.limits``).
LIMIT_SCHEMA = {"flow_id": pl.Int32, "start_rel_s": pl.Float64, "end_rel_s": pl.Float64, "label": pl.String}


def limit_table(flows: Sequence[FlowReplay]) -> pl.DataFrame:
    """What limited each flow's sender, interval by interval (:data:`LIMIT_SCHEMA`; times on the flow's axis, s
    since its first packet), many flows as one table."""
    have = [(f.flow_id, f.limits) for f in flows if f.limits is not None and len(f.limits.code)]
    if not have:
        return pl.DataFrame(schema=LIMIT_SCHEMA)
    codes = np.concatenate([lim.code for _, lim in have])
    return pl.DataFrame({
        "flow_id": np.repeat(np.array([fid for fid, _ in have], np.int32), [len(lim.code) for _, lim in have]),
        "start_rel_s": np.concatenate([lim.start for _, lim in have]),
        "end_rel_s": np.concatenate([lim.end for _, lim in have]),
        "label": pl.Series(np.asarray(LABELS, dtype=object)[codes], dtype=pl.String),
    }, schema=LIMIT_SCHEMA)


def decision_table(flows: Sequence[FlowReplay]) -> pl.DataFrame:
    """The decision rows of many flows as one table: :data:`DECISION_SCHEMA` and ``flow_id`` (Int32)."""
    parts = [f.decisions.with_columns(pl.lit(f.flow_id, pl.Int32).alias("flow_id")) for f in flows
             if f._decision_span[1] > f._decision_span[0]]
    if not parts:
        return pl.DataFrame(schema={**DECISION_SCHEMA, "flow_id": pl.Int32})
    return pl.concat(parts)
