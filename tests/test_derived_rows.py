"""A replay task's rows as the service stores them (``core.derived_rows``): the result rows made column by column
(``BatchScores.score_texts``) are the rows one dictionary per flow and estimator made — the same documents, the
same charged bytes — and ``COPY``'s text format carries any text and reads back as written."""

from __future__ import annotations

import json
from typing import Any, cast

import numpy as np
import pytest
from sqlalchemy import Table

from ackreplay.core.capture_scoring import build_estimators
from ackreplay.core.derived_rows import copy_field, decoded_rows, encode_rows, read_field, result_rows
from ackreplay.core.orm import FlowDiagnostics, Result
from ackreplay.core.quotas import ROW_OVERHEAD, row_bytes
from ackreplay.replay.results import (
    DECISION_KEYS,
    DECISION_TRUTH_KEYS,
    SERIES_KEYS,
    TRUTH_KEYS,
    BatchDiagnostics,
    BatchResults,
    BatchScores,
    EstimatorColumns,
    FlowReplay,
    compact_json,
)

AWKWARD = ["plain", 'a "quoted" \\ back\\slash', "tab\there", "new\nline\r\n", "100 % sure", "größer ≤ µs", "\\N", ""]
FLOWS = 7


def _column(name: str, parameters: dict[str, Any], rng: np.random.Generator, truth: bool) -> EstimatorColumns:
    def values(width: int) -> np.ndarray:
        v = rng.normal(0, 1e6, (FLOWS, width))
        v[rng.random(v.shape) < 0.3] = np.nan
        v[0, 0], v[1, 0], v[2, 1], v[3, 1] = np.inf, -np.inf, 1e16, 1e-5
        v[4, 0], v[5, 1] = -0.0, 3.0
        return v

    decisions = values(len(DECISION_KEYS) + (len(DECISION_TRUTH_KEYS) if truth else 0))
    decisions[:, len(DECISION_KEYS) - 1] = rng.integers(0, 40, FLOWS)
    return EstimatorColumns(name, parameters, values(len(SERIES_KEYS)), values(len(TRUTH_KEYS)) if truth else None,
                            decisions, failures={1: AWKWARD[1], 4: AWKWARD[5], 6: AWKWARD[4]},
                            labels={"receiver": "not reproducible at the receiver", "sender": None})


def _batch(truth: bool) -> tuple[BatchScores, list[Any]]:
    rng = np.random.default_rng(7)
    ests = build_estimators(None, {})[:4]
    params = [{**dict(e.params), "note": AWKWARD[i], "nan": float("nan")} for i, e in enumerate(ests)]
    for e, p in zip(ests, params, strict=True):
        e.params = p
    columns = [_column(e.name, p, rng, truth and i % 2 == 0) for i, (e, p) in enumerate(zip(ests, params,
                                                                                           strict=True))]
    vantages = ["receiver" if i % 3 == 0 else "sender" for i in range(FLOWS)]
    return BatchScores(np.arange(10, 10 + FLOWS), vantages, columns), ests


@pytest.mark.parametrize("truth", [False, True])
def test_score_texts_are_the_score_dictionaries_encoded(truth: bool) -> None:
    batch, _ = _batch(truth)
    texts = batch.score_texts()
    assert list(texts) == [c.name for c in batch.columns]
    for pos in range(FLOWS):
        for name, document in batch.scores_of(pos).items():
            assert texts[name][pos] == compact_json(document)
            assert json.loads(texts[name][pos]).keys() == document.keys()  # (the keys' order too)


@pytest.mark.parametrize("text", [*AWKWARD, None])
def test_a_copy_field_reads_back_as_written(text: str | None) -> None:
    field = copy_field(text)
    assert "\t" not in field and "\n" not in field and "\r" not in field
    assert read_field(field) == text


def _flows(batch: BatchScores) -> list[FlowReplay]:
    nothing = np.zeros(FLOWS)
    diagnostics = BatchDiagnostics(batch.vantages, nothing, nothing, np.full((FLOWS, 1, 3), np.nan), nothing + 1448)
    results = BatchResults(batch, diagnostics, None)
    return [FlowReplay.in_batch(int(fid), batch.vantages[pos], None, (0.5 * pos, 10.0 + pos / 3), 100, results, pos,
                                (0, 0), None, {}) for pos, fid in enumerate(batch.flow_ids.tolist())]


def test_result_rows_are_the_rows_of_one_dictionary_each() -> None:
    batch, ests = _batch(True)
    flows = _flows(batch)
    flows[2].scores  # noqa: B018  (one flow's dictionaries already built: its texts come from them)
    table = cast(Table, Result.__table__)
    encoded = result_rows(table, "run\t1", "cap\\2", flows, ests, "0.1.0", "series/run/cap/1.parquet")
    expected = [{"run_id": "run\t1", "capture_id": "cap\\2", "series_key": "series/run/cap/1.parquet",
                 "version": "0.1.0", "estimator": e.name, "parameters": dict(e.params), "flow_id": r.flow_id,
                 "window": list(r.window), "scores": r.scores[e.name]} for r in flows for e in ests]
    decoded = decoded_rows(encoded)
    assert json.dumps(decoded, sort_keys=True) == json.dumps(expected, sort_keys=True)  # (NaN compares so)
    assert encoded.charged == sum(row_bytes(x["scores"], x["parameters"], x["window"]) for x in expected)
    assert encoded.charged == len(expected) * ROW_OVERHEAD + sum(
        len(compact_json(x["scores"])) + len(compact_json(x["parameters"])) + len(compact_json(x["window"]))
        for x in expected)


def test_encoded_rows_read_back_as_given() -> None:
    rows = [{"run_id": "r", "capture_id": AWKWARD[i % len(AWKWARD)], "flow_id": i,
             "data": {"note": AWKWARD[i % len(AWKWARD)], "x": [1.5, None, {"y": i}]}} for i in range(20)]
    encoded = encode_rows(cast(Table, FlowDiagnostics.__table__), rows)
    assert decoded_rows(encoded) == rows
    assert encoded.charged == sum(row_bytes(r["data"]) for r in rows)
    assert encode_rows(cast(Table, FlowDiagnostics.__table__), []).lines == []
