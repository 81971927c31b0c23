"""Batches: many captures (files and/or zip/tar archives) in one request, one run, one scoreboard."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Path, Query, UploadFile
from fastapi.responses import Response

from ackreplay.api.deps import (
    INCLUDE_INCOMPARABLE,
    INCLUDE_NOT_REPRODUCIBLE,
    OwnerDep,
    PageLimit,
    SessionDep,
    SettingsDep,
    StoreDep,
    next_page,
)
from ackreplay.api.errors import RUN_LIMITS, responses
from ackreplay.api.routes.captures import NameField, Offset, TagsField, TruthField, tag_list, truth_field
from ackreplay.api.schemas import BATCH_ID, ID_PATTERN, BatchCreated, BatchOut, ScoreboardOut
from ackreplay.core import capture_batches as svc
from ackreplay.core import run_views as results
from ackreplay.core.captures import display_name

router = APIRouter(prefix="/batches", tags=["batches"])
BatchId = Annotated[str, Path(description="a batch's id", pattern=ID_PATTERN, examples=[BATCH_ID])]


@router.post("", status_code=202, response_model=BatchCreated,
             responses=responses("no_captures", "invalid_archive", "archive_too_large", "quota_exceeded",
                                 "invalid_truth", "upload_too_large", "cross_origin", "request_timeout", *RUN_LIMITS),
             summary="Score many captures together (files or archives)",
             description="Members that are not captures are listed in `rejected` (refused by their first bytes, "
                         "before they are decompressed in full). An archive whose members decompress past "
                         "`ACKREPLAY_MAX_ARCHIVE_BYTES`, or a batch past the owner's quota (its body too), is "
                         "rejected whole (413) and nothing of it is kept. The answer lists the first 100 captures "
                         "and rejected members; `GET /batches/{id}` pages through all of them.")
def create_batch(session: SessionDep, owner: OwnerDep, store: StoreDep, settings: SettingsDep,
                 files: Annotated[list[UploadFile], File(description="captures and/or .zip/.tar(.gz) archives")],
                 name: NameField = None, tags: TagsField = None, truth: TruthField = None) -> dict[str, Any]:
    # the token and the announced length were checked before the body was read (api.guard)
    tag_values, truth_value = tag_list(tags), truth_field(truth)
    batch = svc.create(session, store, owner, [(f.filename or "upload", f.file) for f in files],
                       name=name or display_name(files[0].filename or "batch"), truth=truth_value, tags=tag_values,
                       limit=settings.max_upload_bytes, max_archive_bytes=settings.max_archive_bytes)
    shown = results.STATUS_PAGE
    return {"batch_id": batch.id, "run_id": batch.run_id, "url": f"/api/v1/batches/{batch.id}",
            "captures": batch.capture_ids[:shown], "captures_total": len(batch.capture_ids),
            "rejected": batch.rejected[:shown], "rejected_total": len(batch.rejected)}


@router.get("/{batch_id}", response_model=BatchOut, responses=responses("batch_not_found"),
            summary="A batch: its captures and its run's progress (a page at a time)",
            description="`offset` and `limit` (100 by default) page through the batch's captures, its rejected "
                        "members and its run's captures together; `next` is the following page's URL.")
def get_batch(batch_id: BatchId, session: SessionDep, owner: OwnerDep, offset: Offset = 0,
              limit: PageLimit = results.STATUS_PAGE) -> dict[str, Any]:
    batch = svc.get(session, owner, batch_id)
    run = results.get_run(session, owner, batch.run_id) if batch.run_id else None
    status = results.status(session, run, offset=offset, limit=limit) if run else None
    longest = max(len(batch.capture_ids), len(batch.rejected), status["captures_total"] if status else 0)
    return {"id": batch.id, "name": batch.name, "captures": batch.capture_ids[offset: offset + limit],
            "captures_total": len(batch.capture_ids), "rejected": batch.rejected[offset: offset + limit],
            "rejected_total": len(batch.rejected), "offset": offset, "limit": limit,
            "next": next_page(f"/api/v1/batches/{batch.id}", offset, limit, longest), "run": status}


@router.get("/{batch_id}/scoreboard", response_model=ScoreboardOut, response_model_exclude_unset=True,
            responses={200: {"content": {"text/csv": {"schema": {"type": "string"},
                                                      "example": "score,better,ranked,estimator,mean,median,q1,q3,"
                                                                 "ci_low,ci_high,rank,ties,wins,flows\n"}},
                             "description": "the scoreboard as JSON, or as CSV with format=csv"},
                       **responses("batch_not_found", "run_not_found")},
            summary="Estimators ranked over every trace of the batch (JSON or CSV)")
def scoreboard(batch_id: BatchId, session: SessionDep, owner: OwnerDep,
               format: Annotated[str, Query(pattern="^(json|csv)$", examples=["json"])] = "json",
               include_not_reproducible: INCLUDE_NOT_REPRODUCIBLE = False,
               include_incomparable: INCLUDE_INCOMPARABLE = False) -> Any:
    board = svc.scoreboard(session, svc.get(session, owner, batch_id), include_not_reproducible, include_incomparable)
    if format == "csv":
        return Response(svc.scoreboard_csv(board), media_type="text/csv")
    return board
