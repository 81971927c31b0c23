"""Captures: streamed upload (hashed, sniffed by magic bytes, size-limited), dedup per owner, listing,
deletion with everything derived from them."""

from __future__ import annotations

import contextlib
import gzip
import zlib
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ackreplay.core import quotas, stored_flows
from ackreplay.core.db import after_commit, on_rollback
from ackreplay.core.errors import NotFound, ServiceError
from ackreplay.core.orm import Capture, Owner, RunCapture, new_id
from ackreplay.core.owners import owned
from ackreplay.core.storage import Readable, Store, TooLarge
from ackreplay.core.stored_flows import StoredFlow
from ackreplay.estimators import EstimatorError
from ackreplay.scoring.truth import Truth

MAGIC = {
    b"\xd4\xc3\xb2\xa1": "pcap", b"\xa1\xb2\xc3\xd4": "pcap", b"\x4d\x3c\xb2\xa1": "pcap", b"\xa1\xb2\x3c\x4d": "pcap",
    b"\x0a\x0d\x0d\x0a": "pcapng",
}


def sniff(head: bytes) -> str | None:
    """The container by magic bytes: pcap, pcapng or gzip (never by file name)."""
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    return MAGIC.get(head[:4])


def display_name(name: str) -> str:
    """A name taken from a file (multipart filename, archive member) made storable: NUL and other control
    characters replaced, at most the column's 500 characters."""
    return "".join(c if c.isprintable() else "\ufffd" for c in name)[:500] or "capture"


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


def create_from_stream(session: Session, store: Store, owner: Owner, src: Readable, *, name: str,
                       tags: list[str], truth: dict[str, Any] | None, limit: int,
                       batch_id: str | None = None) -> Upload:
    """Store an upload; the same bytes uploaded again by the same owner return the existing capture.

    Held to ``limit`` (413 ``upload_too_large``) and to the owner's storage quota (413 ``quota_exceeded``:
    the stream may not grow past what is left, and the total is checked again under the owner's lock).
    The bytes stay in the store only if the capture's row is committed: every failure, here or later in
    the caller's transaction, removes them (``core.db.on_rollback``)."""
    head, complete = _peek(src)
    undecided_gzip = _check_head(head, complete)
    tmp = f"uploads/{new_id()}"
    before = quotas.usage(session, owner) if quotas.limit_of(owner) is not None else None
    left = before.remaining_bytes if before is not None else None
    try:
        size, sha, head = store.write_stream(tmp, Prefixed(head, src),
                                             limit=limit if left is None else min(limit, left))
    except TooLarge as exc:
        if before is not None and left is not None and left < limit:
            raise quotas.exceeded(owner, before, f"more than {left}") from exc
        raise ServiceError(str(exc), code="upload_too_large", status=413) from exc
    try:
        if undecided_gzip:
            _check_gzip(store, tmp)
        return _keep(session, store, owner, tmp, size, sha, head, name=name, tags=tags, truth=truth,
                     batch_id=batch_id)
    finally:
        store.delete(tmp)  # moved to its capture's key, or refused


#: How much of an upload is read before anything is stored: its magic bytes, and for a gzip enough of its
#: stream to decompress the magic bytes it holds. A member of an archive that is not a capture is refused
#: after this much, not after it has been decompressed and written out in full.
PEEK = 64 << 10


class Prefixed:
    """A stream whose first bytes were read already (to check them): those bytes, then the rest."""

    def __init__(self, head: bytes, rest: Readable) -> None:
        self.head, self.rest = head, rest

    def read(self, n: int = -1, /) -> bytes:
        if not self.head:
            return self.rest.read(n)
        if n < 0:
            out, self.head = self.head + self.rest.read(), b""
        else:
            out, self.head = self.head[:n], self.head[n:]
        return out


def _peek(src: Readable) -> tuple[bytes, bool]:
    """The first ``PEEK`` bytes of ``src``, and whether they are all of it."""
    head = b""
    while len(head) < PEEK:
        chunk = src.read(PEEK - len(head))
        if not chunk:
            return head, True
        head += chunk
    return head, False


def _check_head(head: bytes, complete: bool) -> bool:
    """Refuse an upload by its first bytes: empty (400), not pcap, pcapng or gzip (415), a gzip that is
    broken or holds something else (415). True when a gzip's content could not be told from these bytes
    (checked again once stored)."""
    if not head:
        raise ServiceError("the upload is empty (0 bytes)", code="empty_upload", status=400)
    kind = sniff(head)
    if kind is None:
        raise ServiceError(f"not a pcap, pcapng or gzip file (starts with {head[:4].hex()})",
                           code="unsupported_media_type", status=415)
    if kind != "gzip":
        return False
    try:
        inner = zlib.decompressobj(wbits=31).decompress(head, 4)
    except zlib.error as exc:
        raise ServiceError(f"a broken gzip file ({exc})", code="unsupported_media_type", status=415) from exc
    if len(inner) < 4 and not complete:
        return True
    _check_gzip_magic(inner)
    return False


