"""The service embedded (SQLite, local store, in-process worker): the whole API through HTTP."""

from __future__ import annotations

import io
import struct

import polars as pl
import pytest

from ackreplay.core.db import session_scope
from ackreplay.core.owners import create_token
from tests import pcapgen as g
from tests.conftest import ROOT, SHARED
from tests.service.harness import cli_document, client, configured, same_scores, upload, wait_run

SAMPLE = ROOT / "samples" / "sample.pcap"
S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"
TRUTH = "bottleneck=10Mbit,shared_by=all"


@pytest.fixture
def api(tmp_path):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data"), "ACKREPLAY_MAX_DECOMPRESSED_BYTES": str(8 << 20)}):
        yield client()


def _corrupt_pcapng() -> bytes:
    data = bytearray(g.pcapng([g.Rec(1, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", g.tcp_header(1, 2, 0, 0, g.ACK))))]))
    first_epb = struct.unpack("<I", data[4:8])[0] + struct.unpack("<I", data[28 + 4 : 28 + 8])[0]
    data[first_epb + 4 : first_epb + 8] = struct.pack("<I", 0x7FFFFFF0)
    return bytes(data)


def _gzip_bomb() -> bytes:
    import zlib

    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    return co.compress(g.pcap([])) + b"".join(co.compress(b"\0" * (1 << 20)) for _ in range(32)) + co.flush()


def test_upload_run_and_exactly_the_cli_scores(api):
    r = upload(api, S09, truth=TRUTH, tags="lab,two-flows", name="s09")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["created"] and body["capture"]["format"] == "pcap" and body["capture"]["tags"] == ["lab", "two-flows"]
    run = wait_run(api, body["run_id"])
    assert run["status"] == "succeeded" and run["progress"]["tasks_done"] == run["progress"]["tasks_total"] >= 2
    assert run["timings_s"]["ingest"] > 0
    doc = api.get(f"/api/v1/runs/{body['run_id']}/document").json()
    same_scores(doc, cli_document(S09, "--truth", TRUTH))


def test_ingest_within_a_small_memory_budget_gives_the_same_document(tmp_path):
    """A worker with a 1 MiB ingest budget spills the capture and analyses it in connection groups; the
    run's document still equals the CLI's (in memory) exactly."""
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data"), "ACKREPLAY_INGEST_MEMORY_BUDGET_MB": "1"}):
        c = client()
        body = upload(c, S09, truth=TRUTH).json()
        assert wait_run(c, body["run_id"])["status"] == "succeeded"
        capture = c.get(f"/api/v1/captures/{body['capture']['id']}").json()
        assert capture["stats"]["spilled"] and capture["stats"]["connection_groups"] > 1
        same_scores(c.get(f"/api/v1/runs/{body['run_id']}/document").json(), cli_document(S09, "--truth", TRUTH))


def test_same_bytes_again_return_the_existing_capture(api):
    first = upload(api, SAMPLE).json()
    again = upload(api, SAMPLE)
    assert again.status_code == 200 and not again.json()["created"]
    assert again.json()["capture"]["id"] == first["capture"]["id"] and again.json()["run_id"] is None
    wait_run(api, first["run_id"])


def test_listing_flows_acks_series_decisions_scores_and_delete(api, tmp_path):
    body = upload(api, SAMPLE, tags="demo").json()
    cid, run_id = body["capture"]["id"], body["run_id"]
    wait_run(api, run_id)
    page = api.get("/api/v1/captures", params={"tag": "demo"}).json()
    assert page["total"] == 1 and page["items"][0]["status"] == "ingested"
    assert api.get("/api/v1/captures", params={"tag": "other"}).json()["total"] == 0
    flows = api.get(f"/api/v1/captures/{cid}/flows").json()["items"]
    assert [f["flow_id"] for f in flows] == [0, 1, 2] and flows[2]["retransmissions"] == 49
    first = api.get(f"/api/v1/captures/{cid}/flows", params={"limit": 2}).json()  # a page at a time
    assert [f["flow_id"] for f in first["items"]] == [0, 1] and first["total"] == 3
    rest = api.get(first["next"]).json()
    assert rest["items"] == flows[2:] and rest["next"] is None and rest["offset"] == 2
    acks = api.get(f"/api/v1/captures/{cid}/flows/2/acks")
    frame = pl.read_parquet(io.BytesIO(acks.content))
    assert len(frame) == flows[2]["acks"] and "rtt" in frame.columns
    assert api.get(f"/api/v1/captures/{cid}/flows/2/acks", params={"format": "csv"}).text.startswith("t_ns,")
    series = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/series",
                     params={"points": 100, "estimators": "be,re"}).json()
    assert series["columns"] == ["t", "t_rel", "achieved_bps", "be_bps", "re_bps"] and 100 <= series["rows"] <= 101
    assert len(series["data"]) == series["rows"] and set(series["data"][-1]) == set(series["columns"])
    full = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/series", params={"format": "parquet"})
    assert pl.read_parquet(io.BytesIO(full.content)).height == len(set(frame["t_ns"].to_list()))
    whole = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/decisions").json()
    decisions = whole["items"]
    assert len(decisions) == whole["total"] == 39 * 10 and whole["next"] is None
    assert {"ssthresh_segments", "ideal_segments"} <= set(decisions[0])
    paged, url = [], f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/decisions?limit=100"
    while url:  # following `next` gives every decision once, in the same order
        page = api.get(url).json()
        paged += page["items"]
        url = page["next"]
    assert paged == decisions
    # why the estimates are what they are (§7): the same diagnostics as the CLI's document
    diag = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/diagnostics").json()
    assert diag["ack_compression_share"] > 0.01 and len(diag["largest_samples"]) == 3
    assert {s["cause"] for s in diag["largest_samples"]} == {"ack_compression"}
    assert all(c["congestion"] + c["random"] == 39 for c in diag["loss_classes"].values())
    (cli_flow,) = [f for f in cli_document(SAMPLE)["captures"][0]["flows"] if f["flow_id"] == 2]
    assert diag == cli_flow["diagnostics"]
    # the path (§9): the same as the CLI's, with the seeds' models; the flow is alone on its bottleneck
    path = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/path").json()
    assert path == {"path": cli_flow["path"], "path_models": cli_flow["path_models"], "path_group": None}
    assert 9e6 < path["path"]["capacity_bps"] < 11e6
    # its losses were random (1 %), never at a full queue: no buffer, so no model on it
    assert path["path"]["buffer_over_bdp"] is None and path["path_models"] is None
    # what limited the sender: the CLI's shares, and the intervals they are the lengths of
    limits = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/limits").json()
    assert limits["shares"] == cli_flow["limits"] and sum(limits["shares"].values()) == pytest.approx(1)
    lengths: dict[str, float] = {}
    for a, b, label in limits["intervals"]:
        lengths[label] = lengths.get(label, 0.0) + b - a
    span = limits["intervals"][-1][1] - limits["intervals"][0][0]
    assert {k: v / span for k, v in lengths.items()} == pytest.approx(
        {k: v for k, v in limits["shares"].items() if v > 0})
    # the congestion graph: the whole flow thinned per pixel, a short window at full resolution
    graph_url = f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/graph"
    whole = api.get(graph_url, params={"px": 100}).json()
    assert not whole["full_resolution"] and whole["window"] == whole["t_span"]
    assert len(whole["sequence"]["ack"]["t"]) <= 4 * 100 + 2 < flows[2]["acks"]
    assert max(whole["rates"]["be"]["y"]) == pytest.approx(full_max := pl.read_parquet(
        io.BytesIO(full.content))["be_bps"].max(), abs=1)  # BE's spike survives the thinning
    assert full_max > whole["y_top"] and max(whole["clipped"]["be"]["y"]) == pytest.approx(full_max, abs=1)
    assert len(whole["flight"]["estimators"]["abse"]["ssthresh"]) == 39 and whole["episodes"]
    t0, t1 = 1.0, 1.2
    short = api.get(graph_url, params={"t0": t0, "t1": t1, "px": 1000}).json()
    in_window = frame.filter((pl.col("t_rel") >= t0) & (pl.col("t_rel") <= t1)).height
    assert short["full_resolution"] and sum(t0 <= t <= t1 for t in short["sequence"]["ack"]["t"]) == in_window
    assert api.get(graph_url, params={"px": 10}).json()["error"] == "invalid_request"
    assert api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/9/graph").json()["error"] == "results_not_found"
    scores = api.get(f"/api/v1/runs/{run_id}/scores", params={"flow": 2, "sort": "mean_abs_rel_error"}).json()
    errs = [r["mean_abs_rel_error"] for r in scores["items"]]
    assert scores["total"] == 10 and errs == sorted(errs)
    assert {(r["vantage"], r["reconstruction"]) for r in scores["items"]} == {("sender", None)}
    board = api.get("/api/v1/leaderboard", params={"runs": run_id}).json()
    assert board["flows"] == 1 and board["incomparable"] == 0  # bulk flows only: the control connection left out
    # over the time the network limited the sender (97 % of flow 2 since the limits' rule 4 counts an ACK that SACKs
    # new data as a duplicate: RFC 6675): TIBET first (0.072), TIBET-tx second (0.080), Westwood+ third (0.082)
    ranks = {n: e.get("rank") for n, e in board["scores"]["mean_abs_rel_error"]["estimators"].items()}
    assert ranks["tibet"] == 1 and ranks["tibet_tx"] == 2 and ranks["westwood_plus"] == 3, ranks
    closer = board["scores"]["closer_than_newreno_share"]["estimators"]
    assert "rank" not in closer["newreno"] and closer["newreno"]["mean"] is None  # NewReno vs itself: undefined
    assert api.delete(f"/api/v1/captures/{cid}").status_code == 204
    assert api.get(f"/api/v1/captures/{cid}").json()["error"] == "capture_not_found"
    assert api.get(f"/api/v1/runs/{run_id}/scores").json()["total"] == 0
    assert not (tmp_path / "data" / "store" / "captures" / cid).exists()


def test_post_runs_with_parameters(api):
    cid = upload(api, SAMPLE).json()["capture"]["id"]
    r = api.post("/api/v1/runs", json={"captures": [cid], "estimators": ["be", {"name": "abse",
                                                                                 "parameters": {"N": 12}}]})
    assert r.status_code == 202 and r.json()["url"] == f"/api/v1/runs/{r.json()['run_id']}"
    run = wait_run(api, r.json()["run_id"])
    assert run["estimators"][1] == {"name": "abse", "parameters": {"beta": 0.6, "N": 12.0}}
    rows = api.get(f"/api/v1/runs/{run['id']}/scores", params={"estimator": "abse"}).json()["items"]
    assert rows and all(r["parameters"]["N"] == 12.0 for r in rows)


def test_highspeed_group_through_the_api(api):
    """A run with the group word ``highspeed``: the §8 controls' loss-event scores and decisions in the results,
    their estimates none (null), never 0; the catalogue describes them as decision-only."""
    cid = upload(api, ROOT / "tests" / "data" / "ns3" / "cubic_1f_bdp1.pcap.gz").json()["capture"]["id"]
    r = api.post("/api/v1/runs", json={"captures": [cid], "estimators": ["highspeed"]})
    assert r.status_code == 202, r.text
    run = wait_run(api, r.json()["run_id"])
    assert [e["name"] for e in run["estimators"]] == ["newreno", "stcp", "hstcp", "htcp", "westwood_plus", "bic",
                                                     "cubic"]
    rows = api.get(f"/api/v1/runs/{run['id']}/scores", params={"estimator": "cubic"}).json()["items"]
    bulk = max(rows, key=lambda x: x["decisions"] or 0)
    assert bulk["mean_bps"] is None and bulk["decisions"] > 0 and bulk["ssthresh_over_ideal_median"] > 0
    dec = api.get(f"/api/v1/runs/{run['id']}/captures/{cid}/flows/{bulk['flow_id']}/decisions",
                  params={"limit": 10_000}).json()["items"]
    cubic = [d for d in dec if d["estimator"] == "cubic"]
    assert len(cubic) == bulk["decisions"] and all(d["estimate_bps"] is None and d["ssthresh_segments"] for d in cubic)
    cat = {c["name"]: c for c in api.get("/api/v1/estimators").json()}
    assert not cat["cubic"]["has_series"]
    beta = next(p for p in cat["cubic"]["parameters"] if p["name"] == "beta")
    assert beta["default"] == 0.7 and beta["alternatives"] == {"linux": 717 / 1024, "buffer_study": 0.8}


@pytest.mark.parametrize("estimators,code", [
    (["vegas"], "unknown_estimator"),
    ([{"name": "abse", "parameters": {"M": 1}}], "unknown_parameter"),
    ([{"name": "be", "parameters": {"tau": -1}}], "parameter_out_of_range"),
])
def test_bad_runs_are_422_with_a_code(api, estimators, code):
    cid = upload(api, SAMPLE).json()["capture"]["id"]
    r = api.post("/api/v1/runs", json={"captures": [cid], "estimators": estimators})
    assert r.status_code == 422 and r.json()["error"] == code


@pytest.mark.parametrize("data,status,code", [
    (b"", 400, "empty_upload"),
    (bytes(range(256)) * 4, 415, "unsupported_media_type"),
    (b"this is a text file, not a capture\n" * 20, 415, "unsupported_media_type"),
])
def test_bad_uploads(api, data, status, code):
    r = api.post("/api/v1/captures", files={"file": ("x.pcap", data)})
    assert r.status_code == status and r.json()["error"] == code
    assert api.get("/api/v1/captures").json()["total"] == 0  # nothing stored half-way


def test_upload_without_a_file_or_with_a_wrong_content_type(api):
    assert api.post("/api/v1/captures", json={"file": "x"}).json()["error"] == "invalid_request"
    assert api.post("/api/v1/captures", data={"name": "x"}).status_code == 422


def test_invalid_truth_is_422(api):
    r = upload(api, SAMPLE, truth="bottleneck=fast")
    assert r.status_code == 422 and r.json()["error"] == "invalid_truth"


@pytest.mark.parametrize("capture,code", [
    (g.pcap([]) + struct.pack("<IIII", 1, 0, 0x80000000, 60), "corrupt_capture"),
    (g.pcap([g.Rec(1, b"\0" * 60)], linktype=147), "unsupported_link_type"),
    (_corrupt_pcapng(), "corrupt_capture"),
    (_gzip_bomb(), "decompressed_too_large"),
])
def test_broken_capture_fails_its_run_with_a_readable_error(api, tmp_path, capture, code):
    path = tmp_path / "broken.pcap"
    path.write_bytes(capture)
    body = upload(api, path).json()
    run = wait_run(api, body["run_id"])
    assert run["status"] == "failed" and run["captures"][0]["error_code"] == code and run["error"]
    cap = api.get(f"/api/v1/captures/{body['capture']['id']}").json()
    assert cap["status"] == "failed" and cap["error_code"] == code


def test_truncated_capture_is_ingested_with_a_warning(api, tmp_path):
    path = tmp_path / "cut.pcap"
    path.write_bytes(SAMPLE.read_bytes()[:-40])
    body = upload(api, path).json()
    assert wait_run(api, body["run_id"])["status"] == "succeeded"
    stats = api.get(f"/api/v1/captures/{body['capture']['id']}").json()["stats"]
    assert "truncated at byte" in " ".join(stats["warnings"])


def test_upload_size_limit(tmp_path):
    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "d"), "ACKREPLAY_MAX_UPLOAD_BYTES": "100000"}):
        c = client()
        r = upload(c, SAMPLE)
        assert r.status_code == 413 and r.json()["error"] == "upload_too_large"
        assert c.get("/api/v1/captures").json()["total"] == 0


