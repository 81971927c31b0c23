"""Response models (Pydantic) with examples for the OpenAPI description."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorOut(BaseModel):
    error: str = Field(examples=["capture_not_found"])
    detail: Any = Field(examples=["no capture 3f2a…"])


class CaptureOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str = Field(examples=["8c1d5e0f6a2b4c7d9e0f1a2b3c4d5e6f"])
    name: str = Field(examples=["s04_cubic_1f_10M_rtt50_buf4bdp_loss1pct.pcap"])
    sha256: str
    size_bytes: int
    format: str = Field(examples=["pcap"])
    tags: list[str] = Field(examples=[["lab", "random-loss"]])
    truth: dict[str, Any] | None = Field(examples=[{"bottleneck_bps": 10e6, "shared_by": "all"}])
    status: str = Field(examples=["ingested"])
    error_code: str | None = None
    error: str | None = None
    stats: dict[str, Any] | None = None
    created_at: datetime


class UploadOut(BaseModel):
    capture: CaptureOut
    created: bool = Field(description="false when the same bytes were uploaded before by the same owner")
    run_id: str | None = Field(None, description="the default run started for a new capture")
    run_url: str | None = None


class Page(BaseModel):
    items: list[Any]
    total: int
    limit: int
    offset: int


class RunIn(BaseModel):
    captures: list[str] = Field(min_length=1, examples=[["8c1d5e0f6a2b4c7d9e0f1a2b3c4d5e6f"]])
    estimators: list[str | dict[str, Any]] | None = Field(
        None, examples=[["be", {"name": "abse", "parameters": {"N": 12}}]],
        description="names or {name, parameters}; default: every estimator with default parameters")


class RunCreated(BaseModel):
    run_id: str
    url: str
    status: str
