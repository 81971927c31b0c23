"""Dependencies: a session per request (committed after the handler), the caller's owner, the store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header
from sqlalchemy.orm import Session

from core.config import Settings, get_settings
from core.db import session_scope
from core.models import Owner
from core.owners import authenticate
from core.storage import Store, get_store


def get_session() -> Iterator[Session]:
    with session_scope() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]


def get_owner(session: SessionDep, settings: SettingsDep,
              authorization: Annotated[str | None, Header(description="Bearer API token")] = None) -> Owner:
    token = None
    if authorization:
        scheme, _, value = authorization.partition(" ")
        token = value.strip() if scheme.lower() == "bearer" else authorization.strip()
    return authenticate(session, token, settings.auth)


OwnerDep = Annotated[Owner, Depends(get_owner)]
