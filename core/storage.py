"""The object store for captures and Parquet tables, through fsspec (a local directory by default;
``s3://bucket/prefix`` and any other fsspec URL for scale-out)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import fsspec
import polars as pl

from ackreplay.core.config import get_settings

CHUNK = 1 << 20


class Readable(Protocol):
    """What an upload is read from: a file, an archive's member, a stream counted while it is read."""

    def read(self, n: int = -1, /) -> bytes: ...


class Streamed(NamedTuple):
    """What :meth:`Store.write_stream` wrote: its size, its SHA-256 (hex) and its first bytes (up to 16)."""

    size: int
    sha256: str
    head: bytes


class Store:
    def __init__(self, url: str, options: dict[str, Any] | None = None) -> None:
        self.fs, root = fsspec.core.url_to_fs(url, **(options or {}))
        self.root = root.rstrip("/")
        self.local = self.fs.protocol in ("file", "local") or "file" in (self.fs.protocol or ())
        if self.local:
            Path(self.root).mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def write_stream(self, key: str, src: Readable, *, limit: int) -> Streamed:
        """Copy ``src`` to ``key`` chunk by chunk while hashing.

        Raises :class:`TooLarge` past ``limit`` bytes (the partial object is removed).
        """
        digest = hashlib.sha256()
        size = 0
        head = b""
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)
        try:
            with self.fs.open(self.path(key), "wb") as out:
                while chunk := src.read(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise TooLarge(limit)
                    if len(head) < 16:
                        head += chunk[: 16 - len(head)]
                    digest.update(chunk)
                    out.write(chunk)
        except BaseException:
            self.delete(key)
            raise
        return Streamed(size, digest.hexdigest(), head)

    def move(self, src: str, dst: str) -> None:
        self.fs.makedirs(self.path(dst).rsplit("/", 1)[0], exist_ok=True)
        self.fs.mv(self.path(src), self.path(dst))

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self.path(key)))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            if self.fs.exists(self.path(key)):
                self.fs.rm(self.path(key), recursive=True)

    @contextlib.contextmanager
    def local_file(self, key: str) -> Iterator[Path]:
        """A local path for ``key`` (the object itself when the store is local, else a temporary copy)."""
        if self.local:
            yield Path(self.path(key))
            return
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / Path(key).name
            with self.fs.open(self.path(key), "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
            yield target

    def write_parquet(self, key: str, frame: pl.DataFrame, *, row_group_size: int | None = None) -> None:
        """Store a table as Parquet, written as it is encoded (no second copy of it in memory) to a temporary object
        beside ``key`` and then moved onto it: a reader of ``key`` sees the old object or the new one, never a
        partial one (two ingests of one capture may write the same tables)."""
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)
        tmp = f"{self.path(key)}.tmp-{uuid.uuid4().hex}"
        try:
            with self.fs.open(tmp, "wb") as out:
                frame.write_parquet(out, row_group_size=row_group_size)
            self.fs.mv(tmp, self.path(key))
        finally:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)

    @staticmethod
    def parquet_bytes(frame: pl.DataFrame, *, row_group_size: int | None = None) -> bytes:
        """A table as the Parquet object :meth:`write_parquet` stores (its size is known before it is stored)."""
        buf = io.BytesIO()
        frame.write_parquet(buf, row_group_size=row_group_size)
        return buf.getvalue()

    def put_file(self, key: str, path: Path) -> None:
        """Store a local file under ``key``, through a temporary object beside it (as :meth:`write_parquet`)."""
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)
        tmp = f"{self.path(key)}.tmp-{uuid.uuid4().hex}"
        try:
            self.fs.put_file(str(path), tmp)
            self.fs.mv(tmp, self.path(key))
        finally:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)

    def write_bytes(self, key: str, data: bytes) -> None:
        self.fs.makedirs(self.path(key).rsplit("/", 1)[0], exist_ok=True)
        with self.fs.open(self.path(key), "wb") as out:
            out.write(data)

    def read_parquet(self, key: str, where: pl.Expr | None = None, columns: Sequence[str] | None = None, *,
                     offset: int = 0, limit: int | None = None) -> pl.DataFrame:
        """Read a table, optionally only the rows matching ``where`` (row groups skipped by their
        statistics when the store is local), of those only ``limit`` from ``offset``, and only ``columns``."""
        if self.local:
            lazy = pl.scan_parquet(self.path(key))
            lazy = lazy.filter(where) if where is not None else lazy
            lazy = lazy.slice(offset, limit) if offset or limit is not None else lazy
            return (lazy.select(columns) if columns is not None else lazy).collect()
        with self.fs.open(self.path(key), "rb") as src:
            frame = pl.read_parquet(io.BytesIO(src.read()), columns=list(columns) if columns is not None else None)
        frame = frame.filter(where) if where is not None else frame
        return frame.slice(offset, limit) if offset or limit is not None else frame

    def objects(self, prefix: str) -> list[tuple[str, float]]:
        """Every object under ``prefix`` as (key, modification time in epoch seconds)."""
        base = self.path(prefix)
        if not self.fs.exists(base):
            return []
        out = []
        for path, info in self.fs.find(base, detail=True).items():
            stamp = info.get("mtime") or info.get("LastModified") or info.get("last_modified") or 0
            when = stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)
            out.append((path[len(self.root) + 1:] if path.startswith(self.root) else path.lstrip("/"), when))
        return out

    def check(self) -> None:
        """Raise if the store cannot be written and read back (readiness)."""
        key = "_ready/probe"
        self.fs.makedirs(self.path("_ready"), exist_ok=True)
        with self.fs.open(self.path(key), "wb") as out:
            out.write(b"ok")
        with self.fs.open(self.path(key), "rb") as src:
            if src.read() != b"ok":
                raise OSError("the object store returned other bytes than written")


class TooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the upload exceeds the limit of {limit} bytes")
        self.limit = limit


@lru_cache
def get_store() -> Store:
    s = get_settings()
    return Store(s.store_url, s.storage_options)
