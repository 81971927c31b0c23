"""Hostile input, against the real PostgreSQL (and the embedded worker): every mistake a careless or hostile
client can make answered with its status and machine-readable code, never 500 or a retry-me 503, and the
store and the quota checked byte for byte after each case (``tests/service/accounting.py``).

The classes (issue #22): captures without TCP end their run (and batch) as a result of no flows, bad data
fails at once and infrastructure faults are retried; failed uploads leave no bytes and orphans are swept;
token, length and quota are checked before a body is read and a body without a length is cut at the limit;
every input is validated at the boundary; concurrent batches of an owner with a quota do not deadlock; and
the lower ones (a capture deleted during ingest, open mode's cross-origin and Host checks, gzip content,
tokens' expiry, listing and revocation, metrics behind a token, formula-safe CSV, many tags).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import struct
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx
import psycopg
import pytest
from sqlalchemy.exc import DataError, IntegrityError, OperationalError
from typer.testing import CliRunner

from ackreplay.api.security import HEADERS
from ackreplay.cli.main import app as cli_app
from tests.conftest import ROOT
from tests.pcapgen import Conv, Rec, ether, ipv4, pcap
from tests.service.accounting import check_store, stored
from tests.service.harness import client, configured, fresh_database, wait_run
from tests.service.test_safety import _serve, _stop

pytestmark = pytest.mark.services
SAMPLE = ROOT / "samples" / "sample.pcap"
T0 = 1_700_000_000_000_000_000


def tcp_capture(seed: int = 0, segments: int = 40) -> bytes:
    """A small TCP transfer (distinct bytes per seed)."""
    c = Conv(isn=1000 + seed * 7919)
    c.handshake(0, 20)
    for i in range(segments):
        c.send(30 + i, i * 1000, 1000)
        c.ack(50 + i, (i + 1) * 1000)
    return c.pcap()


def udp_only(seed: int = 0, n: int = 20) -> bytes:
    """A valid pcap of UDP datagrams only."""
    payload = bytes([seed % 256]) * 12
    udp = struct.pack(">HHHH", 5353, 53, 8 + len(payload), 0) + payload
    return pcap([Rec(T0 + i * 1_000_000, ether(ipv4("10.0.0.1", "10.0.0.2", udp, proto=17))) for i in range(n)])


HEADER_ONLY = pcap([])
TRUNCATED_FIRST = tcp_capture(7)[:24 + 16 + 10]  # inside its first record
NO_TCP = {"udp-only.pcap": udp_only(), "header-only.pcap": HEADER_ONLY, "truncated-first-record.pcap": TRUNCATED_FIRST,
          "udp-only.pcap.gz": gzip.compress(udp_only(1))}


@contextmanager
def service(tmp_path: Path, pg: Any, **extra: str) -> Iterator[SimpleNamespace]:
    data = tmp_path / "data"
    db = fresh_database(pg.url)
    with configured({"DATABASE_URL": db, "ACKREPLAY_DATA_DIR": str(data), **extra}):
        yield SimpleNamespace(api=client(), store=data / "store", db=db)


@pytest.fixture
def svc(tmp_path, postgres_server) -> Iterator[SimpleNamespace]:
    with service(tmp_path, postgres_server) as s:
        yield s


def post_capture(api: Any, data: bytes, filename: str = "cap.pcap", headers: dict[str, str] | None = None,
                 **form: str) -> Any:
    return api.post("/api/v1/captures", files={"file": (filename, data, "application/octet-stream")}, data=form,
                    headers=headers or {})


def is_error(r: Any, status: int, code: str) -> None:
    """The answer is ``status`` with the JSON error shape, ``code`` and the security headers."""
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    assert r.json()["error"] == code, r.json()
    for k, v in HEADERS.items():
        assert r.headers.get(k) == v, (k, r.headers)


def attempts(db: str, run_id: str) -> list[tuple[str, str, int]]:
    with psycopg.connect(db) as conn:
        return conn.execute("select kind, status, attempts from tasks where run_id = %s order by kind, chunk",
                            (run_id,)).fetchall()


# ------------------------------------------------------------------ 1. a run and a batch always end


def test_embedded_on_sqlite_too_a_capture_without_tcp_ends_its_run(tmp_path):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        api = client()
        for name, data in NO_TCP.items():
            r = post_capture(api, data, name)
            assert r.status_code == 201, r.text
            run = wait_run(api, r.json()["run_id"], timeout=60)
            assert run["status"] == "succeeded" and run["captures"][0]["status"] == "succeeded", run
        check_store(tmp_path / "data" / "store", api)


@pytest.mark.parametrize("name", list(NO_TCP))
def test_a_capture_without_tcp_is_a_result_of_no_flows(svc, name):
    r = post_capture(svc.api, NO_TCP[name], name)
    assert r.status_code == 201, r.text
    run = wait_run(svc.api, r.json()["run_id"], timeout=60)
    assert run["status"] == "succeeded" and run["error"] is None, run
    assert [c["status"] for c in run["captures"]] == ["succeeded"]
    assert run["progress"]["tasks_done"] == run["progress"]["tasks_total"] == 1
    cid = r.json()["capture"]["id"]
    assert svc.api.get(f"/api/v1/captures/{cid}").json()["status"] == "ingested"
    assert svc.api.get(f"/api/v1/captures/{cid}/flows").json()["items"] == []
    assert svc.api.get(f"/api/v1/runs/{run['id']}/document").json()["captures"][0]["flows"] == []
    assert attempts(svc.db, run["id"]) == [("ingest", "done", 1)]
    check_store(svc.store, svc.api)


def test_a_batch_with_captures_without_tcp_ends(svc):
    files = [("files", (n, d)) for n, d in NO_TCP.items()] + [("files", ("tcp.pcap", tcp_capture(1)))]
    r = svc.api.post("/api/v1/batches", files=files)
    assert r.status_code == 202, r.text
    wait_run(svc.api, r.json()["run_id"], timeout=120)
    batch = svc.api.get(f"/api/v1/batches/{r.json()['batch_id']}").json()
    assert batch["run"]["status"] == "succeeded" and len(batch["captures"]) == 5
    assert {c["status"] for c in batch["run"]["captures"]} == {"succeeded"}
    assert svc.api.get(f"/api/v1/batches/{r.json()['batch_id']}/scoreboard").status_code == 200
    check_store(svc.store, svc.api)


@pytest.mark.parametrize("stage", ["ingest", "replay"])
def test_bad_data_fails_the_run_at_once_without_retry(svc, monkeypatch, stage):
    def broken(*_: Any, **__: Any) -> Any:
        raise ValueError("a value the pipeline cannot take")

    target = f"ackreplay.core.run_tasks.{'ingest_capture' if stage == 'ingest' else 'replay_capture'}"
    monkeypatch.setattr(target, broken)
    r = post_capture(svc.api, tcp_capture(2))
    run = wait_run(svc.api, r.json()["run_id"], timeout=60)
    assert run["status"] == "failed", run
    (cap,) = run["captures"]
    assert cap["status"] == "failed" and cap["error_code"] == "ValueError"
    assert "a value the pipeline cannot take" in cap["error"] and "a value the pipeline" in run["error"]
    assert ("ingest" if stage == "ingest" else "replay", "failed", 1) in attempts(svc.db, run["id"])
    check_store(svc.store, svc.api)


def test_infrastructure_faults_are_retried_until_they_pass(svc, monkeypatch):
    import ackreplay.core.run_tasks

    real, calls = ackreplay.core.run_tasks.ingest_capture, []

    def flaky(*a: Any, **k: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("select 1", {}, Exception("server closed the connection unexpectedly"))
        return real(*a, **k)

    monkeypatch.setattr("ackreplay.core.run_tasks.ingest_capture", flaky)
    r = post_capture(svc.api, tcp_capture(3))
    run = wait_run(svc.api, r.json()["run_id"], timeout=60)
    assert run["status"] == "succeeded", run
    assert ("ingest", "done", 2) in attempts(svc.db, run["id"]) and len(calls) == 2


# ------------------------------------------------------------------ 2. no orphaned bytes


class _Orig(Exception):
    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _raiser(exc: Exception) -> Any:
    def run(*_: Any, **__: Any) -> Any:
        raise exc
    return run


FAILED_AFTER_STORING = [  # the capture was stored, then the request failed: its bytes must go
    ("data_error", DataError("insert", {}, _Orig("value too long", "22001")), 422, "invalid_request"),
    ("integrity_error", IntegrityError("insert", {}, _Orig("duplicate key", "23505")), 422, "invalid_request"),
    ("deadlock", OperationalError("update", {}, _Orig("deadlock detected", "40P01")), 409, "conflict"),
    ("unexpected", RuntimeError("a bug"), 500, "internal_error"),
]


@pytest.mark.parametrize(("case", "exc", "status", "code"), FAILED_AFTER_STORING,
                         ids=[c[0] for c in FAILED_AFTER_STORING])
def test_an_upload_failing_after_it_was_stored_leaves_no_bytes(tmp_path, postgres_server, monkeypatch, case, exc,
                                                               status, code):
    with service(tmp_path, postgres_server, ACKREPLAY_QUOTA_BYTES="10000000") as s:
        monkeypatch.setattr("ackreplay.api.routes.captures.start_run", _raiser(exc))
        for i in range(12):
            is_error(post_capture(s.api, tcp_capture(100 + i)), status, code)
            assert stored(s.store) == {} and check_store(s.store, s.api) == {}
        assert s.api.get("/api/v1/quota").json()["used_bytes"] == 0


def test_concurrent_identical_uploads_store_one_capture(svc):
    data, answers = tcp_capture(5), []

    def one() -> None:
        answers.append(post_capture(svc.api, data))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.status_code for a in answers) == [200] * 5 + [201], [a.text for a in answers]
    assert len({a.json()["capture"]["id"] for a in answers}) == 1
    (created,) = [a for a in answers if a.status_code == 201]
    wait_run(svc.api, created.json()["run_id"], timeout=60)
    assert check_store(svc.store, svc.api)[f"captures/{created.json()['capture']['id']}/capture"] == len(data)


def test_the_janitor_removes_orphans_older_than_an_hour(svc):
    from ackreplay.core.janitor import maybe_sweep_orphans

    body = post_capture(svc.api, tcp_capture(6)).json()
    wait_run(svc.api, body["run_id"], timeout=60)
    kept = stored(svc.store)
    old = time.time() - 3700
    orphans = ["uploads/0123", "captures/" + "a" * 32 + "/capture", "captures/" + "b" * 32 + "/tables/acks.parquet",
               f"series/{'c' * 32}/{body['capture']['id']}/1.parquet", f"series/{body['run_id']}/{'d' * 32}/1.parquet"]
    for key in [*orphans, "uploads/young"]:
        path = svc.store / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 10)
        if key != "uploads/young":
            os.utime(path, (old, old))
    for key in kept:  # the capture's own objects are old too: they stay, they belong to it
        os.utime(svc.store / key, (old, old))
    removed = maybe_sweep_orphans(force=True)
    assert sorted(removed) == sorted(orphans)
    assert stored(svc.store) == {**kept, "uploads/young": 10}
    (svc.store / "uploads/young").unlink()
    check_store(svc.store, svc.api)


# ------------------------------------------------------------------ 3. checked before the body is read


PART = (b'--x\r\nContent-Disposition: form-data; name="files"; filename="a.pcap"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n")


def _asgi(app: Any, path: str, headers: dict[str, str], chunks: int = 0, chunk: bytes = b"",
          first: bytes = b"") -> tuple[int, Any, int]:
    """Call the app with a body the test feeds: the status, the JSON answer and how often the body was read."""
    reads = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        if reads > chunks:
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.request", "body": (first if reads == 1 else b"") + chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "testserver", **headers}.items()],
             "server": ("testserver", 80), "client": ("127.0.0.1", 5000)}
    anyio.run(app, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body), reads


def _token(owner: str) -> str:
    res = CliRunner().invoke(cli_app, ["token", "create", owner])
    assert res.exit_code == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("path", ["/api/v1/captures", "/api/v1/batches"])
def test_token_length_and_quota_are_checked_before_the_body_is_read(tmp_path, postgres_server, path):
    from ackreplay.api.app import create_app

    with service(tmp_path, postgres_server, ACKREPLAY_MAX_UPLOAD_BYTES=str(1 << 20), ACKREPLAY_AUTH="required",
                 ACKREPLAY_MAX_BATCH_BYTES=str(1 << 20)) as s:
        app = create_app()
        multipart = {"content-type": "multipart/form-data; boundary=x"}
        status, body, reads = _asgi(app, path, {**multipart, "content-length": str(10 << 30)})
        assert (status, body["error"], reads) == (401, "token_required", 0)
        bearer = {"authorization": f"Bearer {_token('alice')}", **multipart}
        status, body, reads = _asgi(app, path, {**bearer, "content-length": str(10 << 30)})
        assert (status, body["error"], reads) == (413, "upload_too_large", 0)
        # without a length: counted while streaming, cut at the limit (1 MiB + 1 MiB of framing)
        field = PART if path.endswith("batches") else PART.replace(b'name="files"', b'name="file"')
        status, body, reads = _asgi(app, path, bearer, chunks=10_000, chunk=b"\0" * (64 << 10), first=field)
        assert (status, body["error"]) == (413, "upload_too_large") and reads <= 33, (body, reads)
        assert stored(s.store) == {}


def test_an_upload_past_the_quota_is_refused_before_its_body(tmp_path, postgres_server):
    from ackreplay.api.app import create_app

    with service(tmp_path, postgres_server, ACKREPLAY_QUOTA_BYTES=str(1 << 20)) as s:
        status, body, reads = _asgi(create_app(), "/api/v1/captures",
                                    {"content-type": "multipart/form-data; boundary=x", "content-length": str(8 << 20)})
        assert (status, body["error"], reads) == (413, "quota_exceeded", 0)
        assert stored(s.store) == {}


def test_any_other_body_is_held_to_a_json_document_s_size(svc):
    from ackreplay.api.app import create_app

    app = create_app()
    status, body, reads = _asgi(app, "/api/v1/runs", {"content-type": "application/json",
                                                      "content-length": str(2 << 20)})
    assert (status, body["error"], reads) == (413, "request_too_large", 0)
    status, body, reads = _asgi(app, "/api/v1/runs", {"content-type": "application/json"}, chunks=1000,
                                chunk=b" " * (64 << 10), first=b'{"captures": [')
    assert (status, body["error"]) == (413, "request_too_large") and reads <= 18, (body, reads)


# ------------------------------------------------------------------ 4. validated at the boundary

TRUTHS = ["bottleneck=1e400", '{"bottleneck": 1e400}', '{"bottleneck": "10Mbit", "flows": "x"}', '{"bottleneck": true}',
          '{"bottleneck": "10Mbit", "min_flow_bytes": -1}', "bottleneck=10Mbit,min_flow_bytes=-1",
          '{"bottleneck": "10Mbit", "flows": {"2147483648": 1e6}}', '{"bottleneck": ' + "9" * 400 + "}",
          '{"bottleneck": "10Mbit", "min_flow_bytes": 1e30}', '{"fair_share": NaN}', '{"bottleneck": [1]}',
          '{"bottleneck": "10Mbit", "random_drops": [{"t": "inf", "src_port": 1, "dst_port": 2}]}',
          # nested past the JSON decoder's and any walker's stack, and just under the decoder's
          '{"bottleneck": "10Mbit", "flows": ' + "[" * 5000 + "]" * 5000 + "}",
          '{"bottleneck": "10Mbit", "flows": ' + "[" * 900 + "]" * 900 + "}",
          '{"bottleneck": "10Mbit", "x": ' + '{"a": ' * 20 + "1" + "}" * 20 + "}"]


@pytest.mark.parametrize("truth", TRUTHS, ids=[t if len(t) < 80 else f"{t[:40]}…({len(t)} characters)" for t in TRUTHS])
def test_impossible_truth_is_422_and_keeps_nothing(svc, truth):
    is_error(post_capture(svc.api, tcp_capture(8), truth=truth), 422, "invalid_truth")
    is_error(svc.api.post("/api/v1/batches", files=[("files", ("a.pcap", tcp_capture(8)))], data={"truth": truth}),
             422, "invalid_truth")
    assert check_store(svc.store, svc.api) == {}


UPLOAD_FORMS = [{"name": "n" * 501}, {"name": "a\0b"}, {"tags": ",".join(f"t{i}" for i in range(101))},
                {"tags": "x" * 101}, {"tags": ",".join(f"tag{i}" for i in range(20_000))}, {"tags": "a\0"},
                {"truth": "bottleneck=10Mbit\0"}]


@pytest.mark.parametrize("form", UPLOAD_FORMS, ids=["long-name", "nul-name", "101-tags", "long-tag", "20000-tags",
                                                    "nul-tag", "nul-truth"])
def test_forms_past_the_database_bounds_are_422(svc, form):
    is_error(post_capture(svc.api, tcp_capture(9), **form), 422, "invalid_request")
    is_error(svc.api.post("/api/v1/batches", files=[("files", ("a.pcap", tcp_capture(9)))], data=form),
             422, "invalid_request")
    assert check_store(svc.store, svc.api) == {}


def test_archive_member_names_past_the_bounds_are_made_storable(svc):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("c" * 600 + ".pcap", tcp_capture(11))
        zf.writestr("notes\x01\x7f" + "n" * 600 + ".txt", b"not a capture")
    r = svc.api.post("/api/v1/batches", files=[("files", ("names.zip", buf.getvalue()))])
    assert r.status_code == 202, r.text
    (cid,) = r.json()["captures"]
    assert svc.api.get(f"/api/v1/captures/{cid}").json()["name"] == "c" * 500
    (rejected,) = r.json()["rejected"]
    assert rejected["name"].isprintable() and len(rejected["name"]) == 500
    wait_run(svc.api, r.json()["run_id"], timeout=60)
    check_store(svc.store, svc.api)


def test_ids_filters_and_numbers_out_of_range_are_422(svc):
    body = post_capture(svc.api, tcp_capture(10)).json()
    cid, run = body["capture"]["id"], body["run_id"]
    wait_run(svc.api, run, timeout=60)
    before = check_store(svc.store, svc.api)
    big = str(1 << 63)
    cases = [
        ("get", f"/api/v1/captures?offset={big}"), ("get", f"/api/v1/runs/{run}/scores?offset={big}"),
        ("get", f"/api/v1/captures/{cid}/flows/{1 << 31}"), ("get", f"/api/v1/captures/{cid}/flows/-1"),
        ("get", f"/api/v1/captures/{cid}/flows/{1 << 31}/acks"), ("get", f"/api/v1/runs/{run}/scores?flow={1 << 31}"),
        ("get", f"/api/v1/runs/{run}/captures/{cid}/flows/{1 << 40}/series"),
        ("get", "/api/v1/captures/abc%00"), ("get", f"/api/v1/runs/{run}%00"), ("get", "/api/v1/captures?tag=a%00b"),
        ("get", "/api/v1/captures?status=%00"), ("get", "/api/v1/captures?status=gone"),
        ("get", "/api/v1/runs?capture=%00"), ("get", f"/api/v1/runs/{run}/scores?estimator=r%00e"),
        ("get", f"/api/v1/runs/{run}/scores?sort=%00"), ("get", "/api/v1/leaderboard?runs=%00"),
        ("get", "/api/v1/leaderboard?runs=" + "x" * 40), ("get", "/api/v1/batches/" + "z" * 32),
        ("get", f"/api/v1/runs/{run}/captures/{cid}/flows/2/graph?t0=inf"),
        ("get", f"/api/v1/runs/{run}/captures/{cid}/flows/2/graph?t1=nan"),
        ("delete", "/api/v1/captures/" + "q" * 600),
    ]
    for method, url in cases:
        is_error(getattr(svc.api, method)(url), 422, "invalid_request")
    runs_bodies: list[Any] = [
        {"captures": [cid, cid]}, {"captures": ["x\0"]}, {"captures": ["a" * 600]}, {"captures": []},
        {"captures": [cid], "estimators": ["r\0e"]}, {"captures": [cid], "estimators": [{"name": "re" * 30}]},
        {"captures": [cid], "estimators": [{"name": "abse", "parameters": {"N": float("inf")}}]},
        {"captures": [cid], "estimators": [{"name": "abse", "parameters": {"N\0": 1}}]},
        {"captures": "x"}, {"captures": [1]},
    ]
    for b in runs_bodies:
        r = svc.api.post("/api/v1/runs", content=json.dumps(b), headers={"content-type": "application/json"})
        is_error(r, 422, "invalid_request")
    assert check_store(svc.store, svc.api) == before
    r = svc.api.get("/dashboard/%00.js")  # unauthenticated, a file path
    is_error(r, 422, "invalid_request")
    is_error(svc.api.get("/dashboard/" + "x" * 5000 + ".js"), 404, "not_found")


@pytest.mark.parametrize(("exc", "status", "code"), [
    (DataError("select", {}, _Orig("invalid input syntax", "22P02")), 422, "invalid_request"),
    (IntegrityError("insert", {}, _Orig("violates foreign key", "23503")), 422, "invalid_request"),
    (OperationalError("select", {}, _Orig("deadlock detected", "40P01")), 409, "conflict"),
    (OperationalError("select", {}, _Orig("could not serialize access", "40001")), 409, "conflict"),
    (OperationalError("select", {}, _Orig("the database system is shutting down", "57P03")), 503,
     "database_unavailable"),
    (KeyError("boom"), 500, "internal_error"),
])
def test_a_database_error_is_503_only_for_an_outage_and_nothing_is_plain_text(svc, monkeypatch, exc, status, code):
    monkeypatch.setattr("ackreplay.core.captures.listing", _raiser(exc))
    is_error(svc.api.get("/api/v1/captures"), status, code)


# ------------------------------------------------------------------ 5. no deadlock between batches


def test_concurrent_batches_of_an_owner_with_a_quota_do_not_deadlock(tmp_path, postgres_server):
    with service(tmp_path, postgres_server, ACKREPLAY_QUOTA_BYTES=str(50 << 20)) as s:
        answers: list[Any] = []

        def batch(k: int) -> None:
            files = [("files", (f"b{k}-{i}.pcap", tcp_capture(1000 + 10 * k + i))) for i in range(3)]
            answers.append(s.api.post("/api/v1/batches", files=files))

        for _ in range(2):
            answers.clear()
            threads = [threading.Thread(target=batch, args=(k + 10 * _,)) for k in range(5)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert [a.status_code for a in answers] == [202] * 5, [a.text for a in answers]
        for a in answers:
            assert wait_run(s.api, a.json()["run_id"], timeout=120)["status"] == "succeeded"
        assert s.api.get("/api/v1/quota").json()["captures"] == 30
        check_store(s.store, s.api)


# ------------------------------------------------------------------ 6. lost work, and the run says so


def test_the_sweep_dispatches_lost_work_again_and_the_run_says_it_waits(svc, monkeypatch):
    """The sweep's rules on real rows (the fault suite shows them against a killed worker and a restarted
    Redis): a started task without heartbeat and a queued one without broker message go again, with a note
    the run's status shows; a task a live worker runs, or whose message waits in the broker, stays."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.run_tasks import requeue_unfinished

    sent: list[tuple[str, str]] = []
    monkeypatch.setattr("ackreplay.core.run_tasks.dispatch", lambda kind, tid: sent.append((kind, tid)))
    monkeypatch.setattr("ackreplay.core.fair_queue.dispatch", lambda kind, tid: sent.append((kind, tid)))
    r = svc.api.post("/api/v1/batches", files=[("files", (f"{i}.pcap", tcp_capture(40 + i))) for i in range(4)])
    run_id = r.json()["run_id"]
    ids = [t for (t,) in psycopg.connect(svc.db).execute(
        "select id from tasks where run_id = %s order by capture_id", (run_id,)).fetchall()]
    old, fresh = datetime.now(UTC) - timedelta(seconds=120), datetime.now(UTC)
    with psycopg.connect(svc.db) as conn:
        for tid, status, beat, updated in [(ids[0], "started", old, old), (ids[1], "started", fresh, old),
                                           (ids[2], "queued", None, old), (ids[3], "queued", None, old)]:
            conn.execute("update tasks set status = %s, heartbeat_at = %s, updated_at = %s, worker = 'gone:1' "
                         "where id = %s", (status, beat, updated, tid))
    assert svc.api.get(f"/api/v1/runs/{run_id}").json()["waiting"] is None
    sent.clear()  # (the batch's own dispatches)
    with session_scope() as session:
        assert requeue_unfinished(session, older_than_s=30, in_broker=lambda tids: {ids[3]} & set(tids)) == 2
    assert sorted(sent) == sorted([("ingest", ids[0]), ("ingest", ids[2])])
    waiting = svc.api.get(f"/api/v1/runs/{run_id}").json()["waiting"]
    assert "1 task: its worker stopped (no heartbeat); dispatched again" in waiting, waiting
    assert "1 task: its broker message was lost; dispatched again" in waiting, waiting
    with session_scope() as session:  # the two just dispatched are not lost again yet
        assert requeue_unfinished(session, older_than_s=30, in_broker=lambda tids: {ids[3]} & set(tids)) == 0


