"""Reading many flows' summaries: ingest's ``FlowSummaries`` (columns; a flow made an object only when it is
read) or any sequence of FlowSummary-likes (objects with the fields as attributes, e.g. a stored flow's summary).

Replay reads every flow's few fields, which for a capture of a million flows is a column each, not a million
objects made and dropped. The summaries come from ingest or from a stored run's flows, so a columnar sequence
is known by what it has — its ``frame`` (a Polars DataFrame, a column per field) and ``take`` — not by its class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl


def summary_frame(summaries: Sequence[Any], names: Sequence[str],
                  defaults: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Fields ``names`` of every summary, a column each, in order; a field a summary lacks is its ``defaults``
    value (None without one)."""
    frame = getattr(summaries, "frame", None)
    if isinstance(frame, pl.DataFrame):
        return frame.select(names)
    defaults = defaults or {}
    return pl.DataFrame({name: [getattr(s, name, defaults.get(name)) for s in summaries] for name in names},
                        strict=False)


def _chosen(summaries: Sequence[Any], flow_ids: Sequence[int]) -> Sequence[Any]:
    """The summaries of flows ``flow_ids``, in that order (KeyError for an id none has): columnar summaries'
    rows taken as columns, others looked up."""
    take = getattr(summaries, "take", None)
    if callable(take):
        taken: Sequence[Any] = take(flow_ids)
        return taken
    by_id = {s.flow_id: s for s in summaries}
    return [by_id[f] for f in flow_ids]


def summaries_of(summaries: Sequence[Any], flow_ids: Sequence[int]) -> list[Any]:
    """The summaries of flows ``flow_ids``, in that order (KeyError for an id none has): columnar summaries
    made into objects in one pass."""
    return list(_chosen(summaries, flow_ids))


def summary_rows(summaries: Sequence[Any], flow_ids: Sequence[int], names: Sequence[str]) -> pl.DataFrame:
    """Fields ``names`` of flows ``flow_ids``, in that order, a column each (read as columns, no objects made,
    from columnar summaries)."""
    return summary_frame(_chosen(summaries, flow_ids), names)
