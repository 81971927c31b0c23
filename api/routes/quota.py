"""The caller's storage quota: bytes of stored captures and their results against its limit."""

from __future__ import annotations

from fastapi import APIRouter

from ackreplay.api.deps import OwnerDep, SessionDep
from ackreplay.api.errors import responses
from ackreplay.api.schemas import QuotaOut
from ackreplay.core import quotas

router = APIRouter(tags=["quota"])


@router.get("/quota", response_model=QuotaOut, responses=responses(),
            summary="The caller's storage: bytes of stored captures and of their results, and the quota (deleting "
            "captures frees both)")
def get_quota(session: SessionDep, owner: OwnerDep) -> QuotaOut:
    u = quotas.usage(session, owner)
    return QuotaOut(owner=owner.name, used_bytes=u.used_bytes, capture_bytes=u.capture_bytes,
                    derived_bytes=u.derived_bytes, captures=u.captures, limit_bytes=u.limit_bytes,
                    remaining_bytes=u.remaining_bytes)
