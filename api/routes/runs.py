"""Runs: start one, follow it, and read its results (scores, document, series, decisions, leaderboard)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response, StreamingResponse

from ackreplay.api.deps import (
    INCLUDE_INCOMPARABLE,
    INCLUDE_NOT_REPRODUCIBLE,
    OwnerDep,
    PageLimit,
    SessionDep,
    StoreDep,
    next_page,
)
from ackreplay.api.errors import RUN_LIMITS, responses
from ackreplay.api.metrics import RUNS
from ackreplay.api.routes.captures import (
    GRAPH_DESCRIPTION,
    TABLE_FORMATS,
    CaptureId,
    FlowId,
    GraphPx,
    GraphT0,
    GraphT1,
    Offset,
    table_response,
)
from ackreplay.api.schemas import (
    ID_PATTERN,
    MAX_FLOW_ID,
    RUN_ID,
    DecisionPage,
    DiagnosticsOut,
    GraphOut,
    LeaderboardOut,
    LimitsOut,
    LimitsPage,
    PathOut,
    RunCaptureStatus,
    RunCreated,
    RunDocumentOut,
    RunIn,
    RunStatusOut,
    RunSummaryOut,
    ScorePage,
    SeriesOut,
    SkippedPage,
    WhatIfIn,
    WhatIfOut,
)
from ackreplay.core import captures as cap_svc
from ackreplay.core import quotas
from ackreplay.core import run_views as results
from ackreplay.core.run_document import document_chunks
from ackreplay.core.run_tasks import estimator_spec, start_run

router = APIRouter(tags=["runs"])
RunId = Annotated[str, Path(description="a run's id", pattern=ID_PATTERN, examples=[RUN_ID])]
CaptureFilter = Annotated[str | None, Query(description="only this capture", pattern=ID_PATTERN,
                                            examples=["8c1d5e0f6a2b4c7d9e0f1a2b3c4d5e6f"])]
ESTIMATOR_ERRORS = ("unknown_estimator", "unknown_parameter", "parameter_out_of_range", "invalid_parameter",
                    "too_many_variants", "duplicate_estimator")
RESULT_ERRORS = responses("run_not_found", "results_not_found")


@router.post("/runs", status_code=202, response_model=RunCreated,
             responses=responses("capture_not_found", "cross_origin", "request_too_large", "quota_exceeded",
                                 "request_timeout", *ESTIMATOR_ERRORS, *RUN_LIMITS),
             summary="Start a run: captures × estimators (with parameters)",
             description="Each estimator at most once (`duplicate_estimator`): several values of a parameter are "
                         "one entry's sweep. A run's results count against the owner's storage quota: with "
                         "nothing left the run is refused (413 `quota_exceeded`), and a capture whose results "
                         "do not fit fails in the run with `quota_exceeded`.")
def create_run(body: RunIn, session: SessionDep, owner: OwnerDep) -> RunCreated:
    caps = [cap_svc.get(session, owner, cid) for cid in body.captures]
    items = [e if isinstance(e, str) else e.model_dump() for e in body.estimators] if body.estimators else None
    spec = estimator_spec(items)
    quotas.check_room(session, owner)
    run = start_run(session, owner, caps, spec)
    RUNS.inc()
    return RunCreated(run_id=run.id, url=f"/api/v1/runs/{run.id}", status=run.status)


@router.get("/runs", response_model=list[RunSummaryOut], responses=responses(),
            summary="The caller's runs, newest first")
def list_runs(session: SessionDep, owner: OwnerDep,
              capture: CaptureFilter = None,
              limit: Annotated[int, Query(ge=1, le=500, examples=[100])] = 100) -> list[dict[str, Any]]:
    return results.list_runs(session, owner, capture_id=capture, limit=limit)


@router.get("/runs/{run_id}", response_model=RunStatusOut, responses=responses("run_not_found"),
            summary="Status, progress, timings and errors of a run (its captures a page at a time)",
            description="`captures` is one page (`offset`, `limit`: 100 by default) with `captures_total` and the "
                        "`next` page's URL; each capture lists its first 100 skipped flows, with `skipped_total` "
                        "and `skipped_counts` per kind of reason (all of them: `…/captures/{capture_id}/skipped`).")
def get_run(run_id: RunId, session: SessionDep, owner: OwnerDep, offset: Offset = 0,
            limit: PageLimit = results.STATUS_PAGE) -> dict[str, Any]:
    run = results.get_run(session, owner, run_id)
    out = results.status(session, run, offset=offset, limit=limit)
    out["next"] = next_page(f"/api/v1/runs/{run.id}", offset, limit, out["captures_total"])
    return out


@router.get("/runs/{run_id}/captures/{capture_id}", response_model=RunCaptureStatus,
            responses=responses("run_not_found", "capture_not_found"),
            summary="One capture of a run: its status, error and skipped flows summarised",
            description="The capture's entry of the run's status, whichever page of `GET /runs/{id}` lists it (a "
                        "run may hold thousands of captures): its first 100 skipped flows, `skipped_total` and "
                        "`skipped_counts` (all of them: `…/captures/{capture_id}/skipped`).")
def get_run_capture(run_id: RunId, capture_id: CaptureId, session: SessionDep, owner: OwnerDep) -> dict[str, Any]:
    run = results.get_run(session, owner, run_id)
    return results.capture_status(results.run_capture(session, run, capture_id))


@router.get("/runs/{run_id}/captures/{capture_id}/skipped", response_model=SkippedPage,
            responses=responses("run_not_found", "capture_not_found"),
            summary="The flows of one capture a run did not replay, and why (paginated)")
def run_skipped(run_id: RunId, capture_id: CaptureId, session: SessionDep, owner: OwnerDep, store: StoreDep,
                offset: Offset = 0,
                limit: Annotated[int, Query(ge=1, le=10_000, examples=[1000])] = 1000) -> SkippedPage:
    run = results.get_run(session, owner, run_id)
    page = results.skipped_flows(session, store, run, capture_id, offset=offset, limit=limit)
    return SkippedPage.model_validate(_flow_page(page, f"/api/v1/runs/{run.id}/captures/{capture_id}/skipped",
                                                 offset, limit))


@router.get("/runs/{run_id}/captures/{capture_id}/limits", response_model=LimitsPage,
            responses=responses("run_not_found", "capture_not_found"),
            summary="What limited the sender of each flow of one capture the run replayed: each label's share "
                    "of its time, by flow id (paginated)")
def run_capture_limits(run_id: RunId, capture_id: CaptureId, session: SessionDep, owner: OwnerDep, offset: Offset = 0,
                       limit: Annotated[int, Query(ge=1, le=10_000, examples=[1000])] = 1000) -> LimitsPage:
    run = results.get_run(session, owner, run_id)
    page = results.capture_limits(session, run, capture_id, offset=offset, limit=limit)
    return LimitsPage.model_validate(_flow_page(page, f"/api/v1/runs/{run.id}/captures/{capture_id}/limits",
                                                offset, limit))


def _flow_page(page: results.RowsPage, path: str, offset: int, limit: int) -> dict[str, Any]:
    """A page of a capture's flows in a run as the API answers it (``RunFlowPage``)."""
    return {"items": page.items, "total": page.total, "limit": limit, "offset": offset,
            "next": next_page(path, offset, limit, page.total)}


