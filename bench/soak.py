"""Soak of the service: ``clients`` concurrent clients for ``seconds``, mixing uploads, runs, reads and
deletions, on loopback; errors (target 0), p50/p99 per kind of request, and the resident memory of the API
processes (each embedded one also runs the worker), sampled every 2 s: the median of the soak's first fifth against
the median of its last fifth (target: no growth beyond 10 %), and the peak. One sample at each end would
measure whichever capture the worker happened to be replaying at that instant.

The data set is held steady, as on a service in use: beyond ``LIVE`` captures, each upload deletes the
oldest (with its runs). A soak that only ever adds captures measures the data set's growth instead: its
listings, leaderboards and database caches grow with it.

Run through ``python -m bench.service --soak SECONDS`` (it starts the server); the request loops are
bounded by the deadline and stop by themselves.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

WARMUP_CAPTURE = Path(__file__).resolve().parents[1] / "cli" / "data" / "warmup.pcap"
LIVE = 40  # captures kept; an upload beyond deletes the oldest
#: How often each kind of request is chosen (uploads and runs each start ingest/replay work).
MIX = {"upload": 3, "run": 3, "list": 14, "status": 20, "scores": 20, "series": 20, "document": 10, "leaderboard": 10}


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    captures: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    run_capture: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)  # captures deleted (their runs answer 404 from then on)
    deletes: int = 0

    def forget(self, capture: str) -> None:
        self.deleted.add(capture)
        self.runs = [r for r in self.runs if self.run_capture.get(r) != capture]


def process_tree_rss_mb(pid: int) -> dict[int, float]:
    """Resident memory (MB) of ``pid`` and its descendants, from /proc."""
    out: dict[int, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        out[p] = rss / 1024
        todo += [int(c) for c in children]
    return out


async def _request(client: httpx.AsyncClient, kind: str, base: str, tally: Tally, rng: random.Random) -> None:
    run = rng.choice(tally.runs) if tally.runs else None
    capture_of_run = tally.run_capture.get(run or "")
    if kind == "upload":
        if len(tally.captures) >= LIVE:
            oldest = tally.captures.pop(0)
            tally.forget(oldest)
            d = await client.delete(f"{base}/captures/{oldest}")
            tally.deletes += 1
            if d.status_code != 204:
                tally.errors.append(f"delete {d.status_code} {d.text[:120]}")
        payload = WARMUP_CAPTURE.read_bytes() + rng.randbytes(16)  # distinct bytes: a new capture each time
        r = await client.post(f"{base}/captures", files={"file": ("soak.pcap", payload)})
        if r.status_code == 201:
            cid = r.json()["capture"]["id"]
            tally.captures.append(cid)
            tally.runs.append(r.json()["run_id"])
            tally.run_capture[r.json()["run_id"]] = cid
    elif kind == "run" and tally.captures:
        cid = rng.choice(tally.captures)
        r = await client.post(f"{base}/runs", json={"captures": [cid],
                                                     "estimators": ["re", {"name": "abse", "parameters": {"N": 12}}]})
        if r.status_code == 202:
            tally.runs.append(r.json()["run_id"])
            tally.run_capture[r.json()["run_id"]] = cid
        elif r.status_code == 404 and cid in tally.deleted:
            return  # deleted by another client meanwhile: the API answered as it should
    elif kind == "list":
        r = await client.get(f"{base}/captures", params={"limit": 20})
    elif kind in ("status", "scores", "document", "series") and run:
        if kind == "status":
            r = await client.get(f"{base}/runs/{run}")
        elif kind == "scores":
            r = await client.get(f"{base}/runs/{run}/scores", params={"limit": 50})
        elif kind == "document":
            r = await client.get(f"{base}/runs/{run}/document")
        else:
            scores = await client.get(f"{base}/runs/{run}/scores", params={"limit": 1})
            items = scores.json().get("items") if scores.status_code == 200 else None
            if not items:
                return  # the run has no results yet
            item = items[0]
            r = await client.get(f"{base}/runs/{run}/captures/{item['capture_id']}/flows/{item['flow_id']}/series",
                                 params={"points": 500})
    elif kind == "leaderboard" and run:
        r = await client.get(f"{base}/leaderboard", params={"runs": run})
    else:
        return
    if r.status_code == 404 and capture_of_run in tally.deleted:
        return  # the run's capture was deleted by another client meanwhile: 404 is the right answer
    if r.status_code >= 400:
        tally.errors.append(f"{kind} {r.status_code} {r.text[:120]}")


async def soak(base: str, clients: int, seconds: float, seed: int = 1) -> Tally:
    tally = Tally()
    kinds, weights = zip(*MIX.items(), strict=True)
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=clients)) as client:

        async def one(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            while time.monotonic() < deadline:
                kind = rng.choices(kinds, weights)[0]
                t0 = time.perf_counter()
                try:
                    await _request(client, kind, base, tally, rng)
                except httpx.HTTPError as exc:
                    tally.errors.append(f"{kind} {type(exc).__name__}")
                    continue
                tally.latencies[kind].append(time.perf_counter() - t0)

        await asyncio.gather(*(one(i) for i in range(clients)))
    return tally


def report(tally: Tally, clients: int, seconds: float, rss_start: dict[int, float], rss_end: dict[int, float]) -> str:
    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]

    everything = [x for xs in tally.latencies.values() for x in xs]
    lines = [f"soak: {clients} clients for {seconds:.0f} s on loopback: {len(everything)} requests "
             f"({len(everything) / seconds:.1f}/s), {len(tally.errors)} errors (target 0)"]
    for kind in MIX:
        xs = tally.latencies.get(kind, [])
        if xs:
            lines.append(f"  {kind:12} {len(xs):6} requests  p50 {1e3 * statistics.median(xs):7.1f} ms  "
                         f"p99 {1e3 * pct(xs, 0.99):8.1f} ms")
    lines.append(f"  all          {len(everything):6} requests  p50 {1e3 * statistics.median(everything):7.1f} ms  "
                 f"p99 {1e3 * pct(everything, 0.99):8.1f} ms")
    lines.append(f"  captures uploaded {len(tally.latencies.get('upload', []))}, deleted {tally.deletes} (at most "
                 f"{LIVE} kept), runs started {len(tally.run_capture)}")
    for pid in sorted(rss_start):
        end = rss_end.get(pid)
        growth = f"{100 * (end / rss_start[pid] - 1):+.1f} %" if end else "exited"
        lines.append(f"  RSS pid {pid}: median {rss_start[pid]:.0f} MB over the first fifth → {end or 0:.0f} MB over "
                     f"the last fifth ({growth}; target ≤ +10 %)")
    for e in sorted(set(tally.errors))[:10]:
        lines.append(f"  error: {e}")
    return "\n".join(lines)


def run_soak(base: str, server_pid: int, clients: int, seconds: float, warmup: float | None = None) -> str:
    """Warm up (by default a tenth of the time, at least 20 s), then soak while a thread samples memory
    every 2 s."""
    import threading

    warm = warmup if warmup is not None else max(20.0, seconds / 10)
    asyncio.run(soak(base, clients, warm, seed=7))
    samples: list[dict[int, float]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(2.0):
            samples.append(process_tree_rss_mb(server_pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    tally = asyncio.run(soak(base, clients, seconds))
    stop.set()
    sampler.join()
    fifth = max(1, len(samples) // 5)
    pids = sorted(set().union(*samples)) if samples else []

    def median(part: list[dict[int, float]], pid: int) -> float:
        xs = [s[pid] for s in part if pid in s]
        return statistics.median(xs) if xs else 0.0

    rss_start = {pid: median(samples[:fifth], pid) for pid in pids}
    rss_end = {pid: median(samples[-fifth:], pid) for pid in pids}
    peaks = {pid: max(s.get(pid, 0.0) for s in samples) for pid in pids}
    text = report(tally, clients, seconds, rss_start, rss_end)
    return text + "\n  RSS peaks: " + ", ".join(f"pid {p} {peaks[p]:.0f} MB" for p in pids) + \
        f" ({len(samples)} samples)"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(f"run it through `python -m bench.service --soak SECONDS` ({os.path.basename(__file__)})")
