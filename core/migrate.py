"""Apply the Alembic migrations (the same ones for SQLite and PostgreSQL).

The migrations ship inside the package (``migrations``), so an installed wheel migrates from its own
files: no ``alembic.ini`` and no source checkout are needed. ``alembic.ini`` at the repository's root
serves developers running the ``alembic`` command itself (e.g. ``alembic revision --autogenerate``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from ackreplay import migrations
from ackreplay.core.config import get_settings

SCRIPTS = Path(migrations.__file__).resolve().parent


def config(url: str) -> Config:
    """An Alembic configuration for ``url`` with the packaged migration scripts."""
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: str | None = None) -> None:
    settings = get_settings()
    if url is None and not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    command.upgrade(config(url or settings.sqlalchemy_url), "head")