# response_model documents the payload; the route streams the JSON itself (core.run_document), which FastAPI
# passes through.
@router.get("/runs/{run_id}/document", response_model=RunDocumentOut, responses=responses("run_not_found"),
            summary="The run as `ackreplay score --format json` prints it (streamed)",
            description="Streamed a page of flows at a time, however large the run (memory and the database are "
                        "held a page at a time); parsed, it equals the CLI's document of the same captures. "
                        "`offset` and `limit` choose a slice of the run's captures (default: all); the answer "
                        "says how many there are in `X-Total-Count` and links the next slice in `Link`.")
def run_document(run_id: RunId, session: SessionDep, owner: OwnerDep, offset: Offset = 0,
                 limit: Annotated[int | None, Query(ge=1, le=results.MAX_PAGE, examples=[100],
                                                    description="captures in this slice (default: all)")] = None
                 ) -> StreamingResponse:
    run = results.get_run(session, owner, run_id)
    total = results.capture_count(session, run)
    headers = {"X-Total-Count": str(total)}
    if limit is not None and (following := next_page(f"/api/v1/runs/{run.id}/document", offset, limit, total)):
        headers["Link"] = f'<{following}>; rel="next"'
    return StreamingResponse(document_chunks(run.id, offset=offset, limit=limit), media_type="application/json",
                             headers=headers)


