"""``ackreplay serve | worker | migrate | token create/list/revoke | quota``: the service from the command line."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ackreplay.cli import collection

token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
quota_app = typer.Typer(help="Per-owner storage quotas.", no_args_is_help=True)


def migrate() -> None:
    """Apply the database migrations (SQLite by default; PostgreSQL with DATABASE_URL)."""
    from ackreplay.core.config import get_settings
    from ackreplay.core.migrate import upgrade

    upgrade()
    print(f"database at {get_settings().sqlalchemy_url.split('@')[-1]} is up to date")


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    no_migrate: Annotated[bool, typer.Option("--no-migrate", help="Do not apply migrations first.")] = False,
    workers: Annotated[int, typer.Option(help="API processes (each embedded one runs its own worker thread).")]
    = 1,
    open_: Annotated[bool, typer.Option("--open", help="Serve without tokens even on a non-loopback address "
                                        "(anyone who can reach it may upload, read and delete).")] = False,
) -> None:
    """Run the REST API (and, without REDIS_URL, an in-process worker): everything on one machine.

    Without a token the service runs open (single user) only on a loopback address; on any other address
    it requires API tokens unless --open (or ACKREPLAY_AUTH=open) says otherwise."""
    collection.resume()  # a long-running process: the garbage collector as usual
    import logging
    import os

    import uvicorn

    from ackreplay.api.http_protocol import TimedH11Protocol
    from ackreplay.core.config import get_settings
    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.owners import open_mode_allowed
    from ackreplay.core.run_tasks import requeue_unfinished

    os.environ["ACKREPLAY_BIND_HOST"] = host  # the API checks Host headers of open-mode requests against it
    get_settings.cache_clear()
    settings = get_settings()
    mode, warning = open_mode_allowed(host, settings.auth, open_)
    if mode != settings.auth:
        os.environ["ACKREPLAY_AUTH"] = mode  # the API processes read it (also those uvicorn spawns)
        get_settings.cache_clear()
        settings = get_settings()
        if mode == "required":
            print(f"ackreplay: {host} is not a loopback address: API tokens are required "
                  "(`ackreplay token create NAME`; --open to serve without them)")
    if warning:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("ackreplay.serve").warning(warning)
    if not no_migrate:
        upgrade()
    if settings.embedded_worker:
        with session_scope() as session:  # work a previous embedded server left unfinished
            n = requeue_unfinished(session)
        if n:
            print(f"re-queued {n} unfinished tasks")
    mode = "embedded (in-process worker)" if settings.embedded_worker else "Celery workers via Redis"
    print(f"ackreplay API on http://{host}:{port}/api/v1 — {mode}; docs at /api/v1/docs")
    # Idle keep-alive connections stay open 75 s by default (uvicorn's default is 5 s): clients and proxies
    # that pool connections (httpx, browsers, load balancers idle out at 60 s) otherwise race the server's
    # close and see a reset on a request sent as the connection closes (the soak counted 18 such errors at
    # 5 s). The protocol adds the header timeout uvicorn lacks (api.http_protocol).
    uvicorn.run("ackreplay.api.app:create_app", factory=True, host=host, port=port, log_level="warning",
                workers=workers, timeout_keep_alive=settings.keep_alive_seconds, http=TimedH11Protocol)


def worker(
    concurrency: Annotated[int, typer.Option(help="Worker processes (default: CPU count).")] = 0,
) -> None:
    """Run a Celery worker (needs REDIS_URL and DATABASE_URL)."""
    collection.resume()  # a long-running process: the garbage collector as usual
    from ackreplay.core.config import get_settings

    settings = get_settings()
    if settings.embedded_worker:
        print("ackreplay: error [no_broker]: `ackreplay worker` needs REDIS_URL (embedded `serve` has its own worker)")
        raise typer.Exit(2)
    from ackreplay.workers.celery_app import app

    argv = ["worker", "--loglevel=INFO", "-Q", "ackreplay", "--pool=prefork"]
    if concurrency:
        argv.append(f"--concurrency={concurrency}")
    app.worker_main(argv)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Owner name (created if new).")],
    no_adopt: Annotated[bool, typer.Option("--no-adopt", help="The first token: leave what was uploaded in open "
                                           "mode to the owner `local` instead of giving it to NAME.")] = False,
    expires: Annotated[str | None, typer.Option(help="Valid for this long (e.g. 90d, 12h, 30m); default: no "
                                                "expiry.")] = None,
) -> None:
    """Create an API token for an owner; it is printed once (on stdout) and stored hashed.

    The first token ever created adopts what was uploaded in open mode: its owner takes over the open-mode
    owner `local` with every capture, run and batch (unless --no-adopt)."""
    from datetime import UTC, datetime

    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.owners import adopt_open_owner, create_token

    expires_at = None
    if expires is not None:
        seconds = _duration(expires)
        if seconds is None:
            print(f"ackreplay: error [invalid_duration]: cannot read {expires!r} as a duration (e.g. 90d, 12h, 30m)",
                  file=sys.stderr)
            raise typer.Exit(2)
        expires_at = datetime.fromtimestamp(datetime.now(UTC).timestamp() + seconds, UTC)
    upgrade()
    with session_scope() as session:
        adopted = None if no_adopt else adopt_open_owner(session, name)
        _, plain = create_token(session, name, expires_at=expires_at)
    if adopted is not None:
        print(f"ackreplay: {name} adopted what was uploaded in open mode ({adopted} captures)", file=sys.stderr)
    print(plain)


def _duration(text: str) -> float | None:
    """Seconds in '90d', '12h', '30m', '45s' (or a bare number of seconds); None when unreadable or ≤ 0."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    text = text.strip().lower()
    unit = units.get(text[-1:])
    number = text[:-1] if unit else text
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        return None
    return value if 0 < value < 1e10 else None


