"""Runs: start one, follow it, and read its results (scores, document, series, decisions, leaderboard)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import Response

from api.deps import OwnerDep, SessionDep, StoreDep
from api.metrics import RUNS
from api.routes.captures import ERRORS, table_response
from api.schemas import Page, RunCreated, RunIn
from core import captures as cap_svc
from core import results
from core.pipeline import estimator_spec, start_run

router = APIRouter(tags=["runs"])


@router.post("/runs", status_code=202, response_model=RunCreated, responses=ERRORS,
             summary="Start a run: captures × estimators (with parameters)")
def create_run(body: RunIn, session: SessionDep, owner: OwnerDep) -> RunCreated:
    caps = [cap_svc.get(session, owner, cid) for cid in body.captures]
    run = start_run(session, owner, caps, estimator_spec(body.estimators))
    RUNS.inc()
    return RunCreated(run_id=run.id, url=f"/api/v1/runs/{run.id}", status=run.status)


@router.get("/runs", responses=ERRORS, summary="The caller's runs, newest first")
def list_runs(session: SessionDep, owner: OwnerDep, capture: str | None = None,
              limit: Annotated[int, Query(ge=1, le=500)] = 100) -> list[dict[str, Any]]:
    return results.list_runs(session, owner, capture_id=capture, limit=limit)


@router.get("/runs/{run_id}", responses=ERRORS, summary="Status, progress, timings and errors of a run")
def get_run(run_id: str, session: SessionDep, owner: OwnerDep) -> dict[str, Any]:
    return results.status(session, results.get_run(session, owner, run_id))


@router.get("/runs/{run_id}/document", responses=ERRORS,
            summary="The run as `ackreplay score --format json` prints it")
def run_document(run_id: str, session: SessionDep, owner: OwnerDep) -> dict[str, Any]:
    return results.document(session, results.get_run(session, owner, run_id))


@router.get("/runs/{run_id}/scores", response_model=Page, responses=ERRORS,
            summary="Scores per flow and estimator; filter and sort")
def run_scores(run_id: str, session: SessionDep, owner: OwnerDep, capture: str | None = None,
               estimator: str | None = None, flow: int | None = None, sort: str | None = None,
               order: Annotated[str, Query(pattern="^(asc|desc)$")] = "asc",
               limit: Annotated[int, Query(ge=1, le=5000)] = 500, offset: Annotated[int, Query(ge=0)] = 0) -> Page:
    run = results.get_run(session, owner, run_id)
    rows, total = results.score_rows(session, run, capture_id=capture, estimator=estimator, flow_id=flow, sort=sort,
                                     descending=order == "desc", limit=limit, offset=offset)
    return Page(items=rows, total=total, limit=limit, offset=offset)


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/series", responses=ERRORS,
            summary="Estimates over time (JSON downsampled to `points`, or full-resolution Parquet/CSV)",
            description="JSON: `{columns, rows, data: [{t, t_rel, achieved_bps, [truth_bps], <estimator>_bps…}]}`; "
                        "rates in bits/s, times in s (epoch and since the flow's first packet).")
def run_series(run_id: str, capture_id: str, flow_id: int, session: SessionDep, owner: OwnerDep, store: StoreDep,
               estimators: Annotated[str | None, Query(description="comma-separated; default all")] = None,
               points: Annotated[int | None, Query(ge=2, le=200_000)] = 2000,
               format: Annotated[str, Query(pattern="^(json|parquet|csv)$")] = "json") -> Any:
    run = results.get_run(session, owner, run_id)
    names = [e.strip() for e in estimators.split(",") if e.strip()] if estimators else None
    frame = results.series(session, store, run, capture_id, flow_id, estimators=names,
                           points=points if format == "json" else None)
    if format == "json":  # Polars writes the rows (the generic encoder would walk every float under the GIL)
        head = json.dumps({"columns": frame.columns, "rows": frame.height})[:-1]
        return Response(f'{head}, "data": {frame.write_json()}}}', media_type="application/json")
    return table_response(frame, format)


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/decisions", responses=ERRORS,
            summary="Every estimator's decision at every loss event of the flow")
def run_decisions(run_id: str, capture_id: str, flow_id: int, session: SessionDep,
                  owner: OwnerDep) -> list[dict[str, Any]]:
    return results.decisions(session, results.get_run(session, owner, run_id), capture_id, flow_id)


@router.get("/leaderboard", responses=ERRORS, summary="Per score: each estimator's mean, rank and wins over runs")
def leaderboard(session: SessionDep, owner: OwnerDep,
                runs: Annotated[str, Query(description="comma-separated run ids")]) -> dict[str, Any]:
    chosen = [results.get_run(session, owner, r.strip()) for r in runs.split(",") if r.strip()]
    return results.leaderboard(session, chosen)
