"""A capture's flows as the service reads them, a flow, a few or a page at a time: the flow summaries stored as Parquet
beside the capture's tables (``core.stored_capture.flows_key``, one row per flow in flow order), or — for a
capture ingested before they were — its rows of the ``flows`` table. Ingest writes no database row per flow: a
million of them cost more than ``ackreplay score``'s whole run, and every question the service answers about a
flow is answered from its summary's columns (row groups skipped by their ``flow_id`` statistics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import polars as pl
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.orm import Flow
from ackreplay.core.storage import Store
from ackreplay.core.stored_capture import flows_key, tables_key
from ackreplay.ingest.model import FLOW_FIELDS


class StoredFlow(NamedTuple):
    """One flow of a stored capture: its summary (``FlowSummary.to_dict``; a NaN is None, as JSON has no NaN) and
    the key of the capture's tables."""

    capture_id: str
    flow_id: int
    summary: dict[str, Any]
    tables_key: str


def documents(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The summary documents of the rows of a stored summaries' table (every field of ``FlowSummary``, a NaN as
    None: what the ``flows`` table held as JSON)."""
    return frame.select(FLOW_FIELDS).with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None)).to_dicts()


def in_parquet(store: Store, capture_id: str) -> bool:
    """Whether the capture's flow summaries are stored as Parquet (every capture ingested since they were)."""
    return store.exists(flows_key(capture_id))


def flow_page(session: Session, store: Store, capture_id: str, *, offset: int, limit: int
              ) -> tuple[list[dict[str, Any]], int]:
    """The summary documents of flows ``offset`` … ``offset + limit`` in flow order, and how many flows there are."""
    if in_parquet(store, capture_id):
        key = flows_key(capture_id)
        total = store.read_parquet(key, columns=["flow_id"]).height
        return documents(store.read_parquet(key, offset=offset, limit=limit)), total
    mine = Flow.capture_id == capture_id
    total = session.scalar(select(func.count()).select_from(Flow).where(mine)) or 0
    rows = session.scalars(select(Flow.summary).where(mine).order_by(Flow.flow_id).offset(offset).limit(limit))
    return list(rows), int(total)


def flows_after(session: Session, store: Store, capture_id: str, after: int, limit: int) -> list[dict[str, Any]]:
    """The summary documents of the next ``limit`` flows after flow id ``after``, in flow order."""
    if in_parquet(store, capture_id):
        return documents(store.read_parquet(flows_key(capture_id), pl.col("flow_id") > after, limit=limit))
    return list(session.scalars(select(Flow.summary).where(Flow.capture_id == capture_id, Flow.flow_id > after)
                                .order_by(Flow.flow_id).limit(limit)))


def stored_flow(session: Session, store: Store, capture_id: str, flow_id: int) -> StoredFlow | None:
    """One flow of the capture, None when it has no such flow."""
    if in_parquet(store, capture_id):
        docs = documents(store.read_parquet(flows_key(capture_id), pl.col("flow_id") == flow_id))
        return StoredFlow(capture_id, flow_id, docs[0], tables_key(capture_id)) if docs else None
    row = session.scalar(select(Flow).where(Flow.capture_id == capture_id, Flow.flow_id == flow_id))
    return StoredFlow(capture_id, flow_id, row.summary, row.tables_key) if row is not None else None


def flow_summaries(session: Session, store: Store, capture_id: str, flow_ids: Sequence[int]
                   ) -> dict[int, dict[str, Any]]:
    """The summary documents of the capture's flows ``flow_ids`` (those it has), by flow id: one read for all."""
    ids = [int(f) for f in flow_ids]
    if in_parquet(store, capture_id):
        docs = documents(store.read_parquet(flows_key(capture_id), pl.col("flow_id").is_in(ids)))
    else:
        docs = list(session.scalars(select(Flow.summary).where(Flow.capture_id == capture_id, Flow.flow_id.in_(ids))))
    return {int(d["flow_id"]): d for d in docs}


def flow_fields(session: Session, store: Store, capture_id: str, names: Sequence[str],
                flow_ids: Sequence[int] | None = None) -> pl.DataFrame:
    """Fields ``names`` (with ``flow_id``) of the capture's flows (``flow_ids``: of these only), in flow order; a
    field a summary stored in the database lacks is null."""
    cols = ["flow_id", *[n for n in names if n != "flow_id"]]
    if in_parquet(store, capture_id):
        where = pl.col("flow_id").is_in(list(flow_ids)) if flow_ids is not None else None
        return store.read_parquet(flows_key(capture_id), where, columns=cols)
    q = select(Flow.summary).where(Flow.capture_id == capture_id)
    q = q.where(Flow.flow_id.in_(list(flow_ids))) if flow_ids is not None else q
    docs = list(session.scalars(q.order_by(Flow.flow_id)))
    return pl.DataFrame({n: [d.get(n) for d in docs] for n in cols})
