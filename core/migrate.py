"""Apply the Alembic migrations (the same ones for SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from core.config import get_settings

ROOT = Path(__file__).resolve().parents[1]


def upgrade(url: str | None = None) -> None:
    settings = get_settings()
    if url is None and not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.attributes["url"] = url or settings.sqlalchemy_url
    command.upgrade(cfg, "head")
