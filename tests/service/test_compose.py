"""docker-compose.yml cannot drift from the code: each service's command line runs here, against the
test's real PostgreSQL and Redis (Docker itself cannot run on this machine)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import ROOT, SHARED
from tests.service.harness import fresh_database
from tests.service.http import wait_ready
from tests.service.test_e2e_celery import stop

pytestmark = pytest.mark.services
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_compose_file_describes_the_deployment():
    services = COMPOSE["services"]
    assert set(services) == {"postgres", "redis", "api", "worker"}
    pg = services["postgres"]
    assert "healthcheck" in pg and "pgdata:/var/lib/postgresql/data" in pg["volumes"]
    assert "--appendonly" in services["redis"]["command"]
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert {"DATABASE_URL", "REDIS_URL", "ACKREPLAY_STORAGE_URL"} <= set(env)
        assert services[name]["volumes"] == ["store:/data"]
    assert "ackreplay migrate" in " ".join(services["api"]["command"])


def test_each_service_command_runs_against_real_servers(postgres_server, redis_server, tmp_path):
    port = free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    compose_env = COMPOSE["services"]["api"]["environment"]
    env.update({k: str(v) for k, v in compose_env.items()})
    env.update({"DATABASE_URL": fresh_database(postgres_server.url), "REDIS_URL": redis_server.url,
                "ACKREPLAY_STORAGE_URL": str(tmp_path / "store"), "ACKREPLAY_DATA_DIR": str(tmp_path)})
    api_cmd = [a.replace("--port 8000", f"--port {port}").replace("0.0.0.0", "127.0.0.1")
               for a in COMPOSE["services"]["api"]["command"]]
    api = subprocess.Popen(api_cmd, env=env, cwd=ROOT, stdout=open(tmp_path / "api.log", "wb"),  # noqa: SIM115
                           stderr=subprocess.STDOUT)
    worker = subprocess.Popen(COMPOSE["services"]["worker"]["command"], env=env, cwd=ROOT,
                              stdout=open(tmp_path / "worker.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        wait_ready(f"http://127.0.0.1:{port}", log=tmp_path / "api.log")
        sample = SHARED / "generated" / "s08_cubic_1f_2M_rtt200_buf1bdp.pcap"
        with open(sample, "rb") as fh:
            body = httpx.post(f"{base}/captures", files={"file": (sample.name, fh)}, timeout=60).json()
        deadline = time.monotonic() + 300
        while (run := httpx.get(f"{base}/runs/{body['run_id']}", timeout=10).json())["status"] not in (
                "succeeded", "failed"):
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.3)
        assert run["status"] == "succeeded"
    finally:
        stop(api)
        stop(worker)


def test_files_the_deployment_refers_to_exist():
    """docker-compose.yml, the Dockerfile and the README point to docs and files that are there."""
    import re

    for name in ("docker-compose.yml", "Dockerfile", "README.md", "docs/deployment.md", "docs/service.md"):
        text = (ROOT / name).read_text()
        refs = set(re.findall(r"\b((?:docs|tests|bench|scripts)/[\w./-]+\.(?:md|py|sh|png))", text))
        assert refs or name != "docker-compose.yml"
        missing = sorted(r for r in refs if not (ROOT / r).exists())
        assert not missing, f"{name} refers to missing files: {missing}"
