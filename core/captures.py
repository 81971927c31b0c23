"""Captures: streamed upload (hashed, sniffed by magic bytes, size-limited), dedup per owner, listing,
deletion with everything derived from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core import quotas
from ackreplay.core.errors import NotFound, ServiceError
from ackreplay.core.models import Capture, Flow, Owner, RunCapture, new_id
from ackreplay.core.owners import owned
from ackreplay.core.storage import Store, TooLarge
from ackreplay.estimators import EstimatorError
from ackreplay.estimators.truth import Truth

MAGIC = {
    b"\xd4\xc3\xb2\xa1": "pcap", b"\xa1\xb2\xc3\xd4": "pcap", b"\x4d\x3c\xb2\xa1": "pcap", b"\xa1\xb2\x3c\x4d": "pcap",
    b"\x0a\x0d\x0d\x0a": "pcapng",
}


def sniff(head: bytes) -> str | None:
    """The container by magic bytes: pcap, pcapng or gzip (never by file name)."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    return MAGIC.get(head[:4])


def parse_truth(value: Any) -> dict[str, Any] | None:
    """Ground truth from upload metadata: a mapping or the CLI's text form; validated, stored as a dict."""
    if value in (None, "", {}):
        return None
    try:
        truth = Truth.from_mapping(value) if isinstance(value, dict) else Truth.parse(str(value))
    except EstimatorError as exc:
        raise ServiceError(exc.message, code=exc.code, status=422) from exc
    return truth.to_dict()


@dataclass
class Upload:
    capture: Capture
    created: bool


def create_from_stream(session: Session, store: Store, owner: Owner, src: IO[bytes], *, name: str,
                       tags: list[str], truth: dict[str, Any] | None, limit: int,
                       batch_id: str | None = None) -> Upload:
    """Store an upload; the same bytes uploaded again by the same owner return the existing capture.

    Held to ``limit`` (413 ``upload_too_large``) and to the owner's storage quota (413 ``quota_exceeded``:
    the stream may not grow past what is left, and the total is checked again under the owner's lock)."""
    tmp = f"uploads/{new_id()}"
    before = quotas.usage(session, owner) if quotas.limit_of(owner) is not None else None
    left = before.remaining_bytes if before is not None else None
    try:
        size, sha, head = store.write_stream(tmp, src, limit=limit if left is None else min(limit, left))
    except TooLarge as exc:
        if before is not None and left is not None and left < limit:
            raise quotas.exceeded(owner, before, f"more than {left}") from exc
        raise ServiceError(str(exc), code="upload_too_large", status=413) from exc
    if size == 0:
        store.delete(tmp)
        raise ServiceError("the upload is empty (0 bytes)", code="empty_upload", status=400)
    kind = sniff(head)
    if kind is None:
        store.delete(tmp)
        raise ServiceError(f"not a pcap, pcapng or gzip file (starts with {head[:4].hex()})",
                           code="unsupported_media_type", status=415)
    existing = session.scalar(select(Capture).where(Capture.owner_id == owner.id, Capture.sha256 == sha))
    if existing is not None:
        store.delete(tmp)
        return Upload(existing, False)
    try:
        quotas.check_locked(session, owner, size)
    except quotas.QuotaExceeded:
        store.delete(tmp)
        raise
    cap = Capture(owner_id=owner.id, sha256=sha, name=name, size_bytes=size, format=kind, tags=tags,
                  truth=truth, batch_id=batch_id, storage_key="")
    session.add(cap)
    session.flush()
    cap.storage_key = f"captures/{cap.id}/capture"
    store.move(tmp, cap.storage_key)
    return Upload(cap, True)


def get(session: Session, owner: Owner, capture_id: str) -> Capture:
    return owned(session, owner, Capture, capture_id, "capture")


def listing(session: Session, owner: Owner, *, tag: str | None, status: str | None, limit: int,
            offset: int) -> tuple[list[Capture], int]:
    q = select(Capture).where(Capture.owner_id == owner.id)
    if status:
        q = q.where(Capture.status == status)
    q = q.order_by(Capture.created_at.desc(), Capture.id)
    if tag:  # tags are a JSON list (no portable SQL containment): filter the owner's rows here
        rows = [c for c in session.scalars(q) if tag in (c.tags or [])]
        return rows[offset: offset + limit], len(rows)
    total = session.scalar(select(func.count()).select_from(q.order_by(None).subquery())) or 0
    return list(session.scalars(q.limit(limit).offset(offset))), int(total)


def flows(session: Session, capture: Capture) -> list[Flow]:
    return list(session.scalars(select(Flow).where(Flow.capture_id == capture.id).order_by(Flow.flow_id)))


def flow(session: Session, capture: Capture, flow_id: int) -> Flow:
    row = session.scalar(select(Flow).where(Flow.capture_id == capture.id, Flow.flow_id == flow_id))
    if row is None:
        raise NotFound(f"capture {capture.id} has no flow {flow_id}", code="flow_not_found")
    return row


def delete(session: Session, store: Store, capture: Capture) -> None:
    """Remove the capture, its tables and every result derived from it (rows cascade)."""
    runs = {r for (r,) in session.execute(select(RunCapture.run_id).where(RunCapture.capture_id == capture.id))}
    session.delete(capture)
    session.flush()
    store.delete(f"captures/{capture.id}")
    for run_id in runs:
        store.delete(f"series/{run_id}/{capture.id}")