def test_tokens_and_owners(api):
    with session_scope() as s:
        _, alice = create_token(s, "alice")
        _, bob = create_token(s, "bob")
    assert api.get("/api/v1/captures").json()["error"] == "token_required"  # no longer open once tokens exist
    assert api.get("/api/v1/captures", headers={"Authorization": "Bearer nope"}).json()["error"] == "invalid_token"
    a = {"Authorization": f"Bearer {alice}"}
    b = {"Authorization": f"Bearer {bob}"}
    body = upload(api, SAMPLE, headers=a).json()
    wait_run(api, body["run_id"], headers=a)
    cid = body["capture"]["id"]
    assert api.get(f"/api/v1/captures/{cid}", headers=b).status_code == 404
    assert api.get(f"/api/v1/runs/{body['run_id']}", headers=b).status_code == 404
    r = api.post("/api/v1/runs", json={"captures": [cid]}, headers=b)
    assert r.status_code == 404 and r.json()["error"] == "capture_not_found"
    assert api.get("/api/v1/captures", headers=b).json()["total"] == 0
    again = upload(api, SAMPLE, headers=b)  # the same bytes are a new capture for another owner
    assert again.status_code == 201
    wait_run(api, again.json()["run_id"], headers=b)


def test_catalogue_health_ready_metrics_openapi(api):
    cat = api.get("/api/v1/estimators").json()
    assert {c["name"] for c in cat} >= {"be", "abse", "westwood_plus"} and cat[0]["parameters"]
    assert api.get("/api/v1/health").json() == {"status": "ok"}
    ready = api.get("/api/v1/ready").json()
    assert ready["status"] == "ready" and ready["checks"] == {"database": "ok", "broker": "embedded", "storage": "ok"}
    assert "ackreplay_request_seconds" in api.get("/api/v1/metrics").text
    spec = api.get("/api/v1/openapi.json").json()
    assert "/api/v1/captures" in spec["paths"] and "/api/v1/runs/{run_id}/document" in spec["paths"]


