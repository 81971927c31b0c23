"""Storage quotas: how many bytes of captures an owner keeps, against its limit.

Usage is the sum of the owner's stored captures (the uploaded bytes; derived tables and series, which
are bounded by the captures they come from, are not counted). Deleting a capture frees its bytes at
once. The limit is the owner's own (``owners.quota_bytes``, set with ``ackreplay quota set``) or the
service's default (``ACKREPLAY_QUOTA_BYTES``); none means unlimited.

An upload is held to the quota twice: while it streams (it may not grow past what is left), and under a
row lock on the owner once it is stored, so two concurrent uploads cannot both take the last bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.config import get_settings
from ackreplay.core.errors import ServiceError
from ackreplay.core.orm import Capture, Owner


class QuotaExceeded(ServiceError):
    status = 413
    code = "quota_exceeded"


@dataclass(frozen=True)
class Usage:
    used_bytes: int
    captures: int
    limit_bytes: int | None

    @property
    def remaining_bytes(self) -> int | None:
        return None if self.limit_bytes is None else max(0, self.limit_bytes - self.used_bytes)


def limit_of(owner: Owner) -> int | None:
    return owner.quota_bytes if owner.quota_bytes is not None else get_settings().quota_bytes


def usage(session: Session, owner: Owner) -> Usage:
    used, count = session.execute(select(func.coalesce(func.sum(Capture.size_bytes), 0), func.count(Capture.id))
                                  .where(Capture.owner_id == owner.id)).one()
    return Usage(int(used), int(count), limit_of(owner))


def exceeded(owner: Owner, usage_: Usage, adding: str) -> QuotaExceeded:
    return QuotaExceeded(f"storing {adding} more bytes would exceed the storage quota of owner {owner.name!r}: "
                         f"{usage_.used_bytes} of {usage_.limit_bytes} bytes used (delete captures to free space)")


def check_locked(session: Session, owner: Owner, adding: int) -> None:
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
        raise exceeded(owner, now, str(adding))
