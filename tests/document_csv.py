"""The CSV of a score document, built row by row from its dictionaries: the reference that the CSV written
from replay's score columns (``cli.score_csv.scores_csv_of``) is checked against, and a reader of the
service's documents in tests."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from ackreplay.cli.score_csv import PATH_FIGURES, RETRANSMISSION_COLUMNS
from ackreplay.core.capture_scoring import csv_cell, jsonable
from ackreplay.scoring.limits import LABELS
from ackreplay.scoring.truth import DEFAULT_MIN_FLOW_BYTES


def scores_csv(doc: dict[str, Any]) -> str:
    """The CSV of a score document (``core.capture_scoring.document``; JSON-safe or not: a NaN is an empty cell)."""
    rows: list[dict[str, Any]] = []
    for cap in doc["captures"]:
        min_bytes = (cap.get("truth") or {}).get("min_flow_bytes") or DEFAULT_MIN_FLOW_BYTES
        file = csv_cell(cap["file"])  # (a file name is the one text a user chose)
        for f in cap["flows"]:
            path = f.get("path") or {}  # the flow's path (§9), the same on each of its rows
            limits = f.get("limits") or {}  # what limited its sender (each label's share), likewise
            for name, s in f["scores"].items():
                row = {"file": file, "flow_id": f["flow_id"], "sender": f["sender"],
                       "receiver": f["receiver"], "bytes": f["bytes"], "bulk": str(f["bytes"] >= min_bytes),
                       "vantage": f["vantage"], "reconstruction": f.get("reconstruction") or None,
                       **{k: f[k] for k in RETRANSMISSION_COLUMNS}, "estimator": name}
                row.update({k: jsonable(v) for k, v in s.items() if k != "parameters"})
                row["parameters"] = json.dumps(jsonable(s.get("parameters", {})), sort_keys=True)
                row.update({f"path_{k}": jsonable(path.get(k)) for k in PATH_FIGURES})
                row.update({f"limit_{k}": limits.get(k) for k in LABELS})
                row.update(comparable=str(f.get("comparable")), comparable_reason=f.get("comparable_reason"))
                rows.append(row)
    if not rows:
        return ""
    seen: dict[str, None] = {}  # every column, in first-seen order
    for r in rows:
        seen.update(dict.fromkeys(r))
    return pl.DataFrame(rows, infer_schema_length=None).select(list(seen)).write_csv(line_terminator="\n")
