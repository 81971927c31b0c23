"""Owners and API tokens (stored as sha256 hashes; the token itself is shown once, at creation)."""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import time
from datetime import datetime
from typing import NamedTuple, TypeVar

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from ackreplay.core.errors import NotFound, Unauthorized
from ackreplay.core.orm import ApiToken, Capture, Owner, epoch, new_id, now

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
    """The owner called ``name``, created if new (concurrent requests creating it at once get the same row:
    the insert does nothing on a conflict, then reads the row)."""
    owner = session.scalar(select(Owner).where(Owner.name == name))
    if owner is None:
        insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
        session.execute(insert(Owner).values(id=new_id(), name=name, created_at=now())
                        .on_conflict_do_nothing(index_elements=["name"]))
        owner = session.scalar(select(Owner).where(Owner.name == name))
        assert owner is not None
    return owner


class NewToken(NamedTuple):
    """A token just created: its row and the plain token (shown once: only its hash is stored)."""

    row: ApiToken
    plain: str


def create_token(session: Session, owner_name: str, token_name: str | None = None, *,
                 expires_at: datetime | None = None) -> NewToken:
    """A new token for ``owner_name`` (created if needed), valid until ``expires_at`` (None: no expiry)."""
    owner = get_or_create_owner(session, owner_name)
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(owner_id=owner.id, name=token_name or owner_name, token_hash=hash_token(plain), prefix=plain[:10],
                   expires_at=expires_at)
    session.add(row)
    session.flush()
    return NewToken(row, plain)


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


class AuthMode(NamedTuple):
    """How a server authenticates requests (``open`` | ``required``), and a warning to log (None: none)."""

    mode: str
    warning: str | None


def open_mode_allowed(host: str, auth: str, explicit_open: bool) -> AuthMode:
    """The authentication mode a server bound to ``host`` runs in, and a warning to log.

    Open mode (tokenless requests act as ``local``) is for one user on one machine: ``auto`` becomes
    ``required`` on any bind other than loopback, unless the operator asks for open mode explicitly
    (``serve --open`` or ``ACKREPLAY_AUTH=open``), which is then logged as a warning.
    """
    loopback = is_loopback(host)
    if explicit_open or auth == "open":
        if loopback:
            return AuthMode("open", None)
        return AuthMode("open", f"open mode on {host}: anyone who can reach this address can upload, read and "
                        "delete captures without a token")
    if auth == "auto" and not loopback:
        return AuthMode("required", None)
    return AuthMode(auth, None)


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def any_token(session: Session) -> bool:
    """Whether a token has ever been created: ``auto`` mode is open only before that (revoking or letting
    every token expire does not reopen it)."""
    return session.scalar(select(ApiToken.id).limit(1)) is not None


def tokens(session: Session) -> list[tuple[ApiToken, str]]:
    """Every token with its owner's name, oldest first (the plain tokens are not stored)."""
    return [(t, name) for t, name in session.execute(
        select(ApiToken, Owner.name).join(Owner, Owner.id == ApiToken.owner_id).order_by(ApiToken.created_at))]


def revoke_tokens(session: Session, ref: str) -> int:
    """Revoke the tokens that ``ref`` names: a token id, a token's shown prefix (``ar_…``), or an owner's name
    (all its tokens). The number revoked."""
    rows = [t for t, owner in tokens(session) if ref in (t.id, owner) or (len(ref) >= 6 and t.prefix.startswith(ref))]
    for t in rows:
        t.revoked = True
    session.flush()
    return len(rows)


def token_state(row: ApiToken) -> str:
    if row.revoked:
        return "revoked"
    if row.expires_at is not None and epoch(row.expires_at) <= time.time():
        return "expired"
    return "active"


def token_from_header(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header (``Bearer <token>``, or the bare token)."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return (value.strip() if scheme.lower() == "bearer" else authorization.strip()) or None


def authenticate(session: Session, token: str | None, mode: str) -> Owner:
    """The owner of a bearer token; the local owner when the service runs open."""
    if token:
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
        if row is None or token_state(row) != "active":
            raise Unauthorized("unknown, revoked or expired API token", code="invalid_token")
        owner = session.get(Owner, row.owner_id)
        assert owner is not None
        return owner
    if mode == "open" or (mode == "auto" and not any_token(session)):
        return get_or_create_owner(session, LOCAL_OWNER)
    raise Unauthorized("an API token is required (Authorization: Bearer …; create one with `ackreplay token "
                       "create NAME`)", code="token_required")
