"""Owners and API tokens (stored as sha256 hashes; the token itself is shown once, at creation)."""

from __future__ import annotations

import hashlib
import secrets
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.errors import NotFound, Unauthorized
from core.models import ApiToken, Owner

LOCAL_OWNER = "local"
TOKEN_PREFIX = "ar_"
T = TypeVar("T")


def owned(session: Session, owner: Owner, model: type[T], row_id: str, what: str) -> T:
    """The row of ``model`` with ``row_id`` if it belongs to ``owner``; else 404 ``<what>_not_found``
    (another owner's rows do not exist for the caller)."""
    row = session.get(model, row_id)
    if row is None or getattr(row, "owner_id", None) != owner.id:
        raise NotFound(f"no {what} {row_id}", code=f"{what}_not_found")
    return row


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def get_or_create_owner(session: Session, name: str) -> Owner:
    owner = session.scalar(select(Owner).where(Owner.name == name))
    if owner is None:
        owner = Owner(name=name)
        session.add(owner)
        session.flush()
    return owner


def create_token(session: Session, owner_name: str, token_name: str | None = None) -> tuple[ApiToken, str]:
    """A new token for ``owner_name`` (created if needed). Returns the row and the plain token."""
    owner = get_or_create_owner(session, owner_name)
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(owner_id=owner.id, name=token_name or owner_name, token_hash=hash_token(plain), prefix=plain[:10])
    session.add(row)
    session.flush()
    return row, plain


def any_token(session: Session) -> bool:
    return session.scalar(select(ApiToken.id).where(ApiToken.revoked.is_(False)).limit(1)) is not None


def authenticate(session: Session, token: str | None, mode: str) -> Owner:
    """The owner of a bearer token; the local owner when the service runs open."""
    if token:
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token),
                                                    ApiToken.revoked.is_(False)))
        if row is None:
            raise Unauthorized("unknown or revoked API token", code="invalid_token")
        owner = session.get(Owner, row.owner_id)
        assert owner is not None
        return owner
    if mode == "open" or (mode == "auto" and not any_token(session)):
        return get_or_create_owner(session, LOCAL_OWNER)
    raise Unauthorized("an API token is required (Authorization: Bearer …; create one with `ackreplay token "
                       "create NAME`)", code="token_required")
