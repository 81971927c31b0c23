"""Owners and API tokens (stored as sha256 hashes; the token itself is shown once, at creation)."""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from typing import TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.errors import NotFound, Unauthorized
from ackreplay.core.models import ApiToken, Capture, Owner

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


def adopt_open_owner(session: Session, owner_name: str) -> int | None:
    """Before the first API token exists, hand everything uploaded in open mode to ``owner_name``.

    In open mode (no token yet) every request acts as the owner ``local``. The first token would otherwise
    hide that data: once a token exists, tokenless requests are refused and ``local``'s rows belong to no
    token. So when no token has ever been created, ``owner_name`` does not exist yet and ``local`` does,
    ``local`` is renamed ``owner_name`` (its id, and so every capture, run and batch, stays). Returns the
    number of captures adopted, or None when nothing was adopted.
    """
    if owner_name == LOCAL_OWNER or session.scalar(select(ApiToken.id).limit(1)) is not None:
        return None
    local = session.scalar(select(Owner).where(Owner.name == LOCAL_OWNER))
    if local is None or session.scalar(select(Owner.id).where(Owner.name == owner_name)) is not None:
        return None
    local.name = owner_name
    session.flush()
    return int(session.scalar(select(func.count(Capture.id)).where(Capture.owner_id == local.id)) or 0)


def open_mode_allowed(host: str, auth: str, explicit_open: bool) -> tuple[str, str | None]:
    """The authentication mode a server bound to ``host`` runs in, and a warning to log.

    Open mode (tokenless requests act as ``local``) is for one user on one machine: ``auto`` becomes
    ``required`` on any bind other than loopback, unless the operator asks for open mode explicitly
    (``serve --open`` or ``ACKREPLAY_AUTH=open``), which is then logged as a warning.
    """
    loopback = is_loopback(host)
    if explicit_open or auth == "open":
        if loopback:
            return "open", None
        return "open", (f"open mode on {host}: anyone who can reach this address can upload, read and delete "
                        "captures without a token")
    if auth == "auto" and not loopback:
        return "required", None
    return auth, None


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
