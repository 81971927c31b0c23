"""A capture as the service keeps it — ingest's three tables, its flows' summaries and the bulk flows' delivery
times in the store (a capture ingested before the summaries were stored: each flow's summary in the database) —
and read back as replay reads a capture (``replay.capture.CaptureSource``), so that a replay task runs the
pipeline ``ackreplay score`` runs (``replay.capture.replay_capture``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, NamedTuple

import numpy as np
import polars as pl
from sqlalchemy import select
from sqlalchemy.orm import Session

from ackreplay.core.heartbeat import beat
from ackreplay.core.orm import Capture, Flow
from ackreplay.core.storage import Store
from ackreplay.ingest.model import FLOW_FIELDS, CaptureIngest, FlowSummaries, FlowSummary
from ackreplay.replay.capture import bulk_flow_ids, bulk_flows, is_bulk
from ackreplay.replay.engine import flow_columns
from ackreplay.scoring.truth import Truth

#: Ingest's tables, one Parquet file each per capture (all its flows, column ``flow_id``).
TABLES = ("acks", "segments", "episodes")
#: Row-group size of the capture tables: the rows of a flow are contiguous, so a replay task reading a few
#: flows skips most row groups by their flow_id statistics.
TABLE_ROW_GROUP = 16_384
#: Rows of ``flows`` fetched at a time when a capture's summaries are read from the database.
FLOW_PAGE = 10_000
#: The summary fields that decide the bulk flows (``replay.capture.bulk_flows``).
BULK_FIELDS = ("flow_id", "bytes", "goodput_bps", "invalid")
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


def summaries_from_documents(documents: Iterable[dict[str, Any]]) -> FlowSummaries:
    """Flow summaries from their stored documents (``FlowSummary.to_dict``, as the ``flows`` table holds them)."""
    docs = list(documents)
    return FlowSummaries.from_columns({name: [d.get(name, _DEFAULTS.get(name)) for d in docs]
                                       for name in FLOW_FIELDS})


def flows_key(capture_id: str) -> str:
    return f"{tables_key(capture_id)}/flows.parquet"


def capture_summaries(session: Session, store: Store, capture_id: str,
                      columns: Sequence[str] | None = None) -> FlowSummaries:
    """Every flow's summary of an ingested capture, as ingest made them: the columns stored beside its tables
    (a capture ingested before they were: the ``flows`` table's documents, a column at a time). ``columns``:
    only these fields are needed (the summaries then hold at least these)."""
    if store.exists(flows_key(capture_id)):
        return FlowSummaries(store.read_parquet(flows_key(capture_id), columns=columns))
    q = select(Flow.summary).where(Flow.capture_id == capture_id).order_by(Flow.flow_id)
    return summaries_from_documents(session.scalars(q.execution_options(yield_per=FLOW_PAGE)))


def task_summaries(session: Session, store: Store, capture_id: str, flow_ids: Sequence[int]) -> FlowSummaries:
    """The summaries of flows ``flow_ids`` of a capture, in flow order: the row groups of the stored summaries
    holding them (a capture ingested before those were: their rows of ``flows`` only)."""
    if store.exists(flows_key(capture_id)):
        return FlowSummaries(store.read_parquet(flows_key(capture_id), pl.col("flow_id").is_in(list(flow_ids))))
    q = (select(Flow.summary).where(Flow.capture_id == capture_id, Flow.flow_id.in_(list(flow_ids)))
         .order_by(Flow.flow_id))
    return summaries_from_documents(session.scalars(q))


def capture_bulk(session: Session, store: Store, capture_id: str, truth: Truth | None) -> pl.DataFrame:
    """The capture's bulk flows (``replay.capture.bulk_flows``: ``flow_id``, ``goodput_bps``), from the columns of
    the stored summaries that decide it (a capture ingested before those were: the rows of ``flows`` that carried
    enough bytes only)."""
    if store.exists(flows_key(capture_id)):
        return bulk_flows(capture_summaries(session, store, capture_id, BULK_FIELDS), truth)
    q = (select(Flow.summary).where(Flow.capture_id == capture_id, is_bulk(Flow.bytes, truth))
         .order_by(Flow.flow_id))
    return bulk_flows(summaries_from_documents(session.scalars(q)), truth)


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
        beat()
    store.write_parquet(flows_key(capture_id), result.flows.frame, row_group_size=TABLE_ROW_GROUP)
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