def test_batch_of_files_and_archives_with_a_scoreboard(api, tmp_path):
    import tarfile
    import zipfile

    z = tmp_path / "two.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(SAMPLE, "a/sample.pcap")
        zf.writestr("README.txt", "not a capture")
    t = tmp_path / "one.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        tf.add(SHARED / "generated" / "s08_cubic_1f_2M_rtt200_buf1bdp.pcap", "s08.pcap")
    parts = [(z.name, z.read_bytes()), (t.name, t.read_bytes()), (S09.name, S09.read_bytes()),
             ("dup.pcap", SAMPLE.read_bytes())]
    r = api.post("/api/v1/batches", files=[("files", p) for p in parts], data={"name": "lab week"})
    assert r.status_code == 202, r.text
    body = r.json()
    assert len(body["captures"]) == 3  # the sample twice is one capture
    assert body["rejected"] == [{"name": "README.txt", "error": "unsupported_media_type",
                                 "detail": body["rejected"][0]["detail"]}]
    run = wait_run(api, body["run_id"])
    assert run["status"] == "succeeded" and len(run["captures"]) == 3
    board = api.get(f"/api/v1/batches/{body['batch_id']}/scoreboard").json()
    assert board["captures"] == 3 and board["flows"] >= 4
    assert [e["place"] for e in board["ranking"]] == list(range(1, 11))
    be = board["scores"]["mean_abs_rel_error"]["estimators"]["be"]
    assert be["flows"] == board["flows"] and be["rank"] >= 8  # BE over-estimates everywhere
    csv_text = api.get(f"/api/v1/batches/{body['batch_id']}/scoreboard", params={"format": "csv"}).text
    assert csv_text.splitlines()[0] == ("score,better,ranked,estimator,mean,median,q1,q3,ci_low,ci_high,rank,ties,"
                                        "wins,flows")
    # the statistics: an interval around each median, resampling the captures; under 10 flows, a warning
    assert be["ci"][0] <= be["median"] <= be["ci"][1] and board["resampled"] == "captures"
    assert (board["warning"] is not None) == (board["flows"] < board["min_flows"])
    assert api.get(f"/api/v1/batches/{body['batch_id']}").json()["run"]["status"] == "succeeded"


