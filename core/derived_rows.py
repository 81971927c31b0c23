"""A replay task's derived rows (results, decisions, diagnostics) encoded once: each row's JSON documents are
encoded as ``core.quotas.row_bytes`` measures them, the owner's quota is charged those bytes, and the same text
is what PostgreSQL's ``COPY`` receives (encoding every document twice — once to count it, once to send it — was
half the time a task spent writing rows). Other databases take the rows as one executemany (SQLAlchemy encodes
them there)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, Table, insert
from sqlalchemy.orm import Session

from ackreplay.core.quotas import ROW_OVERHEAD, encode_document


@dataclass(frozen=True)
class EncodedRows:
    """Rows of one table (all with the same keys, ``names``): as given (``rows``) and as ``COPY`` sends them
    (``copy_rows``, each JSON column's value as its encoded text), and the bytes they are charged (``charged``)."""

    table: Table
    names: list[str]
    rows: list[dict[str, Any]]
    copy_rows: list[list[Any]]
    charged: int


def encode_rows(table: Table, rows: list[dict[str, Any]]) -> EncodedRows:
    """``rows`` of ``table`` with their JSON columns encoded once, and the bytes they are charged: per row
    ``ROW_OVERHEAD`` and its JSON documents' encoded bytes (``quotas.row_bytes``)."""
    names = list(rows[0]) if rows else []
    json_columns = {c.name for c in table.columns if isinstance(c.type, JSON)}
    json_at = [i for i, name in enumerate(names) if name in json_columns]
    copy_rows: list[list[Any]] = []
    charged = 0
    # a document shared by many rows (an estimator's parameters, a flow's window) is encoded once: by identity,
    # as every value stays referenced by ``rows`` meanwhile. The text is ASCII: its length is its bytes.
    encoded: dict[int, str] = {}
    for row in rows:
        out = [row[name] for name in names]
        for i in json_at:
            value = out[i]
            text = encoded.get(id(value))
            if text is None:
                text = encoded[id(value)] = encode_document(value)
            out[i] = text
            charged += len(text)
        copy_rows.append(out)
    return EncodedRows(table, names, rows, copy_rows, charged + ROW_OVERHEAD * len(rows))


def insert_encoded(session: Session, encoded: EncodedRows) -> None:
    """Insert the rows: on PostgreSQL through ``COPY`` of their encoded text (an executemany sends a statement per
    row, and a replay task of a thousand flows writes tens of thousands of rows), elsewhere as one executemany."""
    if not encoded.rows:
        return
    if session.get_bind().dialect.name != "postgresql":
        session.execute(insert(encoded.table), encoded.rows)
        return
    raw = session.connection().connection.driver_connection
    assert raw is not None
    columns = ", ".join(f'"{n}"' for n in encoded.names)  # (quoted: "window" is a keyword)
    with raw.cursor() as cur, cur.copy(f'COPY "{encoded.table.name}" ({columns}) FROM STDIN') as copy:
        for row in encoded.copy_rows:
            copy.write_row(row)
