"""A service safe to expose: storage quotas and archive limits (413 with stable codes, nothing kept of a
rejected upload), open mode only on loopback unless asked for, and the first token adopting what was
uploaded in open mode."""

from __future__ import annotations

import gzip
import io
import json
import os
import select
import socket
import subprocess
import sys
import tarfile
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
        assert c.get("/api/v1/quota").json() == {"owner": "local", "used_bytes": 0, "capture_bytes": 0,
                                                 "derived_bytes": 0, "captures": 0, "limit_bytes": quota,
                                                 "remaining_bytes": quota}
        first = upload(c, SAMPLE).json()
        run = wait_run(c, first["run_id"])
        # the results count too: the sample's (~0.5 MB of series and rows) do not fit in what is left, so its
        # capture fails in the run with the code, and nothing of them is kept
        assert run["captures"][0]["error_code"] == "quota_exceeded" and run["status"] == "failed", run
        q = c.get("/api/v1/quota").json()
        assert q["used_bytes"] == q["capture_bytes"] == SAMPLE.stat().st_size and q["derived_bytes"] == 0
        assert q["remaining_bytes"] == quota - q["used_bytes"]
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
        # a bomb: 64 MiB of zeros after a pcap header compress to ~64 kB; the limit stops it long before 64 MiB
        # are written (its first bytes are a capture's, so it is not refused by them)
        bomb = _zip({"a.pcap": SAMPLE.read_bytes(), "zeros.pcap": SAMPLE.read_bytes()[:24] + b"\0" * (64 << 20)})
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


def _empty_entries(n: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for i in range(n):
            zf.writestr(zipfile.ZipInfo(f"{i}"), b"")
    return buf.getvalue()


def test_a_zip_directory_past_its_bounds_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    """zipfile parses a whole central directory when it opens an archive (300 000 empty entries: 157 MB and 1.4 s
    of the API's, a 2 GiB upload tens of GB): the end record's counts are checked first. 40 000 entries (end
    record) and 70 000 (ZIP64's) are refused without opening the archive; the record says what zipfile finds."""
    from ackreplay.core import capture_batches
    from ackreplay.core.zip_directory import directory

    archives = {n: _empty_entries(n) for n in (3, 40_000, 70_000)}
    fits = _zip({"a.pcap": SAMPLE.read_bytes()})
    opened: list[object] = []
    real = zipfile.ZipFile
    monkeypatch.setattr(capture_batches.zipfile, "ZipFile", lambda *a, **k: opened.append(a) or real(*a, **k))
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        c = client()
        for n in (40_000, 70_000):
            r = c.post("/api/v1/batches", files=[("files", ("many.zip", archives[n]))])
            assert (r.status_code, r.json()["error"]) == (413, "archive_too_large"), r.text
            assert f"{n} entries" in r.json()["detail"] and opened == []
        r = c.post("/api/v1/batches", files=[("files", ("ok.zip", fits))])
        assert r.status_code == 202 and len(opened) == 1, r.text
        wait_run(c, r.json()["run_id"])
    for n in (3, 70_000):
        data = archives[n]
        with real(io.BytesIO(data)) as zf:
            stated = directory(io.BytesIO(data))
            assert stated is not None and stated.entries == len(zf.infolist()) == n
            assert stated.size == sum(46 + len(i.filename) + len(i.extra) + len(i.comment) for i in zf.infolist())
    assert directory(io.BytesIO(b"PK\x03\x04 no end record")) is None


def _tar_gz(*blocks: bytes) -> bytes:
    return gzip.compress(b"".join(blocks) + b"\0" * 1024, compresslevel=9)


def _tar_header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def test_a_tar_header_is_held_to_a_few_mib(tmp_path):
    """tarfile reads an extended (pax) or GNU long-name header whole, at the size it states: a .tar.gz of a few
    hundred kB stating a 256 MiB header cost the API 269 MB. A header past 4 MiB is refused unread; members with
    long names (a real pax header) and large members read in chunks still pass; a broken gzip is 422."""
    capture = SAMPLE.read_bytes()
    pad = b"\0" * (-len(capture) % 512)
    long_name = "d/" * 80 + "a.pcap"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for name, data in ((long_name, capture), ("big.pcap", capture[:24] + b"\0" * (6 << 20))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    member = _tar_header("a.pcap", tarfile.REGTYPE, len(capture)) + capture + pad
    bombs = {kind: _tar_gz(_tar_header("h", kind, 64 << 20), b"\0" * (64 << 20), member)
             for kind in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME)}
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        c = client()
        for kind, bomb in bombs.items():
            assert len(bomb) < 1 << 20
            r = c.post("/api/v1/batches", files=[("files", ("bomb.tar.gz", bomb))])
            assert (r.status_code, r.json()["error"]) == (413, "archive_too_large"), (kind, r.text)
            assert f"a tar header of {64 << 20} bytes" in r.json()["detail"]
        crc = bytearray(_zip({"a.pcap": capture}))
        crc[100] ^= 0xFF  # inside the member's deflated bytes: a bad CRC or a broken stream
        for broken in (buf.getvalue()[:-40], bytes(crc)):  # (both were 500 internal_error)
            r = c.post("/api/v1/batches", files=[("files", ("broken.tar.gz", broken))])
            assert (r.status_code, r.json()["error"]) == (422, "invalid_archive"), r.text
        assert c.get("/api/v1/captures").json()["total"] == 0
        r = c.post("/api/v1/batches", files=[("files", ("ok.tar.gz", buf.getvalue()))])
        assert r.status_code == 202, r.text
        assert r.json()["captures_total"] == 2 and r.json()["rejected"] == []
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


def _serve(tmp_path: Path, *args: str, host: str = "0.0.0.0",
           env_extra: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKREPLAY_") and k not in ("DATABASE_URL",
                                                                                                "REDIS_URL")}
    env["ACKREPLAY_DATA_DIR"] = str(tmp_path / "data")
    env.update(env_extra or {})
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


