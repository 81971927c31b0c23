"""Captures: upload (streamed, deduplicated), list, get, delete; their flows and ACK streams."""

from __future__ import annotations

import io
import json
from typing import Annotated, Any, Literal

import polars as pl
from fastapi import APIRouter, File, Form, Path, Query, UploadFile
from fastapi.responses import Response
from pydantic import StringConstraints

from ackreplay.api.deps import OwnerDep, SessionDep, SettingsDep, StoreDep, next_page
from ackreplay.api.errors import RUN_LIMITS, responses
from ackreplay.api.metrics import UPLOADS
from ackreplay.api.schemas import (
    CAPTURE_ID,
    ID_PATTERN,
    MAX_FLOW_ID,
    MAX_NAME,
    MAX_OFFSET,
    MAX_TAG,
    MAX_TAGS,
    MAX_TRUTH,
    CaptureOut,
    CapturePage,
    FlowOut,
    FlowPage,
    GraphOut,
    Text,
    UploadOut,
)
from ackreplay.core import bounds
from ackreplay.core import captures as svc
from ackreplay.core.errors import ServiceError
from ackreplay.core.run_tasks import estimator_spec, start_run
from ackreplay.core.run_views import capture_graph
from ackreplay.core.stored_capture import read_table

router = APIRouter(prefix="/captures", tags=["captures"])
CaptureId = Annotated[str, Path(description="a capture's id", pattern=ID_PATTERN, examples=[CAPTURE_ID])]
FlowId = Annotated[int, Path(description="a flow's id within its capture (`ackreplay flows`)", ge=0, le=MAX_FLOW_ID,
                             examples=[2])]
GraphT0 = Annotated[float | None, Query(description="window start (s since the flow's first packet)",
                                        allow_inf_nan=False, examples=[0.0])]
GraphT1 = Annotated[float | None, Query(description="window end (s)", allow_inf_nan=False, examples=[5.0])]
GraphPx = Annotated[int, Query(ge=50, le=4000, description="pixel columns", examples=[1200])]
GRAPH_DESCRIPTION = ("Panels on one time axis over `[t0, t1]` (default: the whole flow), each series thinned per pixel "
                     "column to its first, last, minimum and maximum for `px` columns (so spikes are kept); a "
                     "narrower window returns more points, up to full resolution.")
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, examples=[0])]
TABLE_FORMATS = {"application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
                 "text/csv": {"schema": {"type": "string"}, "example": "t,acked,dup,d,rtt\n"}}
UPLOAD_ERRORS = responses("empty_upload", "upload_too_large", "quota_exceeded", "unsupported_media_type",
                          "invalid_truth", "cross_origin", "request_timeout", *RUN_LIMITS)
NameField = Annotated[Annotated[Text, StringConstraints(max_length=MAX_NAME)] | None,
                      Form(description=f"display name (default: the file name; at most {MAX_NAME} characters)")]
TagsField = Annotated[Annotated[Text, StringConstraints(max_length=MAX_TAGS * (MAX_TAG + 1))] | None,
                      Form(description=f"comma-separated tags (at most {MAX_TAGS}, each at most {MAX_TAG} characters)",
                           examples=["lab,sweep"])]
TruthField = Annotated[Annotated[Text, StringConstraints(max_length=MAX_TRUTH)] | None,
                       Form(description="ground truth: JSON {bottleneck, shared_by, fair_share, min_flow_bytes, flows} "
                                        "or 'bottleneck=5Mbit,shared_by=all'",
                            examples=["bottleneck=10Mbit,shared_by=all"])]


def tag_list(value: str | None) -> list[str]:
    """The tags of a comma-separated form field (422 ``invalid_request`` past the bounds)."""
    tags = list(dict.fromkeys(t.strip() for t in (value or "").split(",") if t.strip()))
    if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG for t in tags):
        raise ServiceError(f"at most {MAX_TAGS} tags of at most {MAX_TAG} characters each",
                           code="invalid_request", status=422)
    return tags


def truth_field(value: str | None) -> dict[str, Any] | None:
    if not value:
        return None
    text = value.strip()
    if text.startswith("{"):
        return svc.parse_truth(bounds.loads(text, what="truth", code="invalid_truth"))
    return svc.parse_truth(text)


@router.post("", status_code=201, response_model=UploadOut,
             responses={200: {"model": UploadOut, "description": "the same bytes were uploaded before (no new run)"},
                        **UPLOAD_ERRORS},
             summary="Upload a capture (pcap, pcapng, gzip); starts the default run")
def upload(session: SessionDep, owner: OwnerDep, store: StoreDep, settings: SettingsDep, response: Response,
           file: Annotated[UploadFile, File(description="the capture")], name: NameField = None,
           tags: TagsField = None, truth: TruthField = None) -> UploadOut:
    # the token, the announced length and the quota were checked before the body was read (api.guard)
    tag_values, truth_value = tag_list(tags), truth_field(truth)  # refused before anything is stored
    up = svc.create_from_stream(session, store, owner, file.file,
                                name=name or svc.display_name(file.filename or "capture"), tags=tag_values,
                                truth=truth_value, limit=settings.max_upload_bytes)
    run_id = None
    if up.created:
        run = start_run(session, owner, [up.capture], estimator_spec(None), is_default=True)
        run_id = run.id
        UPLOADS.inc()
    else:
        response.status_code = 200
    session.flush()
    return UploadOut(capture=CaptureOut.model_validate(up.capture), created=up.created, run_id=run_id,
                     run_url=f"/api/v1/runs/{run_id}" if run_id else None)


