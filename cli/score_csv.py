"""The scores as CSV: one row per (capture, flow, estimator), written by Polars from columns.

From the replay's score columns (:func:`scores_csv_of`, what ``ackreplay score -f csv`` and ``--out`` write):
no per-row dictionaries, ~0.1 s for 90 000 rows where building them takes 3 s (``tests/document_csv.py``
builds them, as the reference the columns are checked against). The columns: the flow's ``file``, ``flow_id``,
``sender``, ``receiver``, ``bytes``, ``bulk`` (``replay.capture.is_bulk``: the flow carried at least the truth's
``min_flow_bytes``, 64 kB by default: not a control connection), ``vantage``, ``reconstruction``, then
``estimator``, its scores in their order, ``parameters`` (JSON text), the flow's path (§9): ``path_<figure>``
(empty where null — the JSON's ``path.evidence`` says why), what limited its sender: ``limit_<label>``, each
label's share of the flow's time (``scoring.limits``), and ``comparable``, ``comparable_reason``
(``scoring.comparable``). A column some rows lack (a plugin's ``error``, the
``not_reproducible`` label) is placed where a row first has it, as a row-by-row writer would; empty where a row
has none. Numbers are written as Polars writes them (the shortest text that reads back as the same float); a text
cell a spreadsheet would run as a formula gets a leading ``'`` (``core.capture_scoring.csv_cell``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ackreplay.replay.capture import is_bulk
from ackreplay.replay.plan import summary_rows
from ackreplay.replay.results import DECISION_KEYS, DECISION_TRUTH_KEYS, SERIES_KEYS, TRUTH_KEYS
from ackreplay.scoring.limits import LABELS
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE

if TYPE_CHECKING:
    from ackreplay.core.capture_scoring import ScoredCapture
    from ackreplay.replay.results import FlowReplay

#: The path's figures a CSV row carries (``path_<name>``).
PATH_FIGURES = ("capacity_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp", "random_loss_rate", "confidence")
#: (each flow's data segments sent again, those a D-SACK proved spurious, and the originals the path reordered)
RETRANSMISSION_COLUMNS = ("retransmissions", "spurious_retransmissions", "reordered_segments")
FLOW_COLUMNS = ("file", "flow_id", "sender", "receiver", "bytes", "bulk", "vantage", "reconstruction",
                *RETRANSMISSION_COLUMNS, "estimator")
PATH_COLUMNS = tuple(f"path_{k}" for k in PATH_FIGURES)
#: What limited the flow's sender: each label's share of its time (``scoring.limits``; empty where not found).
LIMIT_COLUMNS = tuple(f"limit_{k}" for k in LABELS)
#: Whether the estimators can be compared on the flow, and why not (``scoring.comparable``).
COMPARABLE_COLUMNS = ("comparable", "comparable_reason")


def scores_csv_of(scored: Sequence[ScoredCapture]) -> str:
    """The CSV of scored captures, from their replays' score columns."""
    from ackreplay.core.capture_scoring import csv_cell, jsonable

    seen: dict[str, None] = {}
    frames = []
    for sc in scored:
        table = sc.replay.score_table()
        if not table.height:
            continue
        flows = sc.replay.flows
        per_flow = table.height // len(flows)
        paths = [f.path or {} for f in flows]
        ends = summary_rows(sc.ingest.flows, [f.flow_id for f in flows],
                            ("sender", "receiver", "bytes", "vantage", "reconstruction", *RETRANSMISSION_COLUMNS))
        rec = pl.col("reconstruction").cast(pl.String)
        info = pl.concat([ends.with_columns(pl.when(rec != "").then(rec).alias("reconstruction")), pl.DataFrame({
            c: pl.Series(c, [jsonable(p.get(k)) for p in paths], strict=False)
            for c, k in zip(PATH_COLUMNS, PATH_FIGURES, strict=True)}), _limit_columns(flows)], how="horizontal")
        info = info[np.repeat(np.arange(len(flows)), per_flow)]
        frame = pl.concat([table, info], how="horizontal").with_columns(
            pl.lit(csv_cell(str(sc.path))).alias("file"),
            pl.when(is_bulk(pl.col("bytes"), sc.truth)).then(pl.lit("True")).otherwise(pl.lit("False")).alias("bulk"))
        with_truth = sc.truth is not None
        decisions = [*DECISION_KEYS, *(DECISION_TRUTH_KEYS if with_truth else ())]
        # the rows' key sets in the order they first appear (a plugin's error, the label: on some rows only)
        kinds = (frame.select(pl.col("error").is_not_null().alias("e"), pl.col(NOT_REPRODUCIBLE).is_not_null()
                              .alias("l")).with_row_index().group_by("e", "l").agg(pl.col("index").min())
                 .sort("index"))
        for e, lab, _ in kinds.iter_rows():
            keys = [*FLOW_COLUMNS, *SERIES_KEYS, *(TRUTH_KEYS if with_truth else ()), *(["error"] if e else []),
                    *decisions, *([NOT_REPRODUCIBLE] if lab else []), "parameters", *PATH_COLUMNS,
                    *LIMIT_COLUMNS, *COMPARABLE_COLUMNS]
            seen.update(dict.fromkeys(keys))
        frames.append(frame)
    if not frames:
        return ""
    return _write(pl.concat(frames, how="diagonal_relaxed").select(list(seen)))


def _limit_columns(flows: Sequence[FlowReplay]) -> pl.DataFrame:
    """One row per flow: each label's share of its time (null where replay did not find what limited it), whether
    the estimators can be compared on it (``True``/``False``) and why not."""
    shares = [f.limits.shares if f.limits is not None else {} for f in flows]
    return pl.DataFrame({**{c: pl.Series(c, [s.get(k) for s in shares], pl.Float64)
                            for c, k in zip(LIMIT_COLUMNS, LABELS, strict=True)},
                         "comparable": pl.Series([str(f.comparable_reason is None) for f in flows], dtype=pl.String),
                         "comparable_reason": pl.Series([f.comparable_reason for f in flows], dtype=pl.String)})


def _write(frame: pl.DataFrame) -> str:
    return frame.write_csv(line_terminator="\n")