@router.get("/runs/{run_id}/scores", response_model=ScorePage, responses=responses("run_not_found", "invalid_sort"),
            summary="Scores per flow and estimator; filter and sort")
def run_scores(run_id: RunId, session: SessionDep, owner: OwnerDep,
               capture: CaptureFilter = None,
               estimator: Annotated[str | None, Query(description="only this estimator", max_length=40,
                                                      examples=["re"])] = None,
               flow: Annotated[int | None, Query(description="only this flow id", ge=0, le=MAX_FLOW_ID,
                                                 examples=[2])] = None,
               sort: Annotated[str | None, Query(description="a score to sort by", max_length=100,
                                                 examples=["mean_abs_rel_error"])] = None,
               order: Annotated[str, Query(pattern="^(asc|desc)$", examples=["asc"])] = "asc",
               limit: Annotated[int, Query(ge=1, le=5000, examples=[500])] = 500,
               offset: Offset = 0) -> ScorePage:
    run = results.get_run(session, owner, run_id)
    rows, total = results.score_rows(session, run, capture_id=capture, estimator=estimator, flow_id=flow, sort=sort,
                                     descending=order == "desc", limit=limit, offset=offset)
    return ScorePage.model_validate({"items": rows, "total": total, "limit": limit, "offset": offset})


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/series", response_class=Response,
            responses={200: {"content": {"application/json": {"schema": SeriesOut.model_json_schema(
                ref_template="#/components/schemas/{model}")}, **TABLE_FORMATS},
                "description": "JSON (downsampled) or full-resolution Parquet/CSV"},
                **responses("run_not_found", "results_not_found", "unknown_estimator")},
            summary="Estimates over time (JSON downsampled to `points`, or full-resolution Parquet/CSV)",
            description="JSON: `{columns, rows, data: [{t, t_rel, achieved_bps, [truth_bps], <estimator>_bps…}]}`; "
                        "rates in bits/s, times in s (epoch and since the flow's first packet).")
def run_series(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep,
               store: StoreDep,
               estimators: Annotated[str | None, Query(description="comma-separated; default all", max_length=1000,
                                                       examples=["re,abse"])] = None,
               points: Annotated[int | None, Query(ge=2, le=200_000, examples=[2000])] = 2000,
               format: Annotated[str, Query(pattern="^(json|parquet|csv)$", examples=["json"])] = "json") -> Any:
    run = results.get_run(session, owner, run_id)
    names = [e.strip() for e in estimators.split(",") if e.strip()] if estimators else None
    frame = results.series(session, store, run, capture_id, flow_id, estimators=names,
                           points=points if format == "json" else None)
    if format == "json":  # Polars writes the rows (the generic encoder would walk every float under the GIL)
        head = json.dumps({"columns": frame.columns, "rows": frame.height})[:-1]
        return Response(f'{head}, "data": {frame.write_json()}}}', media_type="application/json")
    return table_response(frame, format)


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/decisions", response_model=DecisionPage,
            responses=RESULT_ERRORS, summary="Every estimator's decision at every loss event of the flow (paginated)",
            description="A page of decisions by loss event (`offset`, `limit`: 1000 by default), with `total` and "
                        "the `next` page's URL.")
def run_decisions(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep,
                  offset: Offset = 0,
                  limit: Annotated[int, Query(ge=1, le=10_000, examples=[1000])] = 1000) -> DecisionPage:
    run = results.get_run(session, owner, run_id)
    page = results.decisions(session, run, capture_id, flow_id, offset=offset, limit=limit)
    path = f"/api/v1/runs/{run.id}/captures/{capture_id}/flows/{flow_id}/decisions"
    return DecisionPage.model_validate({"items": page.items, "total": page.total, "limit": limit, "offset": offset,
                                        "next": next_page(path, offset, limit, page.total)})


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/diagnostics", response_model=DiagnosticsOut,
            response_model_exclude_unset=True, responses=RESULT_ERRORS,
            summary="Why the flow's estimates are what they are (ACK compression, largest samples, the path's "
            "capacity, loss classification)")