# ------------------------------------------------------------------ 7. the lower ones


def test_deleting_a_capture_during_its_ingest_ends_the_run(svc, monkeypatch):
    import ackreplay.core.run_tasks

    real, entered, release = ackreplay.core.run_tasks.ingest_capture, threading.Event(), threading.Event()

    def slow(*a: Any, **k: Any) -> Any:
        entered.set()
        assert release.wait(30)
        return real(*a, **k)

    monkeypatch.setattr("ackreplay.core.run_tasks.ingest_capture", slow)
    one = post_capture(svc.api, tcp_capture(20)).json()
    assert entered.wait(30)
    assert svc.api.delete(f"/api/v1/captures/{one['capture']['id']}").status_code == 204
    release.set()
    run = wait_run(svc.api, one["run_id"], timeout=60)
    assert run["status"] == "failed" and "deleted" in run["error"] and run["captures"] == [], run
    # in a batch: the other capture's results, exactly once; the run notes the deleted one
    entered.clear()
    release.clear()
    r = svc.api.post("/api/v1/batches", files=[("files", ("a.pcap", tcp_capture(21))),
                                                ("files", ("b.pcap", tcp_capture(22)))])
    assert entered.wait(30)
    first, second = r.json()["captures"]
    assert svc.api.delete(f"/api/v1/captures/{first}").status_code == 204
    release.set()
    run = wait_run(svc.api, r.json()["run_id"], timeout=60)
    assert run["status"] == "succeeded" and f"capture {first}: deleted" in run["error"], run
    assert [c["capture_id"] for c in run["captures"]] == [second]
    with psycopg.connect(svc.db) as conn:
        rows, distinct = conn.execute("select count(*), count(distinct (capture_id, flow_id, estimator)) from results "
                                      "where run_id = %s", (run["id"],)).fetchone()
    assert rows == distinct > 0
    check_store(svc.store, svc.api)


