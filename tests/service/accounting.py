"""What the store holds, checked byte for byte against the database and the quota after each hostile case:
no upload in flight left behind, no object without its capture or run, and the quota equal to the bytes
of the captures kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from ackreplay.core.db import session_scope
from ackreplay.core.orm import Capture, Run


def stored(store: Path) -> dict[str, int]:
    """Every object of the store (its readiness probe aside) with its size."""
    if not store.exists():
        return {}
    return {str(p.relative_to(store)): p.stat().st_size for p in sorted(store.rglob("*"))
            if p.is_file() and "_ready" not in p.parts}


def check_store(store: Path, api: Any, headers: dict[str, str] | None = None) -> dict[str, int]:
    """Assert the store holds exactly what the database says, and the quota counts it; the objects."""
    objects = stored(store)
    with session_scope() as session:
        captures = {c.id: c for c in session.scalars(select(Capture))}
        runs = {r for (r,) in session.execute(select(Run.id))}
    assert not [k for k in objects if k.startswith("uploads/")], f"uploads left in the store: {objects}"
    for key in objects:
        parts = key.split("/")
        if parts[0] == "captures":
            assert parts[1] in captures, f"{key}: no capture {parts[1]}"
        elif parts[0] == "series":
            assert parts[1] in runs and parts[2] in captures, f"{key}: no run or capture for it"
        else:
            raise AssertionError(f"an object outside captures/ and series/: {key}")
    for cid, cap in captures.items():  # each capture's bytes are stored, exactly its size
        assert objects.get(f"captures/{cid}/capture") == cap.size_bytes, f"capture {cid}: {cap.size_bytes} bytes"
    quota = api.get("/api/v1/quota", headers=headers or {}).json()
    owner_ids = {c.owner_id for c in captures.values()}
    if len(owner_ids) <= 1:  # one owner: the quota is every stored capture's bytes
        assert quota["used_bytes"] == sum(objects[f"captures/{cid}/capture"] for cid in captures), quota
        assert quota["captures"] == len(captures)
    return objects
