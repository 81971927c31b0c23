"""Service benchmark: upload-to-results time for a ~100 MB capture next to ``ackreplay score`` on the
same file, and p50/p99 latency of the scores and series endpoints under 50 concurrent clients.

Starts ``ackreplay serve`` (embedded: SQLite, local store, in-process worker) on a loopback port in a
temporary directory; every request goes to 127.0.0.1 and the load loop is bounded (``--requests`` per
client). Usage: ``python -m bench.service [--packets N] [--clients 50] [--requests 20]``.

``--shapes bulk10k,small100k,small1m`` instead runs the shapes of many flows through the shared deployment
(PostgreSQL, Redis, two Celery workers: ``bench.service_scale``), whole-run time against ``ackreplay score`` and the
workers' peak RSS against their memory budget (``--budget MB``, ``--lock FILE``).

``--soak SECONDS`` instead runs the soak of ``bench.soak``: ``--clients`` clients mixing uploads, runs and
reads for that long, with errors, p50/p99 and the API processes' memory at start and end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.make_capture import ensure
from bench.runner import measure

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


FAILURES: list[str] = []


async def load(url: str, clients: int, requests: int) -> list[float]:
    """``clients`` concurrent loops of ``requests`` GETs each; a transport error is retried once and counted."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one_client() -> None:
            for _ in range(requests):
                t0 = time.perf_counter()
                try:
                    r = await client.get(url)
                except httpx.TransportError as exc:
                    FAILURES.append(type(exc).__name__)
                    r = await client.get(url)
                r.raise_for_status()
                latencies.append(time.perf_counter() - t0)

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return latencies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--packets", type=int, default=820_000, help="820 k packets ≈ 100 MB at snaplen 128")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=20, help="requests per client and endpoint")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="API processes")
    ap.add_argument("--soak", type=float, default=None, metavar="SECONDS", help="run the soak for this long instead")
    ap.add_argument("--warmup", type=float, default=None, metavar="SECONDS",
                    help="soak: warm-up before memory is sampled (default: a tenth of the soak, at least 20 s)")
    ap.add_argument("--shapes", default=None, help="run these shapes of many flows instead (bench.service_scale)")
    ap.add_argument("--budget", type=int, default=1024, help="--shapes: the workers' memory budget, MB")
    ap.add_argument("--lock", default=None, help="--shapes: hold an exclusive lock on this file while measuring")
    ap.add_argument("--timeline", action="store_true", help="--shapes: print each task's span on its worker")
    args = ap.parse_args()
    if args.shapes:
        from bench.service_scale import run_shapes

        run_shapes(args.shapes.split(","), args.budget, args.lock, args.timeline)
        return
    if args.soak:
        soak_only(args)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    cap = OUT / f"service-{args.packets}.pcap"
    ensure(cap, args.packets)
    exe = str(Path(sys.executable).with_name("ackreplay"))
    measure([exe, "score", str(cap), "-f", "csv"])  # warm numba's cache
    cli = measure([exe, "score", str(cap), "-f", "csv"])

    with served(args.workers) as (base, _server):
        t0 = time.perf_counter()
        with open(cap, "rb") as fh:
            body = httpx.post(f"{base}/captures", files={"file": (cap.name, fh)}, timeout=600).json()
        t_upload = time.perf_counter() - t0
        run_id = body["run_id"]
        while (run := httpx.get(f"{base}/runs/{run_id}", timeout=30).json())["status"] not in ("succeeded",
                                                                                             "failed"):
            time.sleep(0.05)
        t_total = time.perf_counter() - t0
        assert run["status"] == "succeeded", run
        cid = body["capture"]["id"]
        flow = httpx.get(f"{base}/runs/{run_id}/scores", params={"limit": 1}, timeout=30).json()["items"][0]
        scores_url = f"{base}/runs/{run_id}/scores?flow={flow['flow_id']}"
        series_url = f"{base}/runs/{run_id}/captures/{cid}/flows/{flow['flow_id']}/series?points=2000"
        for url in (scores_url, series_url):  # warm every API process before timing
            asyncio.run(load(url, args.clients, 2))
        lat_scores = asyncio.run(load(scores_url, args.clients, args.requests))
        lat_series = asyncio.run(load(series_url, args.clients, args.requests))

    size = cap.stat().st_size / 1e6
    print(f"capture {cap.name}: {size:.0f} MB")
    print(f"ackreplay score (process, embedded): {cli.seconds:.2f} s")
    print(f"service upload-to-results: {t_total:.2f} s (upload {t_upload:.2f} s; ingest "
          f"{run['timings_s']['ingest']:.2f} s, replay {run['timings_s']['replay']:.2f} s)")
    print(f"ratio service / CLI: {t_total / cli.seconds:.2f} (target <= 1.5)")
    for name, lat in (("scores", lat_scores), ("series (2000 points)", lat_series)):
        print(f"GET {name}: {len(lat)} requests from {args.clients} concurrent clients, {args.workers} API "
              "processes: "
              f"p50 {1e3 * statistics.median(lat):.1f} ms, p99 {1e3 * percentile(lat, 0.99):.1f} ms")
    print(f"transport errors retried: {len(FAILURES)} {sorted(set(FAILURES))}")


def wait_ready(base: str, timeout: float = 60) -> None:
    """Poll ``{base}/ready`` (``base`` ends in ``/api/v1``) until it answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base}/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.2)


@contextmanager
def served(workers: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``ackreplay serve`` (embedded: SQLite, local store, in-process worker) with ``workers`` API processes on
    a free loopback port, in a temporary data directory; its API base URL once it is ready."""
    exe = str(Path(sys.executable).with_name("ackreplay"))
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        # one client starts runs as fast as the service takes them: the owner's run rate (20 at once, then 60 a
        # minute) would answer most with 429 and measure the limit instead of the service
        env = {**os.environ, "ACKREPLAY_DATA_DIR": data, "ACKREPLAY_RUN_RATE_PER_MINUTE": "none"}
        for k in ("DATABASE_URL", "REDIS_URL"):
            env.pop(k, None)
        server = subprocess.Popen([exe, "serve", "--port", str(port), "--workers", str(workers)], env=env,
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}/api/v1"
        try:
            wait_ready(base)
            yield base, server
        finally:
            server.terminate()
            server.wait(timeout=30)


def soak_only(args: argparse.Namespace) -> None:
    from bench.soak import run_soak

    with served(args.workers) as (base, server):
        print(f"{args.workers} API processes (embedded: each runs its own worker thread), SQLite, local store")
        print(run_soak(base, server.pid, args.clients, args.soak, args.warmup))


if __name__ == "__main__":
    main()
