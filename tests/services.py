"""Real PostgreSQL and Redis servers for the tests, started on 127.0.0.1 in temporary directories.

The binaries come from Debian packages (``postgresql``, ``redis-server``), which ``scripts/test.sh``
installs when they are missing. PostgreSQL refuses to run as root, so as root the cluster is owned
by and run as the ``postgres`` user (created by the Debian package) or ``nobody``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Server:
    url: str
    port: int
    directory: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_bindir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    if not versions:
        raise RuntimeError("PostgreSQL is not installed: run scripts/test.sh (it installs postgresql)")
    return Path(versions[-1])


def _as_user() -> tuple[list[str], str | None]:
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return ["runuser", "-u", name, "--"], name
    raise RuntimeError("running as root and no unprivileged user to run PostgreSQL as")


def _wait_port(port: int, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start on port {port}:\n{log.read_text() if log.exists() else ''}")


def start_postgres(base: Path, port: int | None = None) -> tuple[Server, subprocess.Popen[bytes]]:
    """Start PostgreSQL with its cluster in ``base`` (created on first use; reused to restart it)."""
    bindir = _pg_bindir()
    prefix, user = _as_user()
    data = base / "pgdata"
    base.mkdir(parents=True, exist_ok=True)
    if user:
        pw = pwd.getpwnam(user)
        os.chown(base, pw.pw_uid, pw.pw_gid)
    if not data.exists():
        subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                        "--no-sync", "-E", "UTF8"], check=True, capture_output=True)
    port = port or free_port()
    log = base / "postgres.log"
    proc = subprocess.Popen(
        [*prefix, str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
         "-k", str(base), "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
         "-c", "max_connections=200"],
        stdout=open(log, "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    _wait_port(port, 30, "PostgreSQL", log)
    return Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", port, base), proc


def start_redis(base: Path, port: int | None = None) -> tuple[Server, subprocess.Popen[bytes]]:
    """Start Redis without persistence (a restart loses every queued message, as a crash would)."""
    exe = shutil.which("redis-server")
    if not exe:
        raise RuntimeError("redis-server is not installed: run scripts/test.sh (it installs redis-server)")
    base.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = base / "redis.log"
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(base), "--save", "",
         "--appendonly", "no", "--protected-mode", "no"],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )
    _wait_port(port, 15, "Redis", log)
    return Server(f"redis://127.0.0.1:{port}/0", port, base), proc


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    _stop(proc)


def stop_postgres(server: Server, proc: subprocess.Popen[bytes]) -> None:
    """Stop PostgreSQL and wait until the postmaster has exited (so that it can be started again)."""
    prefix, _ = _as_user()
    subprocess.run([*prefix, str(_pg_bindir() / "pg_ctl"), "-D", str(server.directory / "pgdata"), "-m", "fast",
                    "-w", "stop"], capture_output=True, timeout=60)
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    base = Path(tempfile.mkdtemp(prefix="ackreplay-pg-"))
    server, proc = start_postgres(base)
    try:
        yield server
    finally:
        stop_postgres(server, proc)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    base = Path(tempfile.mkdtemp(prefix="ackreplay-redis-"))
    server, proc = start_redis(base)
    try:
        yield server
    finally:
        _stop(proc)
        shutil.rmtree(base, ignore_errors=True)
