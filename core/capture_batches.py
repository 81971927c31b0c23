"""Batches: many captures in one request — separate files and/or .zip, .tar, .tar.gz archives of them —
scored as one run whose scoreboard ranks the estimators over all the traces."""

from __future__ import annotations

import csv
import gzip
import io
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from sqlalchemy.orm import Session

from ackreplay.core import captures as cap_svc
from ackreplay.core.capture_scoring import csv_cell
from ackreplay.core.errors import NotFound, ServiceError
from ackreplay.core.orm import Batch, Capture, Owner, Run
from ackreplay.core.owners import owned
from ackreplay.core.quotas import QuotaExceeded
from ackreplay.core.run_tasks import estimator_spec, start_run
from ackreplay.core.run_views import leaderboard
from ackreplay.core.storage import Readable, Store
from ackreplay.core.zip_directory import directory

MAX_MEMBERS = 10_000
#: A zip's central directory is parsed whole when it is opened: at most this many entries (files and folders)
#: and bytes (10 000 members with paths of a few hundred characters fit), checked in its end record first.
MAX_ZIP_ENTRIES = 2 * MAX_MEMBERS
MAX_ZIP_DIRECTORY_BYTES = 8 << 20
#: The largest single read of a tar stream: a header (pax, GNU long name) is read whole (members in chunks).
MAX_TAR_READ = 4 << 20


class BatchRejected(ServiceError):
    """An error that rejects the whole batch (not one member): nothing of it is kept."""

    status = 413


class _Budget:
    """The decompressed bytes all members of one archive may still yield (``max_archive_bytes``)."""

    def __init__(self, name: str, limit: int) -> None:
        self.name, self.limit, self.used = name, limit, 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise BatchRejected(f"{self.name}: the archive's members decompress to more than {self.limit} bytes",
                                code="archive_too_large")


#: What reading a member of a broken archive raises (a truncated gzip, a bad CRC, corrupt deflate data).
BROKEN = (EOFError, zlib.error, gzip.BadGzipFile, zipfile.BadZipFile, tarfile.TarError)


class _Metered:
    """A member's stream that charges every byte read to the archive's budget (checked while streaming:
    a zip or tar bomb is stopped at the limit, not after it has been written out). A member that breaks off
    rejects the batch (422 ``invalid_archive``; it was a 500)."""

    def __init__(self, src: IO[bytes], budget: _Budget) -> None:
        self.src, self.budget = src, budget

    def read(self, n: int = -1) -> bytes:
        try:
            data = self.src.read(n)
        except BROKEN as exc:
            raise BatchRejected(f"{self.budget.name}: broken archive ({exc})", code="invalid_archive",
                                status=422) from exc
        self.budget.take(len(data))
        return data


def _is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def expand(src: IO[bytes], name: str, *, max_bytes: int) -> Iterator[tuple[str, Readable]]:
    """The captures inside an upload: the upload itself, or the files of a zip/tar(.gz) archive, whose
    members together may decompress to at most ``max_bytes`` (:class:`BatchRejected` beyond)."""
    head = src.read(1024)
    src.seek(0)
    budget = _Budget(name, max_bytes)
    if head[:4] == b"PK\x03\x04":
        yield from _zip_members(src, name, budget)
        return
    inner = head
    if head[:2] == b"\x1f\x8b":
        try:
            inner = gzip.GzipFile(fileobj=io.BytesIO(head)).read(512)
        except (OSError, EOFError):
            inner = b""
    if _is_tar(head) or _is_tar(inner):
        yield from _tar_members(gzip.GzipFile(fileobj=src, mode="rb") if head[:2] == b"\x1f\x8b" else src, name, budget)
        return
    yield name, src


def _zip_members(src: IO[bytes], name: str, budget: _Budget) -> Iterator[tuple[str, Readable]]:
    stated = directory(src)
    if stated is not None and (stated.entries > MAX_ZIP_ENTRIES or stated.size > MAX_ZIP_DIRECTORY_BYTES):
        raise BatchRejected(f"{name}: a directory of {stated.entries} entries in {stated.size} bytes (at most "
                            f"{MAX_MEMBERS} files, {MAX_ZIP_DIRECTORY_BYTES} bytes)", code="archive_too_large")
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ServiceError(f"{name}: broken zip archive ({exc})", code="invalid_archive", status=422) from exc
    with zf:
        members = [i for i in zf.infolist() if not i.is_dir()]
        if len(members) > MAX_MEMBERS:
            raise BatchRejected(f"{name}: more than {MAX_MEMBERS} files", code="archive_too_large")
        for info in members:
            try:
                with zf.open(info) as zmember:
                    yield info.filename, _Metered(zmember, budget)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
                raise ServiceError(f"{name}: broken zip member {info.filename} ({exc})",
                                   code="invalid_archive", status=422) from exc


def _tar_members(src: IO[bytes] | gzip.GzipFile, name: str, budget: _Budget) -> Iterator[tuple[str, Readable]]:
    """The files of a tar archive (``src`` decompressed already), its headers held to ``MAX_TAR_READ``."""
    try:
        with tarfile.open(fileobj=cast(IO[bytes], _BoundedReads(src, name)), mode="r:") as tf:
            count = 0
            for entry in tf:
                if not entry.isfile():
                    continue
                count += 1
                if count > MAX_MEMBERS:
                    raise BatchRejected(f"{name}: more than {MAX_MEMBERS} files", code="archive_too_large")
                fh = tf.extractfile(entry)
                if fh is not None:
                    yield entry.name, _Metered(fh, budget)
    except BROKEN as exc:
        raise ServiceError(f"{name}: broken tar archive ({exc})", code="invalid_archive", status=422) from exc


