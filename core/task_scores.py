"""A replay task's score columns kept beside its series, so that finishing a capture computes its aggregate
(``replay.capture.capture_aggregate``) from a few small Parquet objects instead of reading every result row's
JSON back from the database (10 000 bulk flows × 10 estimators: 100 000 documents, two seconds at the end of
every run, after all its work was done).

One object per replay task (``series/{run}/{capture}/{chunk}.scores.parquet``, beside the task's series and
removed with them): a row per replayed flow, column ``flow_id``, and per estimator (by its place ``i`` among
the run's estimators: a sweep variant's name may hold any character) each score of
``replay.results.column_values`` (``{i}::{score}``, Float64, NaN where the flow has none) and two flags,
``{i}::#failed`` and ``{i}::#labelled`` (the plugin failed on the flow; its scores carry the not-reproducible
label). Columns in the order the scores are given, so the aggregate's keys keep their order."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from ackreplay.replay.results import BatchScores, ScoreColumns, column_values

#: Between an estimator's place and a score's name in a column's name (score names are identifiers).
SEPARATOR = "::"
FAILED, LABELLED = "#failed", "#labelled"


#: The object's name ends so, beside the task's series (``{chunk}.parquet``).
SCORES_SUFFIX = ".scores.parquet"


def scores_key(run_id: str, capture_id: str, chunk: int) -> str:
    return f"series/{run_id}/{capture_id}/{chunk}{SCORES_SUFFIX}"


def task_scores_frame(scored: Sequence[BatchScores], names: Sequence[str]) -> pl.DataFrame:
    """The score columns of a task's replayed flows (``scored``: its batches, in flow order) for estimators
    ``names``: see the module's docstring."""
    ids = np.concatenate([b.flow_ids for b in scored]) if scored else np.empty(0, np.int64)
    columns: list[pl.Series] = [pl.Series("flow_id", ids, pl.Int64)]
    for i, name in enumerate(names):
        cols = column_values(scored, name)
        columns += [pl.Series(f"{i}{SEPARATOR}{k}", np.asarray(cols.columns[k], np.float64)) for k in cols.keys]
        failed: list[bool] = []
        labelled: list[bool] = []
        for b in scored:
            c = next(c for c in b.columns if c.name == name)
            failed += [pos in c.failures for pos in range(len(b.flow_ids))]
            labelled += [c.labels.get(v) is not None for v in b.vantages]
        columns += [pl.Series(f"{i}{SEPARATOR}{FAILED}", failed, pl.Boolean),
                    pl.Series(f"{i}{SEPARATOR}{LABELLED}", labelled, pl.Boolean)]
    return pl.DataFrame(columns)


def capture_score_columns(frames: Sequence[pl.DataFrame], names: Sequence[str]
                          ) -> tuple[np.ndarray, dict[str, ScoreColumns]]:
    """The replayed flows' ids (in flow order) and each estimator's :class:`ScoreColumns` over them, from the
    tasks' frames (:func:`task_scores_frame`) — what ``column_values`` gives over the whole capture."""
    if not frames:
        return np.empty(0, np.int64), {n: ScoreColumns([], {}, 0, 0) for n in names}
    whole = pl.concat(frames, how="diagonal_relaxed").sort("flow_id")
    out: dict[str, ScoreColumns] = {}
    for i, name in enumerate(names):
        prefix = f"{i}{SEPARATOR}"
        keys = [c[len(prefix):] for c in whole.columns if c.startswith(prefix) and c[len(prefix):][:1] != "#"]
        columns = {k: whole[prefix + k].cast(pl.Float64).fill_null(np.nan).to_numpy() for k in keys}
        out[name] = ScoreColumns(keys, columns, _count(whole, prefix + FAILED), _count(whole, prefix + LABELLED))
    return whole["flow_id"].to_numpy(), out


def _count(frame: pl.DataFrame, flag: str) -> int:
    """How many rows have the flag (a task that stored none of it: none)."""
    return int(frame[flag].fill_null(False).sum()) if flag in frame.columns else 0