def _keep(session: Session, store: Store, owner: Owner, tmp: str, size: int, sha: str, head: bytes, *,
          name: str, tags: list[str], truth: dict[str, Any] | None, batch_id: str | None) -> Upload:
    kind = sniff(head)
    assert kind is not None  # (_check_head refused the rest before anything was stored)
    existing = session.scalar(select(Capture).where(Capture.owner_id == owner.id, Capture.sha256 == sha))
    if existing is not None:
        return Upload(existing, False)
    quotas.check_locked(session, owner, size)
    cap = Capture(owner_id=owner.id, sha256=sha, name=name, size_bytes=size, format=kind, tags=tags,
                  truth=truth, batch_id=batch_id, storage_key="")
    nested = session.get_bind().dialect.name != "sqlite"  # (pysqlite's savepoints are unreliable)
    try:
        with session.begin_nested() if nested else contextlib.nullcontext():
            session.add(cap)
            session.flush()
    except IntegrityError:  # the same bytes, uploaded concurrently by the same owner, won the race
        if not nested:
            raise
        existing = session.scalar(select(Capture).where(Capture.owner_id == owner.id, Capture.sha256 == sha))
        if existing is None:
            raise
        return Upload(existing, False)
    cap.storage_key = f"captures/{cap.id}/capture"
    on_rollback(session, partial(store.delete, f"captures/{cap.id}"))
    store.move(tmp, cap.storage_key)
    return Upload(cap, True)


def _check_gzip(store: Store, key: str) -> None:
    """A gzip upload must hold a pcap or pcapng (its first decompressed bytes say so): 415 otherwise."""
    try:
        with store.fs.open(store.path(key), "rb") as raw, gzip.GzipFile(fileobj=raw) as inner:
            head = inner.read(4)
    except (OSError, EOFError, zlib.error) as exc:
        raise ServiceError(f"a broken gzip file ({exc})", code="unsupported_media_type", status=415) from exc
    _check_gzip_magic(head)


def _check_gzip_magic(head: bytes) -> None:
    if MAGIC.get(head) is None:
        raise ServiceError(f"a gzip file that holds no pcap or pcapng (its content starts with {head.hex()})",
                           code="unsupported_media_type", status=415)


def get(session: Session, owner: Owner, capture_id: str) -> Capture:
    return owned(session, owner, Capture, capture_id, "capture")


class CapturePage(NamedTuple):
    """One page of an owner's captures, and how many there are in all."""

    items: list[Capture]
    total: int


def listing(session: Session, owner: Owner, *, tag: str | None, status: str | None, limit: int,
            offset: int) -> CapturePage:
    q = select(Capture).where(Capture.owner_id == owner.id)
    if status:
        q = q.where(Capture.status == status)
    q = q.order_by(Capture.created_at.desc(), Capture.id)
    if tag:  # tags are a JSON list (no portable SQL containment): filter the owner's rows here
        rows = [c for c in session.scalars(q) if tag in (c.tags or [])]
        return CapturePage(rows[offset: offset + limit], len(rows))
    total = session.scalar(select(func.count()).select_from(q.order_by(None).subquery())) or 0
    return CapturePage(list(session.scalars(q.limit(limit).offset(offset))), int(total))


def flow_page(session: Session, store: Store, capture: Capture, *, offset: int, limit: int
              ) -> tuple[list[dict[str, Any]], int]:
    """One page of the capture's flows' summaries, in flow order, and how many flows it has."""
    return stored_flows.flow_page(session, store, capture.id, offset=offset, limit=limit)


def flow(session: Session, store: Store, capture: Capture, flow_id: int) -> StoredFlow:
    found = stored_flows.stored_flow(session, store, capture.id, flow_id)
    if found is None:
        raise NotFound(f"capture {capture.id} has no flow {flow_id}", code="flow_not_found")
    return found


def delete(session: Session, store: Store, capture: Capture) -> None:
    """Remove the capture, its tables and every result derived from it (rows cascade); a run still working
    on it notes the deletion and finishes when nothing else is pending. The objects go once the deletion
    has committed (a task still writing for the capture removes what it wrote when it finds the row gone)."""
    from ackreplay.core.run_tasks import capture_removed

    runs = sorted(r for (r,) in session.execute(select(RunCapture.run_id).where(RunCapture.capture_id == capture.id)))
    session.delete(capture)
    session.flush()
    for run_id in runs:
        capture_removed(session, run_id, capture.id)
    after_commit(session, partial(store.delete, f"captures/{capture.id}"))
    for run_id in runs:
        after_commit(session, partial(store.delete, f"series/{run_id}/{capture.id}"))

