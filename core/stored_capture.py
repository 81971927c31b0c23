"""A capture as the service keeps it — each flow's summary in the database, ingest's three tables and the bulk
flows' delivery times in the store — and read back as replay reads a capture (``replay.capture.CaptureSource``),
so that a replay task runs the pipeline ``ackreplay score`` runs (``replay.capture.replay_capture``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from sqlalchemy import select
from sqlalchemy.orm import Session

from ackreplay.core.orm import Capture, Flow
from ackreplay.core.storage import Store
from ackreplay.ingest.model import FLOW_FIELDS, CaptureIngest, FlowSummaries, FlowSummary
from ackreplay.replay.capture import bulk_flow_ids
from ackreplay.replay.engine import flow_columns
from ackreplay.scoring.truth import Truth

#: Ingest's tables, one Parquet file each per capture (all its flows, column ``flow_id``).
TABLES = ("acks", "segments", "episodes")
#: Row-group size of the capture tables: the rows of a flow are contiguous, so a replay task reading a few
#: flows skips most row groups by their flow_id statistics.
TABLE_ROW_GROUP = 16_384
#: The FlowSummary fields with a default, for a stored summary that lacks one.
_DEFAULTS = {f.name: f.default for f in fields(FlowSummary) if f.default is not MISSING}


@dataclass
class StoredCapture:
    """Some flows' tables of a stored capture, read into memory, and every flow's summary."""

    flows: FlowSummaries
    acks: pl.DataFrame
    segments: pl.DataFrame
    episodes: pl.DataFrame
    #: (nothing is mapped from files: the tables are read into memory, and replayed without a memory budget)
    mapped: dict[str, dict[str, Any]] = field(default_factory=dict)
    memory_budget: int | None = None

    def release(self, table: str, lo: int, hi: int) -> None:
        """Nothing to hand back: the tables are read into memory."""


def flow_rows(session: Session, capture_id: str) -> list[Flow]:
    """The capture's flows, in flow order."""
    return list(session.scalars(select(Flow).where(Flow.capture_id == capture_id).order_by(Flow.flow_id)))


def stored_flows(rows: Sequence[Flow]) -> FlowSummaries:
    """The flows' summaries as ingest made them (``FlowSummary.to_dict`` is what the database stores)."""
    return FlowSummaries.from_columns({name: [r.summary.get(name, _DEFAULTS.get(name)) for r in rows]
                                       for name in FLOW_FIELDS})


def stored_truth(cap: Capture) -> Truth | None:
    """The capture's ground truth (stored as ``Truth.to_dict``), None without one."""
    return Truth.from_mapping({k: v for k, v in cap.truth.items() if v not in (None, {})}) if cap.truth else None


def tables_key(capture_id: str) -> str:
    return f"captures/{capture_id}/tables"


def write_tables(store: Store, capture_id: str, result: CaptureIngest, truth: Truth | None) -> str:
    """Store ingest's tables of a capture once each, and its bulk flows' delivery times (the truth's fair share
    divides among the flows delivering at each moment: every replay task needs all of them); their key."""
    key = tables_key(capture_id)
    for name, frame in zip(TABLES, (result.acks, result.segments, result.episodes), strict=True):
        store.write_parquet(f"{key}/{name}.parquet", frame, row_group_size=TABLE_ROW_GROUP)
    bulk = bulk_flow_ids(result.flows, truth)
    deliveries = result.acks.filter(pl.col("flow_id").is_in(bulk) & (pl.col("acked") > 0)).select("flow_id", "t")
    store.write_parquet(f"captures/{capture_id}/deliveries.parquet", deliveries)
    return key


class CaptureTables(NamedTuple):
    """Ingest's tables (of some flows) of a stored capture."""

    acks: pl.DataFrame
    segments: pl.DataFrame
    episodes: pl.DataFrame


def read_tables(store: Store, key: str, flow_ids: list[int]) -> CaptureTables:
    """The acks, segments and episodes of some flows of a capture (one read of each table)."""
    return CaptureTables(*(read_table(store, key, name, flow_ids) for name in TABLES))


def read_table(store: Store, key: str, name: str, flow_ids: list[int]) -> pl.DataFrame:
    """Table ``name`` (of :data:`TABLES`) of some flows of a capture."""
    return store.read_parquet(f"{key}/{name}.parquet", pl.col("flow_id").is_in(flow_ids))


def read_deliveries(store: Store, capture_id: str, bulk: Sequence[int]) -> list[np.ndarray]:
    """For each of the bulk flows ``bulk``, the times of its ACKs that delivered data (:func:`write_tables`)."""
    rows = flow_columns(store.read_parquet(f"captures/{capture_id}/deliveries.parquet"), ("t",))
    return [rows(fid)["t"] for fid in bulk]
