"""A service safe to expose: storage quotas and archive limits (413 with stable codes, nothing kept of a
rejected upload), open mode only on loopback unless asked for, and the first token adopting what was
uploaded in open mode."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app as cli_app
from ackreplay.core.owners import open_mode_allowed
from tests.conftest import ROOT, SHARED
from tests.service.harness import client, configured, upload, wait_run
from tests.services import free_port

SAMPLE = ROOT / "samples" / "sample.pcap"
S08 = SHARED / "generated" / "s08_cubic_1f_2M_rtt200_buf1bdp.pcap"


def _stored_files(data: Path) -> list[str]:
    store = data / "store"
    return sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file() and "_ready" not in p.parts)


def test_a_small_quota_fills_rejects_with_413_and_deleting_frees_it(tmp_path):
    quota = max(SAMPLE.stat().st_size, S08.stat().st_size) + 1000
    data = tmp_path / "data"
    with configured({"ACKREPLAY_DATA_DIR": str(data), "ACKREPLAY_QUOTA_BYTES": str(quota)}):
        c = client()
        assert c.get("/api/v1/quota").json() == {"owner": "local", "used_bytes": 0, "captures": 0,
                                                 "limit_bytes": quota, "remaining_bytes": quota}
        first = upload(c, SAMPLE).json()
        wait_run(c, first["run_id"])
        q = c.get("/api/v1/quota").json()
        assert q["used_bytes"] == SAMPLE.stat().st_size and q["remaining_bytes"] == quota - q["used_bytes"]
        before = _stored_files(data)
        r = upload(c, S08)
        assert r.status_code == 413 and r.json()["error"] == "quota_exceeded", r.text
        assert c.get("/api/v1/captures").json()["total"] == 1 and _stored_files(data) == before  # nothing kept
        assert c.delete(f"/api/v1/captures/{first['capture']['id']}").status_code == 204
        assert c.get("/api/v1/quota").json()["used_bytes"] == 0
        ok = upload(c, S08)
        assert ok.status_code == 201, ok.text
        wait_run(c, ok.json()["run_id"])
        # a batch past the quota is rejected whole: nothing of it is kept
        before = _stored_files(data)
        r = c.post("/api/v1/batches", files=[("files", ("a.pcap", SAMPLE.read_bytes()))])
        assert r.status_code == 413 and r.json()["error"] == "quota_exceeded"
        assert _stored_files(data) == before and c.get("/api/v1/captures").json()["total"] == 1
        # an owner's own quota overrides the default
        res = CliRunner().invoke(cli_app, ["quota", "set", "local", "10MB"])
        assert res.exit_code == 0 and "quota 10000000 bytes" in res.stdout
        assert c.get("/api/v1/quota").json()["limit_bytes"] == 10_000_000
        bad = CliRunner().invoke(cli_app, ["quota", "set", "local", "lots"])
        assert bad.exit_code == 2 and "invalid_size" in bad.stderr


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buf.getvalue()


def test_an_archive_decompressing_past_its_limit_is_rejected_while_streaming(tmp_path):
    size = SAMPLE.stat().st_size
    data = tmp_path / "data"
    with configured({"ACKREPLAY_DATA_DIR": str(data), "ACKREPLAY_MAX_ARCHIVE_BYTES": str(2 * size + 10)}):
        c = client()
        # a bomb: 64 MiB of zeros compress to ~64 kB; the limit stops it long before 64 MiB are written
        bomb = _zip({"a.pcap": SAMPLE.read_bytes(), "zeros.pcap": b"\0" * (64 << 20)})
        assert len(bomb) < 1 << 20
        r = c.post("/api/v1/batches", files=[("files", ("bomb.zip", bomb))])
        assert r.status_code == 413 and r.json()["error"] == "archive_too_large", r.text
        assert "bomb.zip" in r.json()["detail"]
        assert c.get("/api/v1/captures").json()["total"] == 0 and _stored_files(data) == []
        fits = _zip({"a.pcap": SAMPLE.read_bytes(), "notes.txt": b"not a capture"})
        r = c.post("/api/v1/batches", files=[("files", ("ok.zip", fits))])
        assert r.status_code == 202, r.text
        assert [x["error"] for x in r.json()["rejected"]] == ["unsupported_media_type"]
        wait_run(c, r.json()["run_id"])


@pytest.mark.parametrize(("host", "auth", "flag", "mode", "warns"), [
    ("127.0.0.1", "auto", False, "auto", False),
    ("localhost", "auto", False, "auto", False),
    ("::1", "auto", False, "auto", False),
    ("0.0.0.0", "auto", False, "required", False),
    ("192.0.2.10", "auto", False, "required", False),
    ("0.0.0.0", "auto", True, "open", True),
    ("0.0.0.0", "open", False, "open", True),
    ("127.0.0.1", "open", False, "open", False),
    ("0.0.0.0", "required", False, "required", False),
])
def test_open_mode_only_on_loopback_unless_asked(host, auth, flag, mode, warns):
    got, warning = open_mode_allowed(host, auth, flag)
    assert got == mode and (warning is not None) == warns


def _serve(tmp_path: Path, *args: str, host: str = "0.0.0.0") -> tuple[subprocess.Popen[bytes], int, Path]:
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKREPLAY_") and k not in ("DATABASE_URL",
                                                                                                "REDIS_URL")}
    env["ACKREPLAY_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([str(Path(sys.executable).with_name("ackreplay")), "serve", "--host", host,
                             "--port", str(port), *args], env=env, cwd=tmp_path, stdout=open(log, "wb"),  # noqa: SIM115
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).status_code == 200:
                return proc, port, log
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def test_serving_on_all_addresses_requires_tokens_unless_open_is_given(tmp_path):
    proc, port, log = _serve(tmp_path)
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/api/v1/captures", timeout=10)
        assert r.status_code == 401 and r.json()["error"] == "token_required"
        assert "API tokens are required" in log.read_text()
    finally:
        _stop(proc)
    proc, port, log = _serve(tmp_path, "--open")
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/captures", timeout=10).status_code == 200
        assert "WARNING" in log.read_text() and "open mode on 0.0.0.0" in log.read_text()
    finally:
        _stop(proc)


def test_the_first_token_adopts_what_was_uploaded_in_open_mode(tmp_path):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        c = client()
        body = upload(c, SAMPLE).json()
        wait_run(c, body["run_id"])
        res = CliRunner().invoke(cli_app, ["token", "create", "alice"])
        assert res.exit_code == 0 and "alice adopted what was uploaded in open mode (1 captures)" in res.stderr
        alice = {"Authorization": f"Bearer {res.stdout.strip()}"}
        assert c.get("/api/v1/captures").json()["error"] == "token_required"
        page = c.get("/api/v1/captures", headers=alice).json()
        assert [x["id"] for x in page["items"]] == [body["capture"]["id"]]
        assert c.get(f"/api/v1/runs/{body['run_id']}/document", headers=alice).status_code == 200
        bob = CliRunner().invoke(cli_app, ["token", "create", "bob"])  # only the first token adopts
        assert bob.exit_code == 0 and "adopted" not in bob.stderr
        assert c.get("/api/v1/captures", headers={"Authorization": f"Bearer {bob.stdout.strip()}"}).json()[
            "total"] == 0


def test_the_first_token_can_leave_open_mode_data_alone(tmp_path):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        c = client()
        wait_run(c, upload(c, SAMPLE).json()["run_id"])
        res = CliRunner().invoke(cli_app, ["token", "create", "alice", "--no-adopt"])
        assert res.exit_code == 0 and "adopted" not in res.stderr
        token = {"Authorization": f"Bearer {res.stdout.strip()}"}
        assert c.get("/api/v1/captures", headers=token).json()["total"] == 0
