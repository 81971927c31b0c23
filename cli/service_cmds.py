"""``ackreplay serve | worker | migrate | token create``: the service from the command line."""

from __future__ import annotations

from typing import Annotated

import typer

from core.config import get_settings

token_app = typer.Typer(help="API tokens.", no_args_is_help=True)


def migrate() -> None:
    """Apply the database migrations (SQLite by default; PostgreSQL with DATABASE_URL)."""
    from core.migrate import upgrade

    upgrade()
    print(f"database at {get_settings().sqlalchemy_url.split('@')[-1]} is up to date")


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    no_migrate: Annotated[bool, typer.Option("--no-migrate", help="Do not apply migrations first.")] = False,
    workers: Annotated[int, typer.Option(help="API processes (each embedded one runs its own worker thread).")]
    = 1,
) -> None:
    """Run the REST API (and, without REDIS_URL, an in-process worker): everything on one machine."""
    import uvicorn

    from core.db import session_scope
    from core.migrate import upgrade
    from core.pipeline import requeue_unfinished

    settings = get_settings()
    if not no_migrate:
        upgrade()
    if settings.embedded_worker:
        with session_scope() as session:  # work a previous embedded server left unfinished
            n = requeue_unfinished(session)
        if n:
            print(f"re-queued {n} unfinished tasks")
    mode = "embedded (in-process worker)" if settings.embedded_worker else "Celery workers via Redis"
    print(f"ackreplay API on http://{host}:{port}/api/v1 — {mode}; docs at /api/v1/docs")
    uvicorn.run("api.app:create_app", factory=True, host=host, port=port, log_level="warning", workers=workers)


def worker(
    concurrency: Annotated[int, typer.Option(help="Worker processes (default: CPU count).")] = 0,
) -> None:
    """Run a Celery worker (needs REDIS_URL and DATABASE_URL)."""
    settings = get_settings()
    if settings.embedded_worker:
        print("ackreplay: error [no_broker]: `ackreplay worker` needs REDIS_URL (embedded `serve` has its own worker)")
        raise typer.Exit(2)
    from workers.celery_app import app

    argv = ["worker", "--loglevel=INFO", "-Q", "ackreplay", "--pool=prefork"]
    if concurrency:
        argv.append(f"--concurrency={concurrency}")
    app.worker_main(argv)


@token_app.command("create")
def token_create(name: Annotated[str, typer.Argument(help="Owner name (created if new).")]) -> None:
    """Create an API token for an owner; it is printed once and stored hashed."""
    from core.db import session_scope
    from core.migrate import upgrade
    from core.owners import create_token

    upgrade()
    with session_scope() as session:
        _, plain = create_token(session, name)
    print(plain)
