"""A run's comparison document — the layout and numbers ``ackreplay score --format json`` prints for the
same captures — as JSON text produced a page of flows at a time.

A run of 1 000 captures × 77 variants, or one capture of 200 000 flows, makes a document of tens or hundreds
of MB: built as one object, all of it would be held in memory (and a database connection with it) before
the first byte went out. Instead each page of ``PAGE_FLOWS`` flows is read in its own short session, encoded and
handed on, so memory and connections stay bounded by a page and the answer starts at once. The text is
one JSON document, equal once parsed to the one built whole. Pages are read in separate transactions: a
run still in progress may show a capture's flows from two moments (a finished run never changes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

import polars as pl
from sqlalchemy import select

from ackreplay.core.capture_scoring import summary_document
from ackreplay.core.db import session_scope
from ackreplay.core.orm import Capture, FlowDiagnostics, Result, Run, RunCapture
from ackreplay.core.run_views import PATH_KEYS
from ackreplay.core.skipped_flows import holds_every_one
from ackreplay.core.storage import get_store
from ackreplay.core.stored_capture import summaries_from_documents
from ackreplay.core.stored_flows import flows_after
from ackreplay.core.stored_names import current_names
from ackreplay.replay.engine import plan_reasons

#: Flows per page: a page's result rows (× estimators and variants) are what memory holds at a time.
PAGE_FLOWS = 500


def document_chunks(run_id: str, *, offset: int = 0, limit: int | None = None) -> Iterator[bytes]:
    """The run's document as JSON text, in pieces; ``offset`` and ``limit`` choose its captures (in the order
    the run lists them)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            return
        names = [e["name"] for e in run.estimators]
        head = {"ackreplay_version": run.version, "run_id": run.id,
                "estimators": [{**e, "version": run.version} for e in run.estimators]}
        q = select(RunCapture.capture_id).where(RunCapture.run_id == run_id).order_by(
            RunCapture.queued_at, RunCapture.capture_id).offset(offset)
        capture_ids = list(session.scalars(q.limit(limit) if limit is not None else q))
    yield (json.dumps(head)[:-1] + ', "captures": [').encode()
    written = False
    for capture_id in capture_ids:
        for i, piece in enumerate(_capture_chunks(run_id, names, capture_id)):
            yield b", " + piece if i == 0 and written else piece
            written = True
    yield b"]}"


def _capture_chunks(run_id: str, names: list[str], capture_id: str) -> Iterator[bytes]:
    """One capture's part of the document (nothing when it was deleted meanwhile): its head, its flows a
    page at a time, its capture-level scores and the groups of flows sharing a bottleneck."""
    with session_scope() as session:
        rc = session.get(RunCapture, (run_id, capture_id))
        cap = session.get(Capture, capture_id)
        if rc is None or cap is None:
            return
        head = {"capture_id": cap.id, "file": cap.name, "status": rc.status, "error": rc.error, "stats": cap.stats,
                "truth": cap.truth, "truth_source": "upload" if cap.truth else None}
        # (a run planned before its skipped flows were summarised holds every one: else each page decides its own)
        scores, skipped = rc.scores or {}, (rc.skipped or {}) if holds_every_one(rc) else None
    yield (json.dumps(head)[:-1] + ', "flows": [').encode()
    groups: dict[str, dict[str, Any]] = {}
    after = -1
    while True:
        page = _flow_page(run_id, capture_id, after, names, skipped, groups)
        if not page.docs:
            break
        yield (", " if after >= 0 else "").encode() + ", ".join(json.dumps(d) for d in page.docs).encode()
        after = page.last
    path_groups = sorted(groups.values(), key=lambda g: g["flows"][0])
    yield f'], "scores": {json.dumps(scores)}, "path_groups": {json.dumps(path_groups)}}}'.encode()


class _Page(NamedTuple):
    """One page of a capture's flow documents and the last flow id on it."""

    docs: list[dict[str, Any]]
    last: int


def _flow_page(run_id: str, capture_id: str, after: int, names: list[str], skipped: dict[str, str] | None,
               groups: dict[str, dict[str, Any]]) -> _Page:
    """The documents of the next ``PAGE_FLOWS`` flows after flow ``after`` (their path groups added to
    ``groups``); ``skipped``: why each skipped flow was (flow id as text → reason), or None to decide it from
    the page's summaries (``replay.engine.plan_reasons``, as the run's plan did)."""
    with session_scope() as session:
        flows = flows_after(session, get_store(), capture_id, after, PAGE_FLOWS)
        if not flows:
            return _Page([], after)
        lo, hi = int(flows[0]["flow_id"]), int(flows[-1]["flow_id"])
        results: dict[int, dict[str, Any]] = {}
        windows: dict[int, list[float] | None] = {}
        for r in session.scalars(select(Result).where(Result.run_id == run_id, Result.capture_id == capture_id,
                                                      Result.flow_id.between(lo, hi))):
            results.setdefault(r.flow_id, {})[r.estimator] = r.scores
            windows[r.flow_id] = r.window
        diagnostics = {d.flow_id: current_names(d.data) for d in session.scalars(select(FlowDiagnostics).where(
            FlowDiagnostics.run_id == run_id, FlowDiagnostics.capture_id == capture_id,
            FlowDiagnostics.flow_id.between(lo, hi)))}
        summaries = [(int(f["flow_id"]), f) for f in flows]
    if skipped is None:
        decided = plan_reasons(summaries_from_documents(summary for _, summary in summaries))
        skipped = {str(f): r for f, r in decided.filter(pl.col("reason").is_not_null()).iter_rows()}
    for d in diagnostics.values():
        if d.get("path_group"):
            groups[json.dumps(d["path_group"], sort_keys=True)] = d["path_group"]
    docs = []
    for fid, summary in summaries:
        doc: dict[str, Any] = {"flow_id": fid}
        doc.update({k: v for k, v in summary_document(summary).items() if k != "flow_id"})
        doc["replayed"] = fid in results
        doc["skipped_reason"] = skipped.get(str(fid))
        doc["scores"] = {n: results[fid][n] for n in names} if fid in results else {}
        doc["score_window_rel_s"] = windows.get(fid)
        # the path (§9) is stored with the diagnostics; the document keeps it beside them, as the CLI's does
        diag = diagnostics.get(fid)
        doc["diagnostics"] = {k: v for k, v in diag.items() if k not in PATH_KEYS} if diag is not None else None
        doc["path"] = diag.get("path") if diag is not None else None
        doc["path_models"] = diag.get("path_models") if diag is not None else None
        doc["limits"] = (diag.get("limits") or {}).get("shares") if diag is not None else None
        doc["comparable"] = diag.get("comparable_reason") is None if diag is not None else None
        doc["comparable_reason"] = diag.get("comparable_reason") if diag is not None else None
        doc["frames"] = diag.get("frames") if diag is not None else None  # stored with a replayed flow's diagnostics
        docs.append(doc)
    return _Page(docs, hi)