def test_open_mode_refuses_cross_origin_writes_and_unknown_hosts(tmp_path, postgres_server):
    with service(tmp_path, postgres_server, ACKREPLAY_BIND_HOST="127.0.0.1") as s:
        local = {"host": "127.0.0.1:8000"}
        for evil in ({"origin": "http://127.0.0.1:9999"}, {"origin": "http://evil.example"}, {"origin": "null"},
                     {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"}):
            is_error(post_capture(s.api, tcp_capture(30), headers={**local, **evil}), 403, "cross_origin")
            r = s.api.post("/api/v1/runs", json={"captures": ["a" * 32]}, headers={**local, **evil})
            is_error(r, 403, "cross_origin")
        for host in ("evil.example", "evil.example:8000", "127.0.0.1.nip.io"):
            is_error(s.api.get("/api/v1/captures", headers={"host": host}), 400, "invalid_host")
        assert check_store(s.store, s.api, headers=local) == {}
        ok = post_capture(s.api, tcp_capture(30), headers={**local, "origin": "http://127.0.0.1:8000",
                                                           "sec-fetch-site": "same-origin"})
        assert ok.status_code == 201, ok.text
        assert s.api.get("/api/v1/captures", headers={"host": "localhost:8000"}).status_code == 200
        wait_run(s.api, ok.json()["run_id"], headers=local, timeout=60)


def test_a_served_loopback_api_checks_host_and_origin_of_tokenless_requests(tmp_path):
    proc, port, _ = _serve(tmp_path, host="127.0.0.1")
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        files = {"file": ("a.pcap", tcp_capture(31))}
        r = httpx.post(f"{base}/captures", files=files, headers={"origin": "http://127.0.0.1:1"}, timeout=10)
        assert (r.status_code, r.json()["error"]) == (403, "cross_origin")
        r = httpx.get(f"{base}/captures", headers={"host": f"rebound.example:{port}"}, timeout=10)
        assert (r.status_code, r.json()["error"]) == (400, "invalid_host")
        assert httpx.get(f"{base}/captures", timeout=10).json()["total"] == 0
        r = httpx.post(f"{base}/captures", files=files, headers={"origin": f"http://127.0.0.1:{port}"}, timeout=10)
        assert r.status_code == 201, r.text
    finally:
        _stop(proc)


@pytest.mark.parametrize("content", [b"just some text, not a capture" * 10, b"", b"\x00" * 64, b"PK\x03\x04zip"])
def test_a_gzip_of_anything_but_a_capture_is_415(svc, content):
    is_error(post_capture(svc.api, gzip.compress(content), "x.pcap.gz"), 415, "unsupported_media_type")
    is_error(post_capture(svc.api, b"\x1f\x8b\x08\x00broken", "y.pcap.gz"), 415, "unsupported_media_type")
    assert check_store(svc.store, svc.api) == {}


def test_tokens_expire_are_listed_and_revoked_and_auto_never_reopens(svc):
    from ackreplay.core.db import session_scope
    from ackreplay.core.owners import create_token

    assert svc.api.get("/api/v1/captures").status_code == 200  # auto: open while no token exists
    alice = {"Authorization": f"Bearer {_token('alice')}"}
    with session_scope() as session:
        _, stale = create_token(session, "bob", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    is_error(svc.api.get("/api/v1/captures", headers={"Authorization": f"Bearer {stale}"}), 401, "invalid_token")
    assert svc.api.get("/api/v1/captures", headers=alice).status_code == 200
    listing = CliRunner().invoke(cli_app, ["token", "list"])
    assert listing.exit_code == 0
    states = {line.split("\t")[1]: line.split("\t")[-1] for line in listing.stdout.splitlines()[1:]}
    assert states == {"alice": "active", "bob": "expired"}
    plain = alice["Authorization"][7:]
    assert plain not in listing.stdout and plain[:10] + "…" in listing.stdout  # only prefixes are shown
    expiring = CliRunner().invoke(cli_app, ["token", "create", "carol", "--expires", "90d"])
    assert expiring.exit_code == 0
    assert CliRunner().invoke(cli_app, ["token", "create", "dave", "--expires", "soon"]).exit_code == 2
    res = CliRunner().invoke(cli_app, ["token", "revoke", "alice"])
    assert res.exit_code == 0 and "revoked 1 token" in res.stdout
    assert CliRunner().invoke(cli_app, ["token", "revoke", "nobody"]).exit_code == 4
    is_error(svc.api.get("/api/v1/captures", headers=alice), 401, "invalid_token")
    CliRunner().invoke(cli_app, ["token", "revoke", "carol"])
    is_error(svc.api.get("/api/v1/captures"), 401, "token_required")  # every token revoked: still closed


def test_metrics_are_behind_a_token_unless_made_public(tmp_path, postgres_server):
    with service(tmp_path, postgres_server) as s:
        token = {"Authorization": f"Bearer {_token('alice')}"}
        is_error(s.api.get("/api/v1/metrics"), 401, "token_required")
        is_error(s.api.get("/api/v1/metrics", headers={"Authorization": "Bearer nope"}), 401, "invalid_token")
        assert s.api.get("/api/v1/metrics", headers=token).status_code == 200
    with service(tmp_path, postgres_server, ACKREPLAY_PUBLIC_METRICS="true") as s:
        _token("alice")
        assert s.api.get("/api/v1/metrics").status_code == 200


def test_made_up_methods_do_not_grow_the_metrics(tmp_path):
    """Requests were counted under the method they sent: 500 made-up methods (no token needed, each a 405) made
    850 kB more of /metrics and as many label sets in memory, for good. Unknown methods count as ``other``."""
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data"), "ACKREPLAY_PUBLIC_METRICS": "true"}):
        api = client()
        api.request("BREW", "/api/v1/captures")
        before = api.get("/api/v1/metrics").text
        answers = {api.request(f"ZZ{i:04d}", "/api/v1/captures").status_code for i in range(300)}
        after = api.get("/api/v1/metrics").text
    assert answers == {405}
    assert 'method="ZZ' not in after and 'method="BREW' not in after
    assert re.search(r'method="other",route="[^"]*captures",status="405"', after), after[-2000:]
    assert len(after.splitlines()) - len(before.splitlines()) < 40, len(after) - len(before)


def test_csv_exports_are_formula_safe(tmp_path):
    from ackreplay.core.capture_batches import scoreboard_csv
    from ackreplay.core.capture_scoring import csv_cell

    # (the score CSV's one text a user chose is the file name: cli.score_csv passes it through csv_cell)
    assert csv_cell('=HYPERLINK("http://evil")') == '\'=HYPERLINK("http://evil")' and csv_cell(-0.5) == -0.5
    board = {"scores": {"@sum": {"better": "min", "ranked": True, "estimators": {
        "+x": {"mean": -1.0, "median": None, "wins": 0, "flows": 1}}}}}
    assert scoreboard_csv(board).splitlines()[1].startswith("'@sum,min,True,'+x,-1.0,")
    script = ("import { toCsv } from './api/dashboard/js/util.js';"
              "process.stdout.write(toCsv([{key: 'a', label: 'a'}, {key: 'b', label: 'b'}],"
              " [{a: '=1+1', b: -2}, {a: '\\tcmd', b: '@x'}, {a: '-x', b: '\\r'}]));")
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode()
    assert out.split("\n") == ["a,b", "'=1+1,-2", "'\tcmd,'@x", "'-x,\"'\r\"", ""]


# ------------------------------------------------------------------ 8. client mistakes, bounded answers, storage
# (no 5xx for a client mistake; answers that stay small however large a run; quotas that bound what an owner
# stores)


def _run(api: Any, body: Any) -> Any:
    text = body if isinstance(body, str) else json.dumps(body)
    return api.post("/api/v1/runs", content=text, headers={"content-type": "application/json"})


def test_mistakes_in_a_run_are_4xx_with_their_code(svc):
    body = post_capture(svc.api, tcp_capture(50)).json()
    cid = body["capture"]["id"]
    wait_run(svc.api, body["run_id"], timeout=60)
    before = check_store(svc.store, svc.api)
    runs_before = svc.api.get("/api/v1/runs").json()
    deep = ['{"captures": ["' + cid + '"], "estimators": [{"name": "re", "parameters": {"tau": '
            + "[" * depth + "]" * depth + "}}]}" for depth in (20, 900, 5000, 100_000)]
    wide = {f"p{i}": list(range(200)) for i in range(100)}  # 20 100 values in one estimator's parameters
    re_ = {"name": "re", "parameters": {"tau": [0.25, 0.5]}}
    cases: list[tuple[Any, int, str]] = [
        *[(text, 422, "invalid_request") for text in deep],
        ({"captures": [cid], "estimators": [{"name": "re", "parameters": wide}]}, 422, "invalid_request"),
        *[({"captures": [cid], "estimators": [{"name": "re", "parameters": {"tau": r}}]}, 422, "too_many_variants")
          for r in ("0:1e308:1e-308", "-1e308:1e308:1", "0:1:5e-324", "0:1e300:1e-10")],
        ({"captures": [cid], "estimators": [re_, {"name": "re", "parameters": {"tau": [1, 2]}}]}, 422,
         "duplicate_estimator"),
        ({"captures": [cid], "estimators": ["re", "re"]}, 422, "duplicate_estimator"),
        ({"captures": [cid], "estimators": ["be", re_, "re"]}, 422, "duplicate_estimator"),
        # an integer no float holds (JSON allows 4 300 digits): an overflow inside validation was a 500
        *[(f'{{"captures": ["{cid}"], "estimators": [{{"name": "{n}", "parameters": {{"{p}": {v}}}}}]}}', 422,
           "invalid_parameter")
          for n, p in (("re", "tau"), ("bbr_bw", "rtt_window")) for v in ("9" * 400, "-" + "9" * 4000)],
    ]
    for b, status, code in cases:
        is_error(_run(svc.api, b), status, code)
    assert svc.api.get("/api/v1/runs").json() == runs_before  # nothing started
    assert check_store(svc.store, svc.api) == before
    assert _run(svc.api, {"captures": [cid], "estimators": ["default", "re"]}).status_code == 202  # a group: fine


def test_thirty_runs_in_a_row_meet_the_default_burst(tmp_path, postgres_server):
    """30 POST /runs in a row: with the default burst (the rate slowed down so that no token comes back while
    the test runs) the first 20 runs, the upload's included, start; the rest are 429 rate_limited with
    Retry-After, and keep nothing."""
    with service(tmp_path, postgres_server, ACKREPLAY_RUN_RATE_PER_MINUTE="0.001") as s:
        body = post_capture(s.api, tcp_capture(55)).json()
        wait_run(s.api, body["run_id"], timeout=60)
        answers = [_run(s.api, {"captures": [body["capture"]["id"]], "estimators": ["be"]}) for _ in range(30)]
        assert [r.status_code for r in answers] == [202] * 19 + [429] * 11
        for r in answers[19:]:
            is_error(r, 429, "rate_limited")
            assert int(r.headers["Retry-After"]) >= 1, r.headers
        assert len(s.api.get("/api/v1/runs").json()) == 20
        for r in answers[:19]:
            wait_run(s.api, r.json()["run_id"], timeout=120)
        check_store(s.store, s.api)


def test_a_body_without_a_length_stops_at_what_is_left_of_the_quota(tmp_path, postgres_server):
    """An owner with a few MB left sends a body of 300 MiB without Content-Length: it is cut where the quota
    ends (plus the multipart framing), not at the 2 GiB upload limit; announced, it is refused unread."""
    from ackreplay.api.app import create_app

    with service(tmp_path, postgres_server, ACKREPLAY_QUOTA_BYTES=str(3 << 20)) as s:
        body = post_capture(s.api, tcp_capture(51)).json()
        wait_run(s.api, body["run_id"], timeout=60)
        before = check_store(s.store, s.api)
        left = s.api.get("/api/v1/quota").json()["remaining_bytes"]
        app, multipart = create_app(), {"content-type": "multipart/form-data; boundary=x"}
        for path in ("/api/v1/captures", "/api/v1/batches"):
            field = PART if path.endswith("batches") else PART.replace(b'name="files"', b'name="file"')
            status, answer, reads = _asgi(app, path, multipart, chunks=4800, chunk=b"\0" * (64 << 10), first=field)
            assert (status, answer["error"]) == (413, "quota_exceeded"), answer
            assert reads <= (left + (1 << 20)) // (64 << 10) + 3, reads  # not 4 800
            status, answer, reads = _asgi(app, path, {**multipart, "content-length": str(300 << 20)})
            assert (status, answer["error"], reads) == (413, "quota_exceeded", 0)
        assert check_store(s.store, s.api) == before


def test_results_count_against_the_quota(tmp_path, postgres_server):
    """Sweep runs write series and rows many times a capture's size: they are charged to the owner's quota
    (GET /quota shows captures and results apart), a run whose results do not fit fails its capture with
    quota_exceeded keeping none of them, and with nothing left a new run is refused."""
    with service(tmp_path, postgres_server, ACKREPLAY_QUOTA_BYTES=str(50 << 20)) as s:
        body = post_capture(s.api, tcp_capture(52, segments=200)).json()
        cid = body["capture"]["id"]
        assert wait_run(s.api, body["run_id"], timeout=60)["status"] == "succeeded"
        first = s.api.get("/api/v1/quota").json()
        assert first["derived_bytes"] > 0 and first["used_bytes"] == first["capture_bytes"] + first["derived_bytes"]
        sweep = {"captures": [cid], "estimators": [{"name": "re", "parameters": {"tau": "0.1:6.4:0.1"}}]}
        run = wait_run(s.api, _run(s.api, sweep).json()["run_id"], timeout=120)
        assert run["status"] == "succeeded", run
        per_sweep = s.api.get("/api/v1/quota").json()["derived_bytes"] - first["derived_bytes"]
        assert per_sweep > 0
        quota = s.api.get("/api/v1/quota").json()["used_bytes"] + per_sweep * 3 // 2  # room for one more sweep
        assert CliRunner().invoke(cli_app, ["quota", "set", "local", str(quota)]).exit_code == 0
        states = []
        for _ in range(4):
            run = wait_run(s.api, _run(s.api, sweep).json()["run_id"], timeout=120)
            states.append((run["status"], run["captures"][0]["error_code"]))
            q = s.api.get("/api/v1/quota").json()
            assert q["used_bytes"] <= quota, q
            check_store(s.store, s.api)
        assert states == [("succeeded", None)] + [("failed", "quota_exceeded")] * 3, states
        shown = CliRunner().invoke(cli_app, ["quota", "show", "local"])
        assert f"{q['derived_bytes']} in their results" in shown.stdout, shown.stdout
        assert CliRunner().invoke(cli_app, ["quota", "set", "local", str(q["used_bytes"])]).exit_code == 0
        is_error(_run(s.api, sweep), 413, "quota_exceeded")  # nothing left: refused before it starts
        is_error(post_capture(s.api, tcp_capture(53)), 413, "quota_exceeded")
        # deleting the capture frees it and everything derived from it
        assert s.api.delete(f"/api/v1/captures/{cid}").status_code == 204
        assert s.api.get("/api/v1/quota").json()["used_bytes"] == 0
        check_store(s.store, s.api)


def test_an_archive_member_is_refused_by_its_first_bytes(tmp_path, postgres_server):
    """A zip member of 64 MiB that is not a capture is refused after its first bytes: were it decompressed
    in full before its magic was checked, the archive's 1 MiB budget would reject the whole batch."""
    good = tcp_capture(54)
    with service(tmp_path, postgres_server, ACKREPLAY_MAX_ARCHIVE_BYTES=str(len(good) + (1 << 20))) as s:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("zeros.bin", b"\0" * (64 << 20))
            zf.writestr("a.pcap", good)
            zf.writestr("zeros.pcap.gz", gzip.compress(b"\0" * (16 << 20)))  # a gzip of no capture, 16 MiB inside
        r = s.api.post("/api/v1/batches", files=[("files", ("bomb.zip", buf.getvalue()))])
        assert r.status_code == 202, r.text
        assert [(x["name"], x["error"]) for x in r.json()["rejected"]] == [
            ("zeros.bin", "unsupported_media_type"), ("zeros.pcap.gz", "unsupported_media_type")]
        assert len(r.json()["captures"]) == 1 and r.json()["rejected_total"] == 2
        wait_run(s.api, r.json()["run_id"], timeout=60)
        check_store(s.store, s.api)


def test_run_status_batches_and_documents_answer_a_page_at_a_time(svc, monkeypatch):
    from ackreplay.core import run_document

    files = [("files", (f"{i}.pcap", tcp_capture(60 + i))) for i in range(3)]
    files += [("files", (f"{i}.txt", b"not a capture %d" % i)) for i in range(2)]
    r = svc.api.post("/api/v1/batches", files=files)
    assert r.status_code == 202, r.text
    batch_id, run_id = r.json()["batch_id"], r.json()["run_id"]
    wait_run(svc.api, run_id, timeout=120)
    page = svc.api.get(f"/api/v1/batches/{batch_id}", params={"limit": 2}).json()
    assert (len(page["captures"]), page["captures_total"]) == (2, 3)
    assert (len(page["rejected"]), page["rejected_total"]) == (2, 2)
    assert len(page["run"]["captures"]) == 2 and page["run"]["captures_total"] == 3
    rest = svc.api.get(page["next"]).json()
    assert page["captures"] + rest["captures"] == r.json()["captures"] and rest["next"] is None
    listed = svc.api.get("/api/v1/runs").json()  # each run of the list names its first 100 captures, counts all
    assert [(r["captures_total"], len(r["captures"])) for r in listed if r["id"] == run_id] == [(3, 3)]
    monkeypatch.setattr("ackreplay.core.run_views.STATUS_PAGE", 2)
    (mine,) = [r for r in svc.api.get("/api/v1/runs").json() if r["id"] == run_id]
    assert (mine["captures_total"], mine["capture_names"]) == (3, ["0.pcap", "1.pcap"])
    monkeypatch.undo()
    status = svc.api.get(f"/api/v1/runs/{run_id}", params={"limit": 1}).json()
    assert len(status["captures"]) == 1 and status["next"] == f"/api/v1/runs/{run_id}?offset=1&limit=1"
    is_error(svc.api.get(f"/api/v1/runs/{run_id}", params={"limit": 5000}), 422, "invalid_request")
    # each capture is read on its own, whichever page lists it: the last one, off the first page of 1
    last = svc.api.get(f"/api/v1/runs/{run_id}", params={"offset": 2, "limit": 1}).json()["captures"][0]
    assert last["capture_id"] not in {c["capture_id"] for c in status["captures"]}
    assert svc.api.get(f"/api/v1/runs/{run_id}/captures/{last['capture_id']}").json() == last
    is_error(svc.api.get(f"/api/v1/runs/{run_id}/captures/{'e' * 32}"), 404, "capture_not_found")
    is_error(svc.api.get(f"/api/v1/runs/{'e' * 32}/captures/{last['capture_id']}"), 404, "run_not_found")
    # a capture that skipped 200 000 flows: the status shows the first 100 and counts the rest by reason
    cid = status["captures"][0]["capture_id"]
    skipped = {str(i): f"vantage receiver: {i} RTT samples" if i % 2 else "fewer than two ACKs" for i in range(200_000)}
    with psycopg.connect(svc.db) as conn:
        conn.execute("update run_captures set skipped = %s where run_id = %s and capture_id = %s",
                     (json.dumps(skipped), run_id, cid))
    answer = svc.api.get(f"/api/v1/runs/{run_id}")
    assert len(answer.content) < 50_000, len(answer.content)
    (mine,) = [c for c in answer.json()["captures"] if c["capture_id"] == cid]
    assert mine["skipped_total"] == 200_000 and list(mine["skipped_flows"])[:2] == ["0", "1"]
    assert len(mine["skipped_flows"]) == 100
    assert mine["skipped_counts"] == {"vantage receiver": 100_000, "fewer than two ACKs": 100_000}
    assert svc.api.get(f"/api/v1/runs/{run_id}/captures/{cid}").json() == mine
    tail = svc.api.get(f"/api/v1/runs/{run_id}/captures/{cid}/skipped", params={"offset": 199_990}).json()
    assert [x["flow_id"] for x in tail["items"]] == list(range(199_990, 200_000)) and tail["next"] is None
    is_error(svc.api.get(f"/api/v1/runs/{run_id}/captures/{'e' * 32}/skipped"), 404, "capture_not_found")
    # the document streams a page of flows at a time: pieces of one flow each here, equal once joined
    whole = svc.api.get(f"/api/v1/runs/{run_id}/document")
    assert whole.headers["x-total-count"] == "3" and "link" not in whole.headers
    monkeypatch.setattr(run_document, "PAGE_FLOWS", 1)
    pieces = list(run_document.document_chunks(run_id))
    flows = sum(len(c["flows"]) for c in whole.json()["captures"])
    assert flows >= 3 and len(pieces) >= flows + 2 * 3 + 2
    assert json.loads(b"".join(pieces)) == whole.json()
    sliced = svc.api.get(f"/api/v1/runs/{run_id}/document", params={"offset": 1, "limit": 1})
    assert sliced.json()["captures"] == whole.json()["captures"][1:2]
    assert sliced.headers["link"] == f'</api/v1/runs/{run_id}/document?offset=2&limit=1>; rel="next"'
    check_store(svc.store, svc.api)


def test_a_run_names_its_first_failed_captures_and_counts_the_rest(svc, monkeypatch):
    monkeypatch.setattr("ackreplay.core.run_tasks.ingest_capture", _raiser(ValueError("broken")))
    files = [("files", (f"{i}.pcap", tcp_capture(70 + i, segments=2))) for i in range(25)]
    r = svc.api.post("/api/v1/batches", files=files)
    run = wait_run(svc.api, r.json()["run_id"], timeout=120)
    assert run["status"] == "failed" and run["error"].count("capture ") == 20, run["error"]
    assert run["error"].endswith("and 5 more failed captures")
    check_store(svc.store, svc.api)