@router.get("", response_model=CapturePage, responses=responses(),
            summary="List captures (paginated; filter by tag and status)")
def list_captures(session: SessionDep, owner: OwnerDep,
                  tag: Annotated[str | None, Query(description="only captures with this tag", examples=["lab"],
                                                   max_length=MAX_TAG)] = None,
                  status: Annotated[Literal["uploaded", "ingested", "failed"] | None,
                                    Query(description="uploaded | ingested | failed", examples=["ingested"])] = None,
                  limit: Annotated[int, Query(ge=1, le=500, examples=[50])] = 50,
                  offset: Offset = 0) -> CapturePage:
    rows, total = svc.listing(session, owner, tag=tag, status=status, limit=limit, offset=offset)
    return CapturePage(items=[CaptureOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset)


@router.get("/{capture_id}", response_model=CaptureOut, responses=responses("capture_not_found"),
            summary="One capture")
def get_capture(capture_id: CaptureId, session: SessionDep, owner: OwnerDep) -> CaptureOut:
    return CaptureOut.model_validate(svc.get(session, owner, capture_id))


@router.delete("/{capture_id}", status_code=204, response_class=Response,
               responses=responses("capture_not_found", "cross_origin"),
               summary="Delete a capture, its files and results (frees its bytes of the quota)")
def delete_capture(capture_id: CaptureId, session: SessionDep, owner: OwnerDep, store: StoreDep) -> Response:
    svc.delete(session, store, svc.get(session, owner, capture_id))
    return Response(status_code=204)


@router.get("/{capture_id}/flows", response_model=FlowPage, responses=responses("capture_not_found"),
            summary="The capture's flows with their ingest summary (paginated)",
            description="A page of flows in flow order (`offset`, `limit`: 500 by default), with `total` and the "
                        "`next` page's URL.")
def list_flows(capture_id: CaptureId, session: SessionDep, owner: OwnerDep, store: StoreDep, offset: Offset = 0,
               limit: Annotated[int, Query(ge=1, le=5000, examples=[500])] = 500) -> FlowPage:
    cap = svc.get(session, owner, capture_id)
    items, total = svc.flow_page(session, store, cap, offset=offset, limit=limit)
    return FlowPage.model_validate({"items": items, "total": total, "limit": limit, "offset": offset,
                                    "next": next_page(f"/api/v1/captures/{cap.id}/flows", offset, limit, total)})


@router.get("/{capture_id}/flows/{flow_id}", response_model=FlowOut,
            responses=responses("capture_not_found", "flow_not_found"), summary="One flow's ingest summary")
def get_flow(capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep,
             store: StoreDep) -> dict[str, Any]:
    return svc.flow(session, store, svc.get(session, owner, capture_id), flow_id).summary


@router.get("/{capture_id}/flows/{flow_id}/acks", response_class=Response,
            responses={200: {"content": TABLE_FORMATS,
                             "description": "the ACK stream (docs/ingest.md columns; frame: each ACK's frame number "
                                            "in the capture file, as Wireshark numbers it)"},
                       **responses("capture_not_found", "flow_not_found")},
            summary="Download one flow's ACK stream (Parquet or CSV)")
def download_acks(capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep, store: StoreDep,
                  format: Annotated[str, Query(pattern="^(parquet|csv)$", examples=["csv"])] = "parquet") -> Response:
    f = svc.flow(session, store, svc.get(session, owner, capture_id), flow_id)
    return table_response(read_table(store, f.tables_key, "acks", [flow_id]).drop("flow_id"), format)


# response_model documents the payload; the route returns the JSON itself, as the run's graph does
@router.get("/{capture_id}/flows/{flow_id}/graph", response_model=GraphOut,
            responses=responses("capture_not_found", "flow_not_found"),
            summary="What the capture shows of a flow, replayed or not: time–sequence, flight, RTT",
            description=GRAPH_DESCRIPTION + " No run is needed: the panels come from the stored capture's columns "
                        "(`replayed` false: no rates, no estimators' cwnd and ssthresh — those are the run's graph, "
                        "`/runs/{run_id}/captures/{capture_id}/flows/{flow_id}/graph`).")
def flow_graph(capture_id: CaptureId, flow_id: FlowId, session: SessionDep, owner: OwnerDep, store: StoreDep,
               t0: GraphT0 = None, t1: GraphT1 = None, px: GraphPx = 1200) -> Response:
    f = svc.flow(session, store, svc.get(session, owner, capture_id), flow_id)
    data = capture_graph(store, f, t0=t0, t1=t1, px=px)
    return Response(json.dumps(data, separators=(",", ":"), allow_nan=False), media_type="application/json")


def table_response(frame: pl.DataFrame, format: str) -> Response:
    """A table as a CSV or Parquet download."""
    buf = io.BytesIO()
    if format == "csv":
        frame.write_csv(buf)
        return Response(buf.getvalue(), media_type="text/csv")
    frame.write_parquet(buf)
    return Response(buf.getvalue(), media_type="application/vnd.apache.parquet")
