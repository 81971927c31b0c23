"""A replay task's derived rows (results, decisions, diagnostics) as PostgreSQL's ``COPY`` receives them, each
JSON document encoded once: the owner's quota is charged its encoded bytes (``core.quotas.row_bytes``) and the
same text is sent. Each table's rows become lines of ``COPY``'s text format, sent as one buffer.

The result rows — a row per flow and estimator, most of a task's rows — are made from the replay's score
columns (``replay.results.BatchScores.score_texts``): no dictionary per row, and the fields every row of an
estimator shares (the run, the capture, the parameters, ...) escaped once. Building a dictionary per row and
encoding it was 40 % of a task's row time, and those objects set off the collector's full passes over the
worker's heap. Other databases take the rows as one executemany (their documents decoded again)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, Integer, Table, insert
from sqlalchemy.orm import Session

from ackreplay.core.quotas import ROW_OVERHEAD, encode_document
from ackreplay.estimators import Estimator
from ackreplay.replay.results import FlowReplay

#: ``COPY``'s text format: these characters of a field are written as escapes (the backslash first); a missing
#: value is ``\N``.
_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
NULL = "\\N"


def copy_field(value: Any) -> str:
    """``value`` as a field of ``COPY``'s text format (None as ``\\N``, text escaped, anything else as ``str``)."""
    if value is None:
        return NULL
    if type(value) is str:
        for char, escape in _ESCAPES:  # (str.replace: a document of many escapes is tens of kB)
            if char in value:
                value = value.replace(char, escape)
        return value
    return str(value)


def read_field(field: str) -> str | None:
    """A field of ``COPY``'s text format as :func:`copy_field` wrote it, back to its text (None for ``\\N``)."""
    if field == NULL:
        return None
    return re.sub(r"\\(.)", lambda m: _UNESCAPES[m.group(1)], field) if "\\" in field else field


@dataclass(frozen=True)
class EncodedRows:
    """Rows of one table as ``COPY`` receives them: ``lines``, one per row in ``COPY``'s text format (the fields
    of ``names`` tab-separated, each JSON column's document as its encoded text), and the bytes they are charged."""

    table: Table
    names: list[str]
    lines: list[str]
    charged: int


def encode_rows(table: Table, rows: list[dict[str, Any]]) -> EncodedRows:
    """``rows`` of ``table`` (all with the same keys) with their JSON columns encoded once, and the bytes they
    are charged: per row ``ROW_OVERHEAD`` and its JSON documents' encoded bytes (``quotas.row_bytes``)."""
    names = list(rows[0]) if rows else []
    json_columns = {c.name for c in table.columns if isinstance(c.type, JSON)}
    json_at = [i for i, name in enumerate(names) if name in json_columns]
    lines: list[str] = []
    charged = 0
    # a document shared by many rows is encoded once: by identity, as every value stays referenced by ``rows``
    # meanwhile. The text is ASCII: its length is its bytes.
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
        lines.append("\t".join(map(copy_field, out)) + "\n")
    return EncodedRows(table, names, lines, charged + ROW_OVERHEAD * len(rows))


def result_rows(table: Table, run_id: str, capture_id: str, flows: Sequence[FlowReplay],
                estimators: Sequence[Estimator], version: str, series_key: str) -> EncodedRows:
    """The ``results`` rows of replayed ``flows``: a row per flow and estimator (flows in order, then estimators),
    its scores (``FlowReplay.score_texts``), the estimator's parameters, the flow's score window, as
    :func:`encode_rows` makes them from one dictionary per row."""
    names = ["run_id", "capture_id", "series_key", "version", "estimator", "parameters", "flow_id", "window",
             "scores"]
    parameters = [encode_document(dict(e.params)) for e in estimators]
    heads = ["\t".join(map(copy_field, (run_id, capture_id, series_key, version, e.name, p))) + "\t"
             for e, p in zip(estimators, parameters, strict=True)]
    lines: list[str] = []
    charged = len(flows) * sum(map(len, parameters))
    for r in flows:
        window = encode_document(list(r.window))
        texts = r.score_texts()
        scores = [texts[e.name] for e in estimators]
        charged += len(window) * len(estimators) + sum(map(len, scores))
        tail = f"{r.flow_id}\t{copy_field(window)}\t"
        lines += [f"{head}{tail}{copy_field(text)}\n" for head, text in zip(heads, scores, strict=True)]
    return EncodedRows(table, names, lines, charged + ROW_OVERHEAD * len(lines))


def decoded_rows(encoded: EncodedRows) -> list[dict[str, Any]]:
    """The rows again as dictionaries of their values (each JSON document decoded), for an executemany."""
    kinds = [encoded.table.columns[name].type for name in encoded.names]
    rows = []
    for line in encoded.lines:
        row: dict[str, Any] = {}
        for name, kind, field in zip(encoded.names, kinds, line[:-1].split("\t"), strict=True):
            value = read_field(field)
            if value is not None and isinstance(kind, JSON):
                row[name] = json.loads(value)
            else:
                row[name] = int(value) if value is not None and isinstance(kind, Integer) else value
        rows.append(row)
    return rows


def insert_encoded(session: Session, encoded: EncodedRows) -> None:
    """Insert the rows: on PostgreSQL through ``COPY`` of their lines as one buffer (an executemany sends a
    statement per row, and a replay task of a thousand flows writes tens of thousands of rows), elsewhere as one
    executemany."""
    if not encoded.lines:
        return
    if session.get_bind().dialect.name != "postgresql":
        session.execute(insert(encoded.table), decoded_rows(encoded))
        return
    raw = session.connection().connection.driver_connection
    assert raw is not None
    columns = ", ".join(f'"{n}"' for n in encoded.names)  # (quoted: "window" is a keyword)
    with raw.cursor() as cur, cur.copy(f'COPY "{encoded.table.name}" ({columns}) FROM STDIN') as copy:
        copy.write("".join(encoded.lines))
