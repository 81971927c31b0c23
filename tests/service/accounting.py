"""What the store holds, checked byte for byte against the database and the quota after each hostile case:
no upload in flight left behind, no object without its capture or run, every series object recorded on the
replay task that wrote it, every task's row bytes what its rows measure, and the quota equal to the bytes
of the captures kept plus those of the results derived from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from ackreplay.core.db import session_scope
from ackreplay.core.orm import Capture, DecisionRow, FlowDiagnostics, Result, Run, Task
from ackreplay.core.quotas import row_bytes


def stored(store: Path) -> dict[str, int]:
    """Every object of the store (its readiness probe aside) with its size."""
    if not store.exists():
        return {}
    return {str(p.relative_to(store)): p.stat().st_size for p in sorted(store.rglob("*"))
            if p.is_file() and "_ready" not in p.parts}


def _measured(session: Any, task: Task) -> int:
    """The bytes the rows a replay task wrote measure (``core.quotas.row_bytes``), read back from the database."""
    flows = list(task.flow_ids)
    if not flows:
        return 0
    total = 0
    for table in (Result, DecisionRow, FlowDiagnostics):
        rows = session.scalars(select(table).where(table.run_id == task.run_id, table.capture_id == task.capture_id,
                                                   table.flow_id.in_(flows)))
        total += sum(row_bytes(r.scores, r.parameters, r.window) if table is Result else row_bytes(r.data)
                     for r in rows)
    return total


def _check_derived(session: Any, objects: dict[str, int], runs: set[str]) -> int:
    """Each series object (a task's series and its score columns, ``core.task_scores``) is its done replay task's,
    their sizes together what is recorded on it, and each task's row bytes are what its rows measure; the derived
    bytes of all tasks."""
    tasks = {(t.run_id, t.capture_id, t.chunk): t for t in session.scalars(select(Task).where(Task.kind == "replay"))}
    sizes: dict[tuple[str, str, int], int] = {}
    for key, size in objects.items():
        if key.startswith("series/"):
            _, run_id, capture_id, name = key.split("/")
            of = (run_id, capture_id, int(name.split(".")[0]))
            task = tasks.get(of)
            assert task is not None and task.status == "done", f"{key}: no done replay task wrote it"
            sizes[of] = sizes.get(of, 0) + size
    for of, size in sizes.items():
        assert tasks[of].series_bytes == size, f"{of}: {size} bytes stored, {tasks[of].series_bytes} recorded"
    derived = 0
    for (run_id, capture_id, chunk), task in tasks.items():
        if task.series_bytes:
            assert (run_id, capture_id, chunk) in sizes, f"task {task.id}: no series"
        if task.status != "done":
            assert task.series_bytes == task.row_bytes == 0, f"task {task.id} ({task.status}) charged bytes"
        assert task.row_bytes == _measured(session, task), f"task {task.id}: row bytes"
        assert run_id in runs
        derived += task.series_bytes + task.row_bytes
    return derived


def check_store(store: Path, api: Any, headers: dict[str, str] | None = None) -> dict[str, int]:
    """Assert the store holds exactly what the database says, and the quota counts it; the objects."""
    objects = stored(store)
    with session_scope() as session:
        captures = {c.id: c for c in session.scalars(select(Capture))}
        runs = {r.id: r.owner_id for r in session.scalars(select(Run))}
        derived = _check_derived(session, objects, set(runs))
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
    owner_ids = {c.owner_id for c in captures.values()} | set(runs.values())
    if len(owner_ids) <= 1:  # one owner: the quota is every stored capture's bytes and every result's
        assert quota["capture_bytes"] == sum(objects[f"captures/{cid}/capture"] for cid in captures), quota
        assert quota["derived_bytes"] == derived, (quota, derived)
        assert quota["used_bytes"] == quota["capture_bytes"] + quota["derived_bytes"], quota
        assert quota["captures"] == len(captures)
    return objects
