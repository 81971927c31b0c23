"""The estimator catalogue: names, descriptions, citations, parameter schemas and defaults."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

import ackreplay.estimators as E
from ackreplay.api.schemas import EstimatorInfo

router = APIRouter(tags=["estimators"])


@router.get("/estimators", response_model=list[EstimatorInfo], summary="Every estimator with its parameter schema")
def catalogue() -> list[dict[str, Any]]:
    return E.catalogue()