def test_batch_without_any_capture_is_422(api):
    r = api.post("/api/v1/batches", files=[("files", ("notes.txt", b"hello"))])
    assert r.status_code == 422 and r.json()["error"] == "no_captures"
    assert api.get("/api/v1/captures").json()["total"] == 0


def test_many_concurrent_requests_never_wait_for_a_connection_while_holding_a_thread(tmp_path):
    """40 concurrent requests with only 2 worker threads: each request takes a database connection in a
    dependency, then needs a thread to run its handler. Without a cap on concurrent sessions, requests
    holding every connection waited for the threads while the threads waited for a connection — a
    deadlock until the pool's 30 s timeout (500s). With it, all 40 succeed at once."""
    import asyncio

    import anyio.to_thread
    import httpx

    from ackreplay.api.app import create_app

    async def main() -> list[int]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            async def one() -> int:
                return (await c.get("/api/v1/captures")).status_code

            return await asyncio.wait_for(asyncio.gather(*(one() for _ in range(40))), timeout=20)

    with configured({"ACKREPLAY_DATA_DIR": str(tmp_path / "data")}):
        client().get("/api/v1/captures")  # the local owner exists before the burst
        assert asyncio.run(main()) == [200] * 40


def test_results_off_the_sender_label_be_and_crb_and_the_leaderboard_leaves_them_out_unless_asked(api):
    """Issue #27: the receiver side of a testbed pair — BE and CRB carry ``not_reproducible`` in the score rows
    and the document, and the leaderboard counts them in ``left_out`` instead of ranking them."""
    body = upload(api, ROOT / "tests" / "data" / "pairs" / "asym_rcv.pcap.gz").json()
    run_id = body["run_id"]
    assert wait_run(api, run_id)["status"] == "succeeded"
    rows = api.get(f"/api/v1/runs/{run_id}/scores", params={"flow": 2}).json()["items"]
    assert {r["estimator"] for r in rows if r.get("not_reproducible")} == {"be", "crb"}
    assert all(r["vantage"] == "receiver" for r in rows)
    doc = api.get(f"/api/v1/runs/{run_id}/document").json()
    flow = next(f for f in doc["captures"][0]["flows"] if f["flow_id"] == 2)
    assert set(flow["diagnostics"]["not_reproducible"]) == {"be", "crb"}
    cid = doc["captures"][0]["capture_id"]
    diag = api.get(f"/api/v1/runs/{run_id}/captures/{cid}/flows/2/diagnostics").json()
    assert diag["ack_timing_seen_at"] == "receiver" and set(diag["not_reproducible"]) == {"be", "crb"}
    board = api.get("/api/v1/leaderboard", params={"runs": run_id}).json()
    assert board["left_out"] == {"be": 1, "crb": 1} and board["include_not_reproducible"] is False
    assert board["scores"]["composite_error"]["estimators"]["be"]["flows"] == 0
    asked = api.get("/api/v1/leaderboard", params={"runs": run_id, "include_not_reproducible": "true"}).json()
    assert asked["include_not_reproducible"] is True
    assert asked["scores"]["composite_error"]["estimators"]["be"]["flows"] == 1


def test_a_batch_scoreboard_leaves_be_and_crb_off_the_sender_out_unless_asked(api):
    pairs = ROOT / "tests" / "data" / "pairs"
    parts = [(p.name, p.read_bytes()) for p in (pairs / "asym.pcap.gz", pairs / "asym_rcv.pcap.gz")]
    body = api.post("/api/v1/batches", files=[("files", p) for p in parts], data={"name": "two ends"}).json()
    assert wait_run(api, body["run_id"])["status"] == "succeeded"
    board = api.get(f"/api/v1/batches/{body['batch_id']}/scoreboard").json()
    assert board["left_out"] == {"be": 1, "crb": 1} and board["flows"] == 2
    assert board["scores"]["composite_error"]["estimators"]["be"]["flows"] == 1  # the sender side's only
    asked = api.get(f"/api/v1/batches/{body['batch_id']}/scoreboard",
                    params={"include_not_reproducible": "true"}).json()
    assert asked["scores"]["composite_error"]["estimators"]["be"]["flows"] == 2
