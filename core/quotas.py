"""Storage quotas: how many bytes an owner keeps, against its limit.

Usage is the sum of two things the owner made the service store: its captures (the uploaded bytes) and
the data its runs derived from them — each replay task's series object and its result, decision and
diagnostics rows (their JSON documents and a fixed overhead per row, ``row_bytes``), recorded on the task
(``Task.series_bytes``, ``Task.row_bytes``). A run multiplies its results by its estimators and sweep
variants, so they are counted rather than assumed bounded by the captures. Not counted: a capture's
ingest tables (one set per capture, a fraction of its size) and the run records themselves. Deleting a
capture frees its bytes and every result derived from it at once. The limit is the owner's own
(``owners.quota_bytes``, set with ``ackreplay quota set``) or the service's default
(``ACKREPLAY_QUOTA_BYTES``); none means unlimited.

An upload is held to the quota three times: before its body is read (the announced length, and a body
without one is cut at what is left: ``api.guard``), while it streams into the store, and under a row lock on
the owner once it is stored, so two concurrent uploads cannot both take the last bytes. A replay task
checks its derived bytes under the same lock before it writes them, and fails its capture in the run with
``quota_exceeded`` when they do not fit (nothing of it is kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.config import get_settings
from ackreplay.core.errors import ServiceError
from ackreplay.core.orm import Capture, Owner, Run, Task
from ackreplay.replay.results import compact_json

#: What a stored row costs besides its JSON documents: its ids, keys and index entries (about).
ROW_OVERHEAD = 128


class QuotaExceeded(ServiceError):
    status = 413
    code = "quota_exceeded"


@dataclass(frozen=True)
class Usage:
    capture_bytes: int
    derived_bytes: int
    captures: int
    limit_bytes: int | None

    @property
    def used_bytes(self) -> int:
        return self.capture_bytes + self.derived_bytes

    @property
    def remaining_bytes(self) -> int | None:
        return None if self.limit_bytes is None else max(0, self.limit_bytes - self.used_bytes)


def limit_of(owner: Owner) -> int | None:
    return owner.quota_bytes if owner.quota_bytes is not None else get_settings().quota_bytes


def usage(session: Session, owner: Owner) -> Usage:
    used, count = session.execute(select(func.coalesce(func.sum(Capture.size_bytes), 0), func.count(Capture.id))
                                  .where(Capture.owner_id == owner.id)).one()
    derived = session.scalar(select(func.coalesce(func.sum(Task.series_bytes + Task.row_bytes), 0))
                             .join(Run, Run.id == Task.run_id).where(Run.owner_id == owner.id))
    return Usage(int(used), int(derived or 0), int(count), limit_of(owner))


def encode_document(document: Any) -> str:
    """A derived row's JSON document as it is stored and charged (``replay.results.compact_json``: compact,
    ASCII, so its length is its bytes; the result rows' scores are written column by column as this writes them)."""
    return compact_json(document)


def row_bytes(*documents: Any) -> int:
    """The bytes a derived row is charged: its JSON documents as stored, and ``ROW_OVERHEAD``."""
    return ROW_OVERHEAD + sum(len(encode_document(d)) for d in documents)


def exceeded(owner: Owner, usage_: Usage, adding: str, what: str = "") -> QuotaExceeded:
    return QuotaExceeded(f"storing {adding} more bytes{what} would exceed the storage quota of owner "
                         f"{owner.name!r}: {usage_.used_bytes} of {usage_.limit_bytes} bytes used "
                         f"({usage_.capture_bytes} in captures, {usage_.derived_bytes} in results; delete "
                         "captures to free space)")


def check_locked(session: Session, owner: Owner, adding: int, what: str = "") -> None:
    """Raise :class:`QuotaExceeded` unless ``adding`` more bytes fit; holds the owner's row lock until the
    transaction ends (PostgreSQL; SQLite serialises writers anyway). An owner without a quota is not
    locked: its uploads need not wait for each other."""
    if limit_of(owner) is None:
        return
    # FOR NO KEY UPDATE: serialises the owner's uploads without conflicting with the KEY SHARE locks that
    # rows referencing the owner (a batch, a capture inserted earlier in the same transaction) hold; FOR
    # UPDATE would, and two batches each holding one and waiting for the other's deadlocked.
    session.execute(select(Owner.id).where(Owner.id == owner.id).with_for_update(key_share=True))
    now = usage(session, owner)
    if now.limit_bytes is not None and now.used_bytes + adding > now.limit_bytes:
        raise exceeded(owner, now, str(adding), what)


def check_room(session: Session, owner: Owner) -> None:
    """Refuse a new run when nothing is left of the owner's quota: its results could not be stored."""
    now = usage(session, owner) if limit_of(owner) is not None else None
    if now is not None and now.remaining_bytes == 0:
        raise QuotaExceeded(f"the storage quota of owner {owner.name!r} is used up ({now.used_bytes} of "
                            f"{now.limit_bytes} bytes: {now.capture_bytes} in captures, {now.derived_bytes} in "
                            "results); a run's results could not be stored (delete captures to free space)")
