"""A capture's flows written to the database's ``flows`` table straight from ingest's columns: a chunk of rows
at a time, PostgreSQL through ``COPY`` (CSV made by Polars, each summary's JSON encoded by Polars too), SQLite
through batched inserts — never an ORM object or a Python dictionary per flow of a million-flow capture.
The task's heartbeat beats between chunks (``core.heartbeat.beat``)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import polars as pl
from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from ackreplay.core.heartbeat import beat
from ackreplay.core.orm import Flow
from ackreplay.ingest.model import FLOW_FIELDS, FlowSummaries

#: Flows written per chunk: a few MB of CSV, one heartbeat's worth of work at most.
CHUNK_FLOWS = 20_000
#: The columns of ``flows`` written, in the order of the CSV (``id`` is the table's sequence).
COLUMNS = ("capture_id", "flow_id", "sender", "receiver", "vantage", "bytes", "goodput_bps", "summary",
           "tables_key")


def write_flow_rows(session: Session, capture_id: str, tables_key: str, summaries: FlowSummaries) -> int:
    """Replace the capture's rows of ``flows`` by one per summary (its columns, and the whole summary as JSON,
    as ``FlowSummary.to_dict`` has it; a NaN is null there, as JSON has no NaN); how many were written."""
    session.execute(delete(Flow).where(Flow.capture_id == capture_id))
    copying = session.get_bind().dialect.name == "postgresql"
    for part in chunks(summaries.frame, capture_id, tables_key):
        if copying:
            _copy(session, part)
        else:
            session.execute(insert(Flow), [{**row, "summary": json.loads(row["summary"])} for row in part.to_dicts()])
        beat()
    return len(summaries)


def chunks(frame: pl.DataFrame, capture_id: str, tables_key: str) -> Iterator[pl.DataFrame]:
    """The rows of ``flows`` for the summaries ``frame``, :data:`CHUNK_FLOWS` at a time (columns :data:`COLUMNS`;
    ``summary`` the JSON text of each summary)."""
    for part in frame.iter_slices(CHUNK_FLOWS):
        yield part.select(
            pl.lit(capture_id).alias("capture_id"), "flow_id", "sender", "receiver", "vantage", "bytes",
            "goodput_bps", pl.struct(list(FLOW_FIELDS)).struct.json_encode().alias("summary"),
            pl.lit(tables_key).alias("tables_key"))


def _copy(session: Session, part: pl.DataFrame) -> None:
    buf = io.BytesIO()
    part.write_csv(buf, include_header=False, null_value="")
    raw = session.connection().connection.driver_connection
    assert raw is not None
    with raw.cursor() as cur, cur.copy(f"COPY flows ({', '.join(COLUMNS)}) FROM STDIN WITH (FORMAT csv)") as copy:
        copy.write(buf.getvalue())

