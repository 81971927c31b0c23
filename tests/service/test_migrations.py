"""The Alembic migrations build exactly the schema of the models, on SQLite and on a real PostgreSQL,
and every migration can be undone and applied again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from ackreplay.core.migrate import config, upgrade
from ackreplay.core.orm import Base
from tests.service.harness import fresh_database


def _url(kind: str, tmp_path: Path, postgres_url: str | None) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    assert postgres_url is not None
    return "postgresql+psycopg://" + fresh_database(postgres_url).split("://", 1)[1]


def _differences(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(compare_metadata(MigrationContext.configure(conn), Base.metadata))
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_migrations_match_the_models_and_round_trip(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pg = request.getfixturevalue("postgres_server").url if kind == "postgresql" else None
    url = _url(kind, tmp_path, pg)
    upgrade(url)
    assert _differences(url) == []
    cfg = config(url)
    command.downgrade(cfg, "base")
    assert len(_differences(url)) > 0  # the tables are gone
    command.upgrade(cfg, "head")
    assert _differences(url) == []


def _run_captures(url: str, rows: dict[str, tuple[dict[str, str], int | None]]) -> None:
    """An owner, a run and a capture per entry of ``rows`` (capture id → (skipped, skipped_total))."""
    from sqlalchemy.orm import Session

    from ackreplay.core.orm import Capture, Owner, Run, RunCapture

    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        owner = Owner(name="o")
        session.add(owner)
        session.flush()
        run = Run(owner_id=owner.id, estimators=[], version="t", id="r" * 32)
        session.add(run)
        for cap_id, (skipped, total) in rows.items():
            session.add(Capture(id=cap_id, owner_id=owner.id, sha256=cap_id * 2, name=cap_id, size_bytes=1,
                                format="pcap", storage_key=f"captures/{cap_id}"))
            session.flush()
            session.add(RunCapture(run_id=run.id, capture_id=cap_id, skipped=skipped, skipped_total=total,
                                   skipped_counts={"too short": total} if total is not None else None))
    engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_downgrading_0009_keeps_whole_skipped_lists_and_refuses_to_cut_summaries(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Below 0009 a run holds every skipped flow: a summary holding them all goes down as it is (and reads the
    same once upgraded again); a summary of the first 100 of more would lose flows, so the downgrade refuses,
    naming it, and leaves the schema as it was."""
    from sqlalchemy import text

    from ackreplay.core.orm import RunCapture
    from ackreplay.core.skipped_flows import stored_summary

    pg = request.getfixturevalue("postgres_server").url if kind == "postgresql" else None
    url = _url(kind, tmp_path, pg)
    upgrade(url)
    whole = {str(f): f"too short: {f} packets" for f in (3, 1, 2)}
    cut = {str(f): "too short: 2 packets" for f in range(100)}
    _run_captures(url, {"a" * 32: (whole, 3), "b" * 32: (cut, 250)})
    cfg = config(url)
    refused = r"cannot downgrade below 0009: 1 run captures .* capture b{32}: 250 skipped"
    with pytest.raises(RuntimeError, match=refused):
        command.downgrade(cfg, "0008")
    assert _differences(url) == []  # (nothing changed)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("delete from run_captures where capture_id = :c"), {"c": "b" * 32})
    command.downgrade(cfg, "0008")
    with engine.connect() as conn:
        columns = conn.execute(text("select * from run_captures")).keys()
        assert "skipped_total" not in columns and "skipped_counts" not in columns
    command.upgrade(cfg, "head")
    with engine.connect() as conn:
        (skipped, total) = conn.execute(text("select skipped, skipped_total from run_captures")).one()
    engine.dispose()
    skipped = skipped if isinstance(skipped, dict) else json.loads(skipped)
    assert skipped == whole and total is None
    summary = stored_summary(RunCapture(skipped=skipped, skipped_total=None))
    assert summary.total == 3 and summary.counts == {"too short": 3} and list(summary.shown) == ["1", "2", "3"]