def run_diagnostics(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep,
                    owner: OwnerDep) -> dict[str, Any]:
    return results.diagnostics(session, results.get_run(session, owner, run_id), capture_id, flow_id)


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/path", response_model=PathOut,
            responses=RESULT_ERRORS, summary="The path the flow crossed: capacity, base RTT, buffer, buffer/BDP, "
            "random-loss rate with their evidence, and what the analytic models of docs/models.md predict on it")
def run_path(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep,
             owner: OwnerDep) -> dict[str, Any]:
    return results.path(session, results.get_run(session, owner, run_id), capture_id, flow_id)


@router.post("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/whatif", response_model=WhatIfOut,
             responses={**RESULT_ERRORS, **responses("flow_not_found", "unknown_algorithm", "path_incomplete",
                                                     "path_low_confidence", "shared_bottleneck", "whatif_too_large")},
             summary="What each congestion control would have done in control on the flow's path (a simulation)",
             description="A packet-level simulation of one bulk sender per algorithm on the path the run inferred "
                         "for the flow (capacity, base RTT, buffer, random loss), each figure with its range over the "
                         "path's plausible values, beside the captured flow. The captured sender's control is "
                         "re-enacted first (the self-check): where it does not reproduce the flow (goodput within "
                         "10 %, loss-event rate within 30 %) the results are withheld (`withheld`). A path missing "
                         "a figure, of low confidence or shared with other flows is refused (422, the code names "
                         "why); so is a request that would simulate more than the service allows at once "
                         "(`whatif_too_large`). docs/whatif.md.")
def run_whatif(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, body: WhatIfIn, session: SessionDep,
               owner: OwnerDep) -> dict[str, Any]:
    return results.whatif(session, results.get_run(session, owner, run_id), capture_id, flow_id, body.algorithms,
                          body.sender_cc, body.duration_s, body.seed)


@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/limits", response_model=LimitsOut,
            responses=RESULT_ERRORS, summary="What limited the flow's sender: the congestion window (the network), "
            "the receive window, the application or its send buffer, each label's share of the time and its "
            "intervals")
def run_limits(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep,
               owner: OwnerDep) -> dict[str, Any]:
    return results.limits(session, results.get_run(session, owner, run_id), capture_id, flow_id)


# response_model documents the payload; the route returns the JSON itself (json.dumps of plain lists is
# several times faster than validating tens of thousands of points), which FastAPI passes through.
@router.get("/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/graph", response_model=GraphOut,
            responses={**RESULT_ERRORS, **responses("flow_not_found")},
            summary="The congestion graph: time–sequence, flight with cwnd/ssthresh, estimates, RTT",
            description=GRAPH_DESCRIPTION + " A flow the run did not replay has no results here: "
                        "`/captures/{capture_id}/flows/{flow_id}/graph` draws what its capture shows.")
def run_graph(run_id: RunId, capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep,
              store: StoreDep, t0: GraphT0 = None, t1: GraphT1 = None, px: GraphPx = 1200) -> Response:
    data = results.graph(session, store, results.get_run(session, owner, run_id), capture_id, flow_id,
                         t0=t0, t1=t1, px=px)
    return Response(json.dumps(data, separators=(",", ":"), allow_nan=False), media_type="application/json")


@router.get("/leaderboard", response_model=LeaderboardOut, response_model_exclude_unset=True,
            responses=responses("run_not_found"),
            summary="Per score: each estimator's mean, rank and wins over runs")
def leaderboard(session: SessionDep, owner: OwnerDep,
                runs: Annotated[str, Query(description="comma-separated run ids (at most 100)",
                                           pattern=r"^[0-9a-f]{32}(\s*,\s*[0-9a-f]{32}){0,99}\s*,?\s*$",
                                           examples=[RUN_ID])],
                include_not_reproducible: INCLUDE_NOT_REPRODUCIBLE = False,
                include_incomparable: INCLUDE_INCOMPARABLE = False) -> dict[str, Any]:
    chosen = [results.get_run(session, owner, r.strip()) for r in runs.split(",") if r.strip()]
    return results.leaderboard(session, chosen, include_not_reproducible=include_not_reproducible,
                               include_incomparable=include_incomparable)