class _BoundedReads:
    """A tar archive's stream that refuses any single read past ``MAX_TAR_READ``. tarfile reads an extended
    (pax) or long-name header whole, at the size the header states: a 261 kB .tar.gz stating a 256 MiB header
    cost 269 MB of the API's memory (up to 8 GiB a header). Members are read in chunks of at most 1 MiB."""

    def __init__(self, src: IO[bytes] | gzip.GzipFile, name: str) -> None:
        self.src, self.name = src, name

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > MAX_TAR_READ:
            raise BatchRejected(f"{self.name}: a tar header of {n} bytes (at most {MAX_TAR_READ})",
                                code="archive_too_large")
        return self.src.read(n)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.src.seek(offset, whence)

    def tell(self) -> int:
        return self.src.tell()


def create(session: Session, store: Store, owner: Owner, uploads: list[tuple[str, IO[bytes]]], *, name: str,
           truth: dict[str, Any] | None, tags: list[str], limit: int, max_archive_bytes: int,
           estimators: list[Any] | None = None) -> Batch:
    """Store every capture of the uploads and start one run over them. A member that is not a capture is
    listed in ``rejected``; an archive past ``max_archive_bytes`` or a batch past the owner's quota rejects
    the whole batch (413), and the captures it had stored so far are removed again."""
    batch = Batch(owner_id=owner.id, name=name)
    session.add(batch)
    session.flush()
    captures: list[Capture] = []
    seen: set[str] = set()
    rejected: list[dict[str, Any]] = []
    for upload_name, fh in uploads:  # a rejected batch rolls back: its stored objects go with the rows
        for member_name, member in expand(fh, upload_name, max_bytes=max_archive_bytes):
            try:
                up = cap_svc.create_from_stream(session, store, owner, member, name=cap_svc.display_name(member_name),
                                                tags=tags, truth=truth, limit=limit, batch_id=batch.id)
            except (BatchRejected, QuotaExceeded):
                raise
            except ServiceError as exc:
                rejected.append({"name": cap_svc.display_name(member_name), "error": exc.code, "detail": exc.detail})
                continue
            if up.capture.id not in seen:
                seen.add(up.capture.id)
                captures.append(up.capture)
    if not captures:
        raise ServiceError("the batch holds no capture (" + "; ".join(f"{r['name']}: {r['error']}"
                           for r in rejected) + ")", code="no_captures", status=422)
    run = start_run(session, owner, captures, estimator_spec(estimators), batch_id=batch.id)
    batch.run_id = run.id
    batch.capture_ids = [c.id for c in captures]
    batch.rejected = rejected
    session.flush()
    return batch


def get(session: Session, owner: Owner, batch_id: str) -> Batch:
    return owned(session, owner, Batch, batch_id, "batch")


def scoreboard(session: Session, batch: Batch, include_not_reproducible: bool = False,
               include_incomparable: bool = False) -> dict[str, Any]:
    """The leaderboard of the batch's run, with an overall ranking: by the median composite error over flows
    (``scoring.ranking``), ties by the mean rank over the ranked scores. Scores not reproducible from their
    flow's vantage are left out unless ``include_not_reproducible``, flows the estimators cannot be compared on
    unless ``include_incomparable``."""
    run = session.get(Run, batch.run_id) if batch.run_id else None
    if run is None:
        raise NotFound(f"batch {batch.id} has no run", code="run_not_found")
    board = leaderboard(session, [run], include_not_reproducible=include_not_reproducible,
                        include_incomparable=include_incomparable)
    ranks: dict[str, list[int]] = {n: [] for n in board["estimators"]}
    for entry in board["scores"].values():
        for n, e in entry["estimators"].items():
            if entry["ranked"] and "rank" in e:
                ranks[n].append(e["rank"])
    composite = board["scores"]["composite_error"]["estimators"]
    inf = float("inf")
    overall = sorted(((n, sum(r) / len(r), composite[n]["median"]) for n, r in ranks.items() if r),
                     key=lambda x: (x[2] if x[2] is not None else inf, x[1]))
    board["ranking"] = [{"estimator": n, "composite_error": c, "mean_rank": m, "place": i + 1}
                        for i, (n, m, c) in enumerate(overall)]
    board.update({"batch_id": batch.id, "run_id": run.id, "status": run.status, "captures": len(batch.capture_ids)})
    return board


def scoreboard_csv(board: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["score", "better", "ranked", "estimator", "mean", "median", "q1", "q3", "ci_low", "ci_high", "rank",
                "ties", "wins", "flows"])
    for score, entry in board["scores"].items():
        for n, e in entry["estimators"].items():
            ci = e.get("ci") or [None, None]
            w.writerow([csv_cell(v) for v in (score, entry["better"], entry["ranked"], n, e["mean"], e.get("median"),
                                              e.get("q1"), e.get("q3"), ci[0], ci[1], e.get("rank"),
                                              " ".join(e.get("ties") or []), e["wins"], e["flows"])])
    return buf.getvalue()
