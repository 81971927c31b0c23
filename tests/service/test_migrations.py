"""The Alembic migrations build exactly the schema of the models, on SQLite and on a real PostgreSQL,
and every migration can be undone and applied again."""

from __future__ import annotations

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