@token_app.command("list")
def token_list() -> None:
    """Every API token: id, owner, name, shown prefix, created, expires and state (active, revoked, expired)."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.owners import token_state, tokens

    upgrade()
    with session_scope() as session:
        rows = [(t.id, owner, t.name, t.prefix + "…", t.created_at.strftime("%Y-%m-%d %H:%M"),
                 t.expires_at.strftime("%Y-%m-%d %H:%M") if t.expires_at else "never", token_state(t))
                for t, owner in tokens(session)]
    print("\t".join(("id", "owner", "name", "prefix", "created", "expires", "state")))
    for row in rows:
        print("\t".join(row))


@token_app.command("revoke")
def token_revoke(ref: Annotated[str, typer.Argument(metavar="TOKEN",
                                                    help="A token id, its prefix (ar_…, as `token list` shows "
                                                    "it) or an owner name (all its tokens).")]) -> None:
    """Revoke API tokens (requests with them answer 401 invalid_token). A server in `auto` mode stays
    closed: it opens only while no token has ever existed."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.owners import revoke_tokens

    upgrade()
    with session_scope() as session:
        n = revoke_tokens(session, ref.rstrip("…"))
    if not n:
        print(f"ackreplay: error [unknown_token]: no token or owner {ref!r}", file=sys.stderr)
        raise typer.Exit(4)
    print(f"revoked {n} token{'s' if n != 1 else ''}")


@quota_app.command("set")
def quota_set(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Owner name.")],
    size: Annotated[str, typer.Argument(metavar="SIZE",
                                        help="Bytes of stored captures (e.g. 20GB, 512MiB); `default` for the "
                                        "service's ACKREPLAY_QUOTA_BYTES.")],
) -> None:
    """Set an owner's storage quota (uploads past it answer 413 quota_exceeded)."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.owners import get_or_create_owner
    from ackreplay.estimators import EstimatorError
    from ackreplay.scoring.truth import parse_size

    try:
        limit = None if size == "default" else parse_size(size)
    except EstimatorError:
        print(f"ackreplay: error [invalid_size]: cannot read {size!r} as a size (e.g. 20GB, 512MiB, default)",
              file=sys.stderr)
        raise typer.Exit(2) from None
    upgrade()
    with session_scope() as session:
        get_or_create_owner(session, name).quota_bytes = limit
    quota_show(name)


@quota_app.command("show")
def quota_show(name: Annotated[str, typer.Argument(metavar="NAME", help="Owner name.")]) -> None:
    """An owner's storage: bytes of stored captures and their results against its quota."""
    from sqlalchemy import select

    from ackreplay.core import quotas
    from ackreplay.core.db import session_scope
    from ackreplay.core.migrate import upgrade
    from ackreplay.core.orm import Owner

    upgrade()
    with session_scope() as session:
        owner = session.scalar(select(Owner).where(Owner.name == name))
        if owner is None:
            print(f"ackreplay: error [unknown_owner]: no owner {name!r}", file=sys.stderr)
            raise typer.Exit(4)
        u = quotas.usage(session, owner)
    limit = "unlimited" if u.limit_bytes is None else f"{u.limit_bytes} bytes"
    print(f"{name}: {u.used_bytes} bytes ({u.capture_bytes} in {u.captures} captures, {u.derived_bytes} in their "
          f"results); quota {limit}")