#: How long a test waits for the server to answer and close: long enough for a busy machine to run a 1 s
#: timeout late, far below the defaults (20 s, 60 s, 75 s), so only the configured timeouts can answer in time.
CUT_OFF = 10.0


def _answer(sock: socket.socket, *, within: float) -> bytes:
    """Everything the server sends until it closes the connection (within ``within`` s: the socket times out
    after it, failing the test)."""
    got = b""
    sock.settimeout(within)
    while chunk := sock.recv(65536):
        got += chunk
    return got


def _trickle(sock: socket.socket, data: bytes, every: float) -> None:
    """Send ``data`` a byte at a time, ``every`` seconds apart, until the server answers or closes."""
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return
        if select.select([sock], [], [], every)[0]:
            return


def _error(answer: bytes, status: int, code: str) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status}".encode()), answer[:300]
    assert b"connection: close" in head.lower() and b"application/json" in head, head
    assert json.loads(body)["error"] == code, body


def test_slow_headers_and_bodies_are_cut_off_by_their_timeouts(tmp_path):
    """A real socket against `ackreplay serve` on 127.0.0.1 with 1 s timeouts: headers trickled a byte at a time
    (slowloris), a connection that sends nothing, an upload that stops and a JSON body trickled — each answered
    408 request_timeout (JSON) and closed well before any default timeout (``CUT_OFF``: a busy machine may run
    them late, so no tighter bound is asserted); a request uvicorn cannot parse is 400
    malformed_request (JSON); the server answers others throughout."""
    proc, port, _ = _serve(tmp_path, host="127.0.0.1", env_extra={"ACKREPLAY_HEADER_TIMEOUT_SECONDS": "1",
                                                                  "ACKREPLAY_BODY_TIMEOUT_SECONDS": "1"})
    headers = b"Host: 127.0.0.1\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port)) as sock:  # slowloris: the headers never end
            _trickle(sock, b"GET /api/v1/health HTTP/1.1\r\n" + headers + b"X-Slow: " + b"a" * 200, every=0.3)
            _error(_answer(sock, within=CUT_OFF), 408, "request_timeout")
        with socket.create_connection(("127.0.0.1", port)) as sock:  # silent
            _error(_answer(sock, within=CUT_OFF), 408, "request_timeout")
        with socket.create_connection(("127.0.0.1", port)) as sock:  # an upload that stops sending
            sock.sendall(b"POST /api/v1/captures HTTP/1.1\r\n" + headers + b"Content-Type: multipart/form-data; "
                         b"boundary=x\r\nContent-Length: 100000\r\n\r\n--x\r\n")
            _error(_answer(sock, within=CUT_OFF), 408, "request_timeout")
        # a JSON body trickled a byte every 0.9 s: never idle for the timeout, but not all there within it
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /api/v1/runs HTTP/1.1\r\n" + headers + b"Content-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n")
            _trickle(sock, b'{"captures": [' + b" " * 900, every=0.9)  # (stops once the server answers)
            _error(_answer(sock, within=CUT_OFF), 408, "request_timeout")
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            _error(_answer(sock, within=CUT_OFF), 400, "malformed_request")
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=10).status_code == 200
    finally:
        _stop(proc)
    assert _stored_files(tmp_path / "data") == []
