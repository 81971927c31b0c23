"""Dependencies: a session per request (committed after the handler), the caller's owner, the store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Query
from sqlalchemy.orm import Session

from ackreplay.core.config import Settings, get_settings
from ackreplay.core.db import API_SESSIONS, session_scope
from ackreplay.core.orm import Owner
from ackreplay.core.owners import authenticate, token_from_header
from ackreplay.core.run_views import MAX_PAGE
from ackreplay.core.storage import Store, get_store


def get_session() -> Iterator[Session]:
    with session_scope() as session:
        yield session


#: At most ``API_SESSIONS`` request sessions at a time (more wait, without a thread, for a slot), each
#: committed and closed as soon as the handler returns, before the response is serialised and sent.
#: Without the limit, requests that had taken a connection (``get_owner``) then waited for a worker
#: thread to run their handler, while the threads ran other requests' ``get_owner`` blocked on the
#: exhausted pool: 1–2 s stalls under 50 clients, and with few threads a deadlock until the pool's 30 s
#: timeout.
SessionDep = Annotated[Session, Depends(get_session, scope="function", max_concurrency=API_SESSIONS)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]


def get_owner(session: SessionDep, settings: SettingsDep,
              authorization: Annotated[str | None, Header(description="Bearer API token",
                                                          examples=["Bearer ar_3q2+7wXb…"])] = None) -> Owner:
    return authenticate(session, token_from_header(authorization), settings.auth)


OwnerDep = Annotated[Owner, Depends(get_owner)]
#: A page of a run's or a batch's captures (``core.run_views.STATUS_PAGE`` by default).
PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="items per page", examples=[100])]

#: The rankings' switch: also rank scores labelled not reproducible from their flow's vantage.
INCLUDE_NOT_REPRODUCIBLE = Annotated[bool, Query(description="also rank estimators on flows whose vantage cannot "
                                                 "reproduce them (BE and CRB off the sender: they depend on the "
                                                 "ACKs' timing at the sender); left out by default",
                                                 examples=[False])]


def next_page(path: str, offset: int, limit: int, total: int) -> str | None:
    """The URL of the page after ``[offset, offset + limit)`` of ``total`` items, None after the last."""
    return f"{path}?offset={offset + limit}&limit={limit}" if offset + limit < total else None


#: The rankings' other switch: also rank on flows the estimators cannot be compared on (``scoring.comparable``).
INCLUDE_INCOMPARABLE = Annotated[bool, Query(description="also rank on flows the estimators cannot be compared on "
                                             "(too little network-limited time or too few loss events for them, "
                                             "or limited by the application or the receiver most of the time; "
                                             "the run document's comparable_reason says which); left out by "
                                             "default", examples=[False])]
