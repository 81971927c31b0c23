"""Service batch throughput: captures per minute through ``POST /batches``, for a batch of 200
small captures and one of 10 large ones, with the embedded service (SQLite, in-process worker) and with
PostgreSQL, Redis and two Celery workers (``ackreplay worker --concurrency 1`` each) — all on this machine.

Small captures are distinct prefixes of the bundled sample (so that no upload is deduplicated); large ones
synthetic single bulk flows (``bench.make_capture``, a loss every 5000 segments). The clock runs from the
upload to the run's success; the upload itself (a zip) is included. PostgreSQL and Redis are started in
temporary directories by the test harness's helpers (``tests.services``: Debian packages, as the tests).
Usage: ``python -m bench.batch [--small 200] [--large 10] [--large-packets 150000] [--mode embedded,celery]``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.make_capture import ensure
from bench.service import free_port, served, wait_ready

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
EXE = str(Path(sys.executable).with_name("ackreplay"))


def small_captures(n: int) -> list[tuple[str, bytes]]:
    """``n`` distinct captures: the sample's pcap header and its first 400 + 7·i packets."""
    data = (ROOT / "samples" / "sample.pcap").read_bytes()
    header, off, records = data[:24], 24, []
    while off + 16 <= len(data):
        incl = int.from_bytes(data[off + 8: off + 12], "little")
        records.append(data[off: off + 16 + incl])
        off += 16 + incl
    return [(f"small-{i:03d}.pcap", header + b"".join(records[: 400 + 7 * i])) for i in range(n)]


def large_captures(n: int, packets: int) -> list[tuple[str, bytes]]:
    out = []
    for i in range(n):
        path = OUT / f"batch-large-{packets}-{i}.pcap"
        ensure(path, packets + 3 * i, 1, loss_every=5000)  # different sizes: no deduplication
        out.append((path.name, path.read_bytes()))
    return out


def run_batch(base: str, captures: list[tuple[str, bytes]]) -> float:
    """Upload ``captures`` as one zip batch and wait for its run; seconds from upload to success."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for name, blob in captures:
            zf.writestr(name, blob)
    t0 = time.perf_counter()
    r = httpx.post(f"{base}/batches", files=[("files", ("batch.zip", archive.getvalue()))], timeout=600)
    r.raise_for_status()
    run_id = r.json()["run_id"]
    while True:
        run = httpx.get(f"{base}/runs/{run_id}", timeout=30).json()
        if run["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.25)
    if run["status"] != "succeeded":
        raise SystemExit(f"batch run failed: {run}")
    return time.perf_counter() - t0


@contextmanager
def celery_service(workers: int) -> Iterator[str]:
    """PostgreSQL + Redis (temporary), ``ackreplay serve`` using them, and ``workers`` Celery workers."""
    sys.path.insert(0, str(ROOT))
    from tests.services import _stop, start_postgres, start_redis, stop_postgres

    base_dir = Path(tempfile.mkdtemp(prefix="ackreplay-batch-"))
    base_dir.chmod(0o755)  # PostgreSQL runs as its own user below it
    pg, pg_proc = start_postgres(base_dir / "pg")
    redis, redis_proc = start_redis(base_dir / "redis")
    env = {**os.environ, "DATABASE_URL": pg.url, "REDIS_URL": redis.url,
           "ACKREPLAY_DATA_DIR": str(base_dir / "data"), "PYTHONPATH": str(ROOT)}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        port = free_port()
        procs.append(subprocess.Popen([EXE, "serve", "--port", str(port)], env=env, cwd=ROOT,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        url = f"http://127.0.0.1:{port}/api/v1"
        wait_ready(url)
        logs = [base_dir / f"worker-{i}.log" for i in range(workers)]
        for log in logs:
            procs.append(subprocess.Popen([EXE, "worker", "--concurrency", "1"], env=env, cwd=ROOT,
                                          stdout=open(log, "wb"), stderr=subprocess.STDOUT))  # noqa: SIM115
        for log in logs:
            deadline = time.monotonic() + 60
            while "ready." not in (log.read_text(errors="replace") if log.exists() else ""):
                if time.monotonic() > deadline:
                    raise SystemExit(f"worker did not start: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        for p in procs:
            _stop(p)
        _stop(redis_proc)
        stop_postgres(pg, pg_proc)
        shutil.rmtree(base_dir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--large", type=int, default=10)
    ap.add_argument("--large-packets", type=int, default=150_000)
    ap.add_argument("--mode", default="embedded,celery")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    small = small_captures(args.small)
    large = large_captures(args.large, args.large_packets)
    mb = sum(len(b) for _, b in large) / 1e6
    print(f"== batch throughput: {len(small)} small captures ({sum(len(b) for _, b in small) / 1e6:.1f} MB), "
          f"{len(large)} large ({mb:.0f} MB, {args.large_packets:,} packets each)")
    for mode in args.mode.split(","):
        ctx = served(1) if mode == "embedded" else celery_service(2)
        with ctx as handle:
            base = handle[0] if isinstance(handle, tuple) else handle
            run_batch(base, small_captures(len(small) + 3)[len(small):])  # warm up (other bytes: no dedup)
            for label, caps in (("small", small), ("large", large)):
                seconds = run_batch(base, caps)
                print(f"  {mode:9} {label:5} {len(caps):4} captures in {seconds:7.1f} s: "
                      f"{60 * len(caps) / seconds:8.1f} captures/minute")


if __name__ == "__main__":
    main()
