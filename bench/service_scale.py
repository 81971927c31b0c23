"""The service at scale: captures of many flows uploaded to the shared deployment (PostgreSQL, Redis, two Celery
workers), whole-run time next to ``ackreplay score`` on the same file and the workers' peak RSS next to their
memory budget.

Shapes (``bench.make_capture``, written once into bench/out): ``bulk10k`` 10 000 bulk flows of 200 packets (2 M
packets, every flow replayed); ``small100k`` 100 000 flows of 2-4 packets; ``small1m`` 1 000 000 flows of 2-4
packets (~370 MB; such flows have no vantage replay accepts: their run is ingest, flow storage and planning).
PostgreSQL and Redis are started as the tests start them (``tests.services``) in temporary directories; the API
(``ackreplay serve``, one process) and the workers (``ackreplay worker --concurrency 1``, two) on loopback.
Whole-run time: from the upload's first byte to the run's end as ``GET /runs/{id}`` says it (target <= 1.5x the
CLI's). Peak RSS: the most any worker process reached (``VmHWM``, the pool's child processes included), and
above an idle worker's (what the budget bounds, as ``--memory-budget`` does the CLI's above the interpreter's),
against ``ACKREPLAY_INGEST_MEMORY_BUDGET_MB`` (1024 by default). ``--lock FILE`` holds an exclusive lock on FILE (as
``flock FILE command`` does) for each shape's measurement. ``--timeline`` prints where the run's time went, from its
rows: when the run was made (the upload received), each task's span and worker, the run's end. The status is polled
every 0.1 s through one HTTP client, as a client keeping its connection does (a new client per poll cost about 20 ms
of the machine's CPU each, taken from the workers).

Usage: ``python -m bench.service_scale [--shapes bulk10k,small100k,small1m] [--budget MB] [--lock FILE] [--timeline]``.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from bench.make_capture import ensure
from bench.runner import measure
from bench.service import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
EXE = str(Path(sys.executable).with_name("ackreplay"))
#: shape → (flows, fewest and most packets a flow; None: the bulk shape of 2 M packets)
SHAPES: dict[str, tuple[int, tuple[int, int] | None]] = {
    "bulk10k": (10_000, None), "small100k": (100_000, (2, 4)), "small1m": (1_000_000, (2, 4))}
BULK_PACKETS = 2_000_000


def capture(shape: str) -> Path:
    flows, per_flow = SHAPES[shape]
    if per_flow is None:
        path = OUT / f"many-{BULK_PACKETS / 1e6:g}M-{flows}f.pcap"
        ensure(path, BULK_PACKETS, flows)
    else:
        path = OUT / f"backbone-{flows}f-{per_flow[0]}-{per_flow[1]}.pcap"
        ensure(path, 0, flows, packets_per_flow=per_flow)
    return path


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def peak_rss_mb(pids: list[int]) -> float:
    """The largest ``VmHWM`` (peak resident set) among ``pids`` and their descendants, MB."""
    peak = 0.0
    for root in pids:
        for p in descendants(root):
            try:
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            except OSError:
                continue
    return peak


@contextmanager
def deployment(budget_mb: int) -> Iterator[tuple[str, list[int], str]]:
    """PostgreSQL, Redis, the API and two workers; the API's base URL, the workers' pids and the database's URL."""
    sys.path.insert(0, str(ROOT))
    from tests.services import start_postgres, start_redis, stop_postgres, stop_server

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ackreplay-bench-")))
        tmp.chmod(0o755)  # (PostgreSQL runs as its own user when this runs as root)
        pg, pg_proc = start_postgres(tmp / "pg")
        stack.callback(stop_postgres, pg, pg_proc)
        redis, redis_proc = start_redis(tmp / "redis")
        stack.callback(stop_server, redis_proc)
        env = {**os.environ, "DATABASE_URL": pg.url, "REDIS_URL": redis.url, "ACKREPLAY_DATA_DIR": str(tmp / "data"),
               "ACKREPLAY_STORAGE_URL": f"file://{tmp / 'store'}", "ACKREPLAY_INGEST_MEMORY_BUDGET_MB": str(budget_mb),
               "ACKREPLAY_MAX_UPLOAD_BYTES": str(4 << 30)}
        port = free_port()
        procs = [subprocess.Popen([EXE, "serve", "--port", str(port), "--workers", "1"], env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        base = f"http://127.0.0.1:{port}/api/v1"
        try:
            wait_ready(base)
            procs += [subprocess.Popen([EXE, "worker", "--concurrency", "1"], env=env, cwd=ROOT,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
            time.sleep(5)  # (the workers connect to the broker)
            yield base, [p.pid for p in procs[1:]], pg.url
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=60)


def run_once(base: str, path: Path) -> tuple[float, dict, float]:
    """Upload ``path`` and wait for its run; the whole run's seconds, its final status and when it began (epoch)."""
    with httpx.Client(timeout=1800) as client:  # (one client: a new one per poll costs ~20 ms of CPU, its TLS set-up)
        began = time.time()
        t0 = time.perf_counter()
        with open(path, "rb") as fh:
            body = client.post(f"{base}/captures", files={"file": (path.name, fh)}).json()
        while (run := client.get(f"{base}/runs/{body['run_id']}").json())["status"] not in ("succeeded", "failed"):
            time.sleep(0.1)
        return time.perf_counter() - t0, run, began


def timeline(db_url: str, run_id: str, began: float) -> list[str]:
    """The run's time line from its rows, seconds since the upload's first byte: the run made (the upload
    received), each task's span on its worker (a replay task's from its end and its seconds; an ingest's from its
    claim), the run's end."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            run = conn.execute(text("select created_at, finished_at from runs where id = :r"), {"r": run_id}).one()
            tasks = conn.execute(text("select kind, chunk, worker, updated_at, seconds, json_array_length(flow_ids) "
                                      "from tasks where run_id = :r order by "
                                      "kind, chunk"), {"r": run_id}).all()
    finally:
        engine.dispose()
    made, finished = run.created_at.timestamp() - began, run.finished_at.timestamp() - began
    lines = [f"    run made {made:6.2f} s, finished {finished:6.2f} s"]
    for kind, chunk, worker, updated, seconds, flows in tasks:
        at = updated.timestamp() - began
        lo, hi = (at, at + (seconds or 0)) if kind == "ingest" else (at - (seconds or 0), at)
        pid = (worker or "").split(":")[-1]
        lines.append(f"    {kind:7s}{chunk:3d} {flows:5d} flows  {lo:6.2f}-{hi:6.2f} s  worker {pid}")
    return lines


@contextmanager
def locked(path: str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_shapes(shapes: list[str], budget: int, lock: str | None, show_timeline: bool = False) -> None:
    """Measure each shape (:data:`SHAPES`) and print its figures."""
    OUT.mkdir(parents=True, exist_ok=True)
    for shape in shapes:
        if shape not in SHAPES:
            raise SystemExit(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
        path = capture(shape)
        with locked(lock):
            measure([EXE, "warmup"])
            cli = measure([EXE, "score", str(path), "-f", "csv", "--memory-budget", str(budget)])
            with deployment(budget) as (base, workers, db_url):
                idle = peak_rss_mb(workers)
                seconds, run, began = run_once(base, path)
                peak = peak_rss_mb(workers)
                steps = timeline(db_url, run["id"], began) if show_timeline else []
        (cap,) = run["captures"]
        print(f"{shape}: {path.name} ({path.stat().st_size / 1e6:.0f} MB), run {run['status']}, "
              f"{cap['skipped_total']} flows skipped")
        print(f"  ackreplay score: {cli.seconds:.1f} s, peak RSS {cli.peak_rss_mb:.0f} MB")
        print(f"  service whole run: {seconds:.1f} s (ingest {run['timings_s']['ingest']:.1f} s, replay "
              f"{run['timings_s']['replay']:.1f} s of task time); ratio {seconds / cli.seconds:.2f} (target <= 1.5)")
        print(f"  worker peak RSS: {peak:.0f} MB ({peak - idle:.0f} MB above an idle worker's {idle:.0f} MB) "
              f"against a budget of {budget} MB; {run['progress']['tasks_total'] - 1} replay tasks")
        print("\n".join(steps)) if steps else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--budget", type=int, default=1024, help="the workers' memory budget, MB")
    ap.add_argument("--lock", default=None, help="hold an exclusive lock on this file while measuring a shape")
    ap.add_argument("--timeline", action="store_true", help="print each task's span on its worker")
    args = ap.parse_args()
    run_shapes(args.shapes.split(","), args.budget, args.lock, args.timeline)


if __name__ == "__main__":
    main()
