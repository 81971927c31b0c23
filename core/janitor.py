"""The store's janitor: objects that no database row owns are removed once ``orphan_seconds`` old.

They come from work cut off between the store and the database: an upload whose request died while
streaming, a worker killed after writing a capture's tables, a capture deleted while its run wrote
results. Every failure path removes its own objects; this periodic sweep catches what a crash left.
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import select

from ackreplay.core.config import get_settings
from ackreplay.core.db import session_scope
from ackreplay.core.orm import Capture, Run
from ackreplay.core.storage import Store, get_store

log = logging.getLogger("ackreplay.janitor")
#: A process sweeps at most this often.
PERIOD_S = 600.0
_last = {"at": 0.0}
_lock = threading.Lock()


def owner_key(key: str) -> tuple[str, ...] | None:
    """The ids an object belongs to: ("upload",) for an upload in flight, (capture,) for a capture's
    objects, (run, capture) for a run's series; None for objects the janitor leaves alone."""
    parts = key.split("/")
    if parts[0] == "uploads":
        return ("upload",)
    if parts[0] == "captures" and len(parts) > 2:
        return (parts[1],)
    if parts[0] == "series" and len(parts) > 3:
        return (parts[1], parts[2])
    return None


def sweep_orphans(store: Store, older_than_s: float) -> list[str]:
    """Remove the orphaned objects older than ``older_than_s``; their keys."""
    cutoff = time.time() - older_than_s
    old = [(key, ids) for prefix in ("uploads", "captures", "series")
           for key, when in store.objects(prefix) if when < cutoff and (ids := owner_key(key)) is not None]
    if not old:
        return []
    with session_scope() as session:
        captures = {c for (c,) in session.execute(select(Capture.id))}
        runs = {r for (r,) in session.execute(select(Run.id))}
    removed = []
    for key, ids in old:
        orphan = (ids == ("upload",) or (len(ids) == 1 and ids[0] not in captures)
                  or (len(ids) == 2 and (ids[0] not in runs or ids[1] not in captures)))
        if orphan:
            store.delete(key)
            removed.append(key)
    if removed:
        log.warning("removed %d orphaned objects from the store", len(removed))
    return removed


def maybe_sweep_orphans(*, force: bool = False) -> list[str]:
    """Sweep when this process has not in the last ``PERIOD_S`` (or when forced)."""
    with _lock:
        if not force and time.monotonic() - _last["at"] < PERIOD_S and _last["at"]:
            return []
        _last["at"] = time.monotonic()
    return sweep_orphans(get_store(), get_settings().orphan_seconds)
