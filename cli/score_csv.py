"""The scores as CSV: one row per (capture, flow, estimator), written by Polars from columns (issue #26).

From the replay's score columns (:func:`scores_csv_of`, what ``ackreplay score -f csv`` and ``--out`` write:
no per-row dictionaries, ~0.1 s for 90 000 rows where building them took 3 s) or from a score document
(:func:`scores_csv`); both give the same columns in the same order: the flow's ``file``, ``flow_id``,
``sender``, ``receiver``, ``bytes``, ``bulk`` (the flow carried at least the truth's ``min_flow_bytes``, 64 kB by
default: not a control connection), ``vantage``, ``reconstruction``, then ``estimator``, its scores in their
order, ``parameters`` (JSON text) and the flow's path (§9): ``path_<figure>`` (empty where null — the JSON's
``path.evidence`` says why). A column some rows lack (a plugin's ``error``, the ``not_reproducible`` label) is
placed where a row first has it, as a row-by-row writer would; empty where a row has none. Numbers are written
as Polars writes them (the shortest text that reads back as the same float); a text cell a spreadsheet would
run as a formula gets a leading ``'`` (``core.capture_scoring.csv_cell``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ackreplay.replay.plan import summary_rows
from ackreplay.replay.results import DECISION_KEYS, DECISION_TRUTH_KEYS, SERIES_KEYS, TRUTH_KEYS
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE

if TYPE_CHECKING:
    from ackreplay.core.capture_scoring import ScoredCapture

#: The path's figures a CSV row carries (``path_<name>``).
PATH_FIGURES = ("capacity_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp", "random_loss_rate", "confidence")
FLOW_COLUMNS = ("file", "flow_id", "sender", "receiver", "bytes", "bulk", "vantage", "reconstruction", "estimator")
PATH_COLUMNS = tuple(f"path_{k}" for k in PATH_FIGURES)


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
        min_bytes = sc.min_flow_bytes
        ends = summary_rows(sc.ingest.flows, [f.flow_id for f in flows],
                            ("sender", "receiver", "bytes", "vantage", "reconstruction"))
        rec = pl.col("reconstruction").cast(pl.String)
        info = pl.concat([ends.with_columns(pl.when(rec != "").then(rec).alias("reconstruction")), pl.DataFrame({
            c: pl.Series(c, [jsonable(p.get(k)) for p in paths], strict=False)
            for c, k in zip(PATH_COLUMNS, PATH_FIGURES, strict=True)})], how="horizontal")
        info = info[np.repeat(np.arange(len(flows)), per_flow)]
        frame = pl.concat([table, info], how="horizontal").with_columns(
            pl.lit(csv_cell(str(sc.path))).alias("file"),
            pl.when(pl.col("bytes") >= min_bytes).then(pl.lit("True")).otherwise(pl.lit("False")).alias("bulk"))
        with_truth = sc.truth is not None
        decisions = [*DECISION_KEYS, *(DECISION_TRUTH_KEYS if with_truth else ())]
        # the rows' key sets in the order they first appear (a plugin's error, the label: on some rows only)
        kinds = (frame.select(pl.col("error").is_not_null().alias("e"), pl.col(NOT_REPRODUCIBLE).is_not_null()
                              .alias("l")).with_row_index().group_by("e", "l").agg(pl.col("index").min())
                 .sort("index"))
        for e, lab, _ in kinds.iter_rows():
            keys = [*FLOW_COLUMNS, *SERIES_KEYS, *(TRUTH_KEYS if with_truth else ()), *(["error"] if e else []),
                    *decisions, *([NOT_REPRODUCIBLE] if lab else []), "parameters", *PATH_COLUMNS]
            seen.update(dict.fromkeys(keys))
        frames.append(frame)
    if not frames:
        return ""
    return _write(pl.concat(frames, how="diagonal_relaxed").select(list(seen)))


def scores_csv(doc: dict[str, Any]) -> str:
    """The CSV of a score document (``core.capture_scoring.document``; JSON-safe or not: a NaN is an empty cell)."""
    from ackreplay.core.capture_scoring import csv_cell, jsonable
    from ackreplay.scoring.truth import DEFAULT_MIN_FLOW_BYTES

    rows: list[dict[str, Any]] = []
    for cap in doc["captures"]:
        min_bytes = (cap.get("truth") or {}).get("min_flow_bytes") or DEFAULT_MIN_FLOW_BYTES
        file = csv_cell(cap["file"])  # (a file name is the one text a user chose)
        for f in cap["flows"]:
            path = f.get("path") or {}  # the flow's path (§9), the same on each of its rows
            for name, s in f["scores"].items():
                row = {"file": file, "flow_id": f["flow_id"], "sender": f["sender"],
                       "receiver": f["receiver"], "bytes": f["bytes"], "bulk": str(f["bytes"] >= min_bytes),
                       "vantage": f["vantage"], "reconstruction": f.get("reconstruction") or None,
                       "estimator": name}
                row.update({k: jsonable(v) for k, v in s.items() if k != "parameters"})
                row["parameters"] = json.dumps(jsonable(s.get("parameters", {})), sort_keys=True)
                row.update({f"path_{k}": jsonable(path.get(k)) for k in PATH_FIGURES})
                rows.append(row)
    if not rows:
        return ""
    seen: dict[str, None] = {}  # every column, in first-seen order
    for r in rows:
        seen.update(dict.fromkeys(r))
    return _write(pl.DataFrame(rows, infer_schema_length=None).select(list(seen)))


def _write(frame: pl.DataFrame) -> str:
    return frame.write_csv(line_terminator="\n")
