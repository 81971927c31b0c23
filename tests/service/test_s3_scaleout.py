"""Scale-out on a real object store: an S3-compatible server (moto's, started here on loopback), the API and
two Celery workers as separate processes, each with its own S3 client, sharing PostgreSQL and Redis. A batch
of many captures completes with every result stored exactly once, and the objects are in the bucket."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import dpkt
import httpx
import pytest
import s3fs
from sqlalchemy import func, select

from ackreplay.core.db import session_scope
from ackreplay.core.orm import Result, RunCapture, Task
from ackreplay.core.task_scores import SCORES_SUFFIX
from tests.conftest import ROOT
from tests.service.harness import client, configured, fresh_database, wait_run
from tests.service.test_e2e_celery import start_worker, stop
from tests.service.test_e2e_celery import wait_ready as wait_worker
from tests.services import free_port

pytestmark = [pytest.mark.services, pytest.mark.slow]
SAMPLE = ROOT / "samples" / "sample.pcap"
BUCKET = "ackreplay-test"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def s3_server(tmp_path) -> Iterator[str]:
    exe = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
    port = free_port()
    log = tmp_path / "moto.log"
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=open(log, "wb"),  # noqa: SIM115
                            stderr=subprocess.STDOUT, env={**os.environ, **CREDENTIALS})
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(endpoint, timeout=2)
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.2)
    try:
        yield endpoint
    finally:
        stop(proc)


def _slices(n: int) -> list[tuple[str, bytes]]:
    """``n`` distinct real captures: the sample's first k packets for growing k."""
    with open(SAMPLE, "rb") as fh:
        reader = dpkt.pcap.Reader(fh)
        packets = list(reader)
        snaplen, link = reader.snaplen, reader.datalink()
    out = []
    for i in range(n):
        buf = io.BytesIO()
        writer = dpkt.pcap.Writer(buf, snaplen=snaplen, linktype=link)
        for ts, frame in packets[: 1500 + 400 * i]:
            writer.writepkt(frame, ts)
        out.append((f"slice{i:02d}.pcap", buf.getvalue()))
    return out


def test_a_batch_on_s3_with_two_workers_stores_every_result_exactly_once(s3_server, postgres_server, redis_server,
                                                                          tmp_path):
    options = {"endpoint_url": s3_server, "use_listings_cache": False}
    fs = s3fs.S3FileSystem(key="test", secret="test", endpoint_url=s3_server)
    fs.mkdir(BUCKET)
    env = {"DATABASE_URL": fresh_database(postgres_server.url), "REDIS_URL": redis_server.url,
           "ACKREPLAY_STORAGE_URL": f"s3://{BUCKET}/store", "ACKREPLAY_STORAGE_OPTIONS": json.dumps(options),
           "ACKREPLAY_DATA_DIR": str(tmp_path / "data"), "ACKREPLAY_REPLAY_BATCH_FLOWS": "1"}
    os.environ.update(CREDENTIALS)
    with configured(env):
        api = client()  # migrates
        assert api.get("/api/v1/ready").json()["checks"]["storage"] == "ok"
        proc_env = {**os.environ, **env, **CREDENTIALS, "PYTHONPATH": str(ROOT)}
        logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
        workers = [start_worker(proc_env, log) for log in logs]
        try:
            for log in logs:
                wait_worker(log)
            captures = _slices(12)
            archive = io.BytesIO()
            with zipfile.ZipFile(archive, "w") as zf:
                for name, data in captures:
                    zf.writestr(name, data)
            r = api.post("/api/v1/batches", files=[("files", ("slices.zip", archive.getvalue()))],
                         data={"truth": "bottleneck=10Mbit,shared_by=all"})
            assert r.status_code == 202, r.text
            batch = r.json()
            assert len(batch["captures"]) == 12 and batch["rejected"] == []
            run = wait_run(api, batch["run_id"], timeout=600)
            assert run["status"] == "succeeded", run
            estimators = len(run["estimators"])
            with session_scope() as s:
                rcs = list(s.scalars(select(RunCapture).where(RunCapture.run_id == batch["run_id"])))
                assert len(rcs) == 12 and {rc.status for rc in rcs} == {"succeeded"}
                results = s.execute(select(Result.capture_id, Result.flow_id, Result.estimator)
                                    .where(Result.run_id == batch["run_id"])).all()
                assert len(results) == len(set(results))  # exactly once
                replayed = s.scalar(select(func.count()).select_from(Task).where(
                    Task.run_id == batch["run_id"], Task.kind == "replay", Task.status == "done"))
                flows = {(c, f) for c, f, _ in results}
                assert len(results) == len(flows) * estimators and len(flows) == replayed >= 24
            # every flow's summary is read from the object store (no database row per flow)
            assert sum(api.get(f"/api/v1/captures/{rc.capture_id}/flows").json()["total"] for rc in rcs) >= 36
            for log in logs:  # both workers took part
                assert "ackreplay.replay" in log.read_text(errors="replace"), log.read_text()[-2000:]
            objects = fs.find(f"{BUCKET}/store")
            assert sum(k.endswith("/capture") for k in objects) == 12
            series = [k for k in objects if "/series/" in k or k.startswith(f"{BUCKET}/store/series/")]
            # each replay task's series and its score columns beside them (core.task_scores)
            assert sum(k.endswith(SCORES_SUFFIX) for k in series) == len(series) - replayed == replayed
            # every bulk flow on the board when asked; by default only those the estimators can be compared on
            # (scoring.comparable: the sample's short flows have too little network-limited time for the filters)
            board = api.get(f"/api/v1/batches/{batch['batch_id']}/scoreboard",
                            params={"include_incomparable": "true"}).json()
            assert board["captures"] == 12 and board["flows"] >= 12
            comparable = api.get(f"/api/v1/batches/{batch['batch_id']}/scoreboard").json()
            assert 0 < comparable["flows"] < board["flows"]
            # the series are read back from S3
            rc = rcs[0]
            fid = max(f for c, f in flows if c == rc.capture_id)  # the bulk transfer (flow 0: the control one)
            series = api.get(f"/api/v1/runs/{batch['run_id']}/captures/{rc.capture_id}/flows/{fid}/series")
            assert series.status_code == 200 and series.json()["rows"] > 10
        finally:
            for w in workers:
                stop(w)
