"""Batches: many captures (files and/or zip/tar archives) in one request, one run, one scoreboard."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import Response

from api.deps import OwnerDep, SessionDep, SettingsDep, StoreDep
from api.routes.captures import ERRORS, _truth_field
from core import batches as svc
from core import results

router = APIRouter(prefix="/batches", tags=["batches"])


@router.post("", status_code=202, responses=ERRORS, summary="Score many captures together (files or archives)")
def create_batch(session: SessionDep, owner: OwnerDep, store: StoreDep, settings: SettingsDep,
                 files: Annotated[list[UploadFile], File(description="captures and/or .zip/.tar(.gz) archives")],
                 name: Annotated[str | None, Form()] = None,
                 tags: Annotated[str | None, Form(description="comma-separated tags for every capture")] = None,
                 truth: Annotated[str | None, Form(description="ground truth for every capture")] = None,
                 ) -> dict[str, Any]:
    tag_list = [t.strip() for t in (tags or "").split(",") if t.strip()]
    batch = svc.create(session, store, owner, [(f.filename or "upload", f.file) for f in files],
                       name=name or (files[0].filename or "batch"), truth=_truth_field(truth), tags=tag_list,
                       limit=settings.max_upload_bytes)
    return {"batch_id": batch.id, "run_id": batch.run_id, "url": f"/api/v1/batches/{batch.id}",
            "captures": batch.capture_ids, "rejected": batch.rejected}


@router.get("/{batch_id}", responses=ERRORS, summary="A batch: its captures and its run's progress")
def get_batch(batch_id: str, session: SessionDep, owner: OwnerDep) -> dict[str, Any]:
    batch = svc.get(session, owner, batch_id)
    run = results.get_run(session, owner, batch.run_id) if batch.run_id else None
    return {"id": batch.id, "name": batch.name, "captures": batch.capture_ids, "rejected": batch.rejected,
            "run": results.status(session, run) if run else None}


@router.get("/{batch_id}/scoreboard", responses=ERRORS,
            summary="Estimators ranked over every trace of the batch (JSON or CSV)")
def scoreboard(batch_id: str, session: SessionDep, owner: OwnerDep,
               format: Annotated[str, Query(pattern="^(json|csv)$")] = "json") -> Any:
    board = svc.scoreboard(session, svc.get(session, owner, batch_id))
    if format == "csv":
        return Response(svc.scoreboard_csv(board), media_type="text/csv")
    return board
