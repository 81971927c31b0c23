"""The dashboards in a real browser: Debian ``chromium`` driven by Playwright (``executable_path``; no
browser download), against ``ackreplay serve`` on a loopback port. Screenshots go to test-artifacts/
(and, with ACKREPLAY_UPDATE_SCREENSHOTS=1, to docs/)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.conftest import ROOT, SHARED
from tests.pcapgen import Conv
from tests.service.http import wait_ready

S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"
S06 = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides.pcap"  # 2.4 MB
REFUSED = SHARED / "public" / "gh-chrissanders-packets__tcp_retransmissions.pcapng"  # its one flow is refused
SAMPLE = ROOT / "samples" / "sample.pcap"
ARTIFACTS = ROOT / "test-artifacts"
EXE = str(Path(sys.executable).with_name("ackreplay"))
ESTIMATORS = ("be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr", "westwood_plus", "bbr_bw", "newreno")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(data: Path, **settings: str) -> tuple[str, subprocess.Popen[bytes], dict[str, str]]:
    """``ackreplay serve`` (embedded: SQLite, local store, in-process worker) on a free loopback port."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["ACKREPLAY_DATA_DIR"] = str(data)
    env.update(settings)
    proc = subprocess.Popen([EXE, "serve", "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=open(data / "serve.log", "wb"))  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, log=data / "serve.log")
    return base, proc, env


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    base, proc, _ = serve(tmp_path_factory.mktemp("dashboard-data"))
    yield base
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).exists():
        pytest.fail("Debian chromium is not installed: scripts/test.sh installs it")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()


def shot(page: Page, name: str, docs_part: str | None = None) -> None:
    """A full-page screenshot into test-artifacts/; with ACKREPLAY_UPDATE_SCREENSHOTS=1 also into docs/ (the
    element ``docs_part`` when given, else the window)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    if os.environ.get("ACKREPLAY_UPDATE_SCREENSHOTS") == "1":
        if docs_part:
            page.locator(docs_part).screenshot(path=str(ROOT / "docs" / name))
        else:
            page.screenshot(path=str(ROOT / "docs" / name), full_page=False)


def plot_counts(page: Page, div: str) -> list[int]:
    return page.evaluate(f"document.getElementById('{div}').data.map(t => t.x.length)")


def test_upload_run_charts_sorting_and_leaderboard(server, page):
    page.goto(f"{server}/dashboard/")
    expect(page.get_by_role("heading", name="Captures", exact=True)).to_be_visible()
    page.set_input_files("#file-input", str(S09))
    page.fill("#up-bottleneck", "10Mbit")
    page.fill("#up-tags", "browser")
    page.click("#up-send")
    page.wait_for_url("**/dashboard/#/captures/*", timeout=60_000)
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=180_000)
    rows = page.locator("#flows-table tbody tr")
    expect(rows).to_have_count(6)
    shot(page, "dashboard-capture.png")

    # sort by goodput: ascending, then descending
    header = page.locator('#flows-table th[data-key="goodput_bps"]')
    header.click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    header.click()
    expect(page.locator('#flows-table th[data-key="goodput_bps"]')).to_have_attribute("aria-sort", "descending")
    values = [float(v) for v in page.locator("#flows-table tbody tr td:nth-child(5)").all_inner_texts()]
    assert values == sorted(values, reverse=True) and values[0] > 5
    assert "sort=goodput_bps" in page.url and "desc=1" in page.url  # the state is in the URL

    # CSV export of the table
    with page.expect_download() as dl:
        page.click("#export-flows")
    path = dl.value.path()
    assert dl.value.suggested_filename.endswith("-flows.csv")
    assert Path(path).read_text().splitlines()[0].startswith("flow,sender,receiver")

    # the biggest flow's page: the congestion graph's four panels hold the data
    rows.first.locator("a").click()
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    names = page.evaluate("document.getElementById('congestion').data.map(t => t.name)")
    assert names[:5] == ["data sent", "retransmitted", "ACK", "SACK blocks", "receive window"]
    assert {"bytes in flight", "ideal (rate × RTTmin)", "achieved", "truth", "RTT samples", "srtt",
            "RTTmin"} <= set(names)
    for est in ESTIMATORS:
        assert {est, f"{est} ssthresh", f"{est} cwnd"} <= set(names), est
    axes = page.evaluate("[...new Set(document.getElementById('congestion').data.map(t => t.yaxis))]")
    # four panels on one x axis, and the queue (RTT − RTTmin)·C once the path's capacity is known (#24)
    assert axes == ["y", "y2", "y3", "y4", "y5"] and "queue (RTT − RTTmin)·C" in names
    flow_id = int(page.url.rsplit("/", 1)[1].split("?")[0])
    flow = httpx.get(f"{server}/api/v1/captures/{page.url.split('/captures/')[1].split('/')[0]}/flows/{flow_id}").json()
    decision_counts = plot_counts(page, "decisions")
    assert len(decision_counts) == 2 + 9 and set(decision_counts) == {flow["loss_events"]}
    ss = page.evaluate("document.getElementById('congestion').data.find(t => t.name === 'abse ssthresh').x.length")
    assert ss == flow["loss_events"]
    expect(page.locator("#scores-table tbody tr")).to_have_count(10)
    expect(page.locator("#flow-select option")).to_have_count(6)
    shot(page, "dashboard-flow.png", "#view")

    # toggling an estimator off hides it in every panel and updates the URL
    page.uncheck('#toggles input[value="be"]')
    expect(page).not_to_have_url(re.compile("est=be,"))
    hidden = page.evaluate("document.getElementById('congestion').data.filter(t => t.legendgroup === 'be')"
                           ".map(t => t.visible)")
    assert set(hidden) == {"legendonly"} and len(hidden) >= 3 and "be," not in page.url.split("est=")[1]
    with page.expect_download() as dl:
        page.click("#png-congestion")
    assert dl.value.suggested_filename.endswith(".png")
    # the flow selector moves to another flow of the capture; a flow that was not replayed says why
    skipped = page.locator("#flow-select option", has_text="not replayed").first.get_attribute("value")
    page.select_option("#flow-select", skipped)
    expect(page.locator("#not-replayed")).to_contain_text("Not replayed: ")
    other = page.locator("#flow-select option:not(:has-text('not replayed'))").nth(0).get_attribute("value")
    page.select_option("#flow-select", other)
    page.wait_for_url(f"**/flows/{other}", timeout=30_000)
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)

    # compare: the leaderboard, its heat map, and a link down to a flow behind a number
    page.click("#nav-compare")
    page.wait_for_selector("#leaderboard")
    page.wait_for_selector("#heatmap .main-svg")
    assert len(page.evaluate("document.getElementById('heatmap').data[0].z")) >= 8
    shot(page, "dashboard-compare.png")
    page.locator("a.wins", has_text="1 wins").first.click()
    page.locator("a.flow-link").first.click()
    page.wait_for_url("**/flows/*", timeout=30_000)
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)


def test_drag_and_drop_upload_and_narrow_window(server, browser):
    context = browser.new_context(viewport={"width": 420, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/dashboard/#/captures")
    page.wait_for_selector("#dropzone")
    data = list(SAMPLE.read_bytes())
    page.evaluate("""(bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], "dropped.pcap"));
        document.getElementById("dropzone").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true}));
    }""", data)
    expect(page.locator("#upload-status")).to_contain_text("dropped.pcap")
    page.click("#up-send")
    page.wait_for_url("**/#/captures/*", timeout=60_000)
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=180_000)
    # readable in a narrow window: nothing wider than the viewport except inside scrollable table wrappers
    wide = page.evaluate("""[...document.querySelectorAll("body *")]
        .filter(e => e.getBoundingClientRect().right > 421 && !e.closest(".table-wrap"))
        .map(e => e.tagName + "#" + e.id + "." + e.className).slice(0, 8)""")
    assert page.evaluate("document.documentElement.scrollWidth") <= 421, wide
    for label in ("API token",):
        expect(page.get_by_label(label)).to_be_visible()
    shot(page, "dashboard-narrow.png")
    context.close()


def test_token_required_until_entered_then_kept(tmp_path, browser):
    """With ACKREPLAY_AUTH=required the dashboard says the token is missing, works once it is entered
    (uploads included), keeps it across reloads, and shows a wrong one as an error."""
    base, proc, env = serve(tmp_path, ACKREPLAY_AUTH="required")
    try:
        token = subprocess.run([EXE, "token", "create", "alice"], env=env, cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        page = context.new_page()
        page.goto(f"{base}/dashboard/#/captures")
        expect(page.locator("#view [role=alert]")).to_contain_text("token_required")
        page.get_by_label("API token").fill("not-a-token")
        page.get_by_label("API token").press("Enter")  # a change event, as when the field is left
        expect(page.locator("#view [role=alert]")).to_contain_text("invalid_token")
        page.get_by_label("API token").fill(token)
        page.get_by_label("API token").press("Enter")
        expect(page.locator("h1")).to_have_text("Captures")
        page.set_input_files("#file-input", str(SAMPLE))
        page.click("#up-send")
        page.wait_for_url("**/#/captures/*", timeout=60_000)
        expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=180_000)
        page.reload()
        expect(page.get_by_label("API token")).to_have_value(token)
        page.goto(f"{base}/dashboard/#/captures")
        expect(page.locator("#captures-table")).to_contain_text("sample.pcap")
        # the same API without the token: still refused
        assert httpx.get(f"{base}/api/v1/captures").status_code == 401
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


MARKUP = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def test_markup_in_names_tags_and_errors_is_shown_as_text_and_never_runs(server, browser):
    """A capture whose name and tags hold markup, and an API error whose text holds markup, are displayed
    literally: no element is created from them and nothing runs (one escaping renderer, and a CSP that
    would block inline code anyway)."""
    with open(ROOT / "cli" / "data" / "warmup.pcap", "rb") as fh:  # bytes no other test uploads (no dedup)
        body = httpx.post(f"{server}/api/v1/captures", files={"file": ("x.pcap", fh)},
                          data={"name": f"evil {MARKUP}", "tags": f"t{MARKUP}"}, timeout=60).json()
    assert body["created"]
    cid = body["capture"]["id"]
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"{server}/dashboard/#/captures")
    expect(page.locator("#captures-table")).to_contain_text(f"evil {MARKUP}")
    page.goto(f"{server}/dashboard/#/captures/{cid}")
    expect(page.locator("h1")).to_have_text(f"evil {MARKUP}")
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=180_000)
    # an error text with markup, as an API error would carry it
    page.route("**/api/v1/captures?*", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": "bad_request", "detail": MARKUP})))
    page.goto(f"{server}/dashboard/#/compare")
    page.goto(f"{server}/dashboard/#/captures")
    expect(page.locator("#view [role=alert]")).to_contain_text(f"bad_request: {MARKUP}")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('#view img, #view script').length") == 0
    assert violations == []  # nothing even tried to run
    context.close()


def test_security_headers_and_api_docs_offline(server, browser):
    """Every page carries the CSP and the other headers; the API docs (at /docs and /api/v1/docs) and the
    dashboard load every file from this server, with no request to any other host and no CSP violation."""
    for path in ("/dashboard/", "/api/v1/docs", "/api/v1/captures", "/api/v1/openapi.json"):
        r = httpx.get(f"{server}{path}", follow_redirects=True)
        assert r.headers["content-security-policy"].startswith("default-src 'self'; script-src 'self';"), path
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    problems: list[str] = []
    page.on("request", lambda req: None if req.url.startswith(server) or req.url.startswith("data:")
            else outside.append(req.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    for start in ("/docs", "/api/v1/docs"):
        page.goto(f"{server}{start}")
        assert page.url == f"{server}/api/v1/docs"
        expect(page.locator(".opblock-summary-path").first).to_be_visible(timeout=30_000)
        assert page.locator(".opblock").count() >= 20  # every operation is listed
    page.goto(f"{server}/dashboard/#/compare")
    page.wait_for_selector("h1")
    assert outside == [] and problems == [], (outside, problems)
    context.close()


def test_a_receiver_side_capture_is_replayed_and_labelled_reconstructed(server, page):
    """ESTIMATORS.md §7: the receiver side of s06 is replayed by default, and the capture and flow pages say
    that its sender view was reconstructed, how, and what the vantage cannot see."""
    rcv = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides_rcv.pcap"
    with open(rcv, "rb") as fh:
        body = httpx.post(f"{server}/api/v1/captures", files={"file": (rcv.name, fh)}, timeout=60).json()
    cid = body["capture"]["id"]
    page.goto(f"{server}/dashboard/#/captures/{cid}")
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=180_000)
    big = page.locator("#flows-table tbody tr", has_text="40001")
    expect(big).to_contain_text("receiver (reconstructed)")
    big.locator("a").first.click()
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    expect(page.locator(".reconstructed")).to_contain_text("reconstructed, medium confidence")
    expect(page.locator("#reconstruction")).to_contain_text("RTT samples from data echoing ACK TSvals")
    expect(page.locator("#reconstruction")).to_contain_text("return path")
    expect(page.locator("#scores-table tbody tr")).to_have_count(10)  # replayed without --allow-vantage
    # why (§7): ACK compression, BE's largest samples, dispersion capacity, loss classification
    why = page.locator("#why li")
    expect(why.first).to_contain_text("ACK intervals under 100 µs as the ACKs passed the receiver (not the sender's")
    expect(page.locator("#why")).to_contain_text("capacity from the packet-pair dispersion mode (data)")
    expect(page.locator("#why")).to_contain_text("crb classified")
    # the path (§9): each figure with its evidence, the seeds' models when the buffer is known
    expect(page.locator("#path-figures")).to_contain_text("packet-pair dispersion mode (pathrate) from data segments")
    expect(page.locator("#path-figures tbody tr")).to_have_count(5)
    # issue #27: BE and CRB are labelled not reproducible from the receiver, in the table and in why
    labelled = page.locator("#scores-table tbody tr", has=page.locator(".not-reproducible"))
    expect(labelled).to_have_count(2)
    expect(labelled.first).to_contain_text("not reproducible from this vantage")
    expect(page.locator("#why")).to_contain_text("be: not reproducible from this vantage")


def _default_run(server: str, capture: Path, form: dict[str, str] | None = None) -> tuple[str, str]:
    """Upload ``capture`` (or find it: uploads are de-duplicated) and wait for its default run."""
    with open(capture, "rb") as fh:
        cid = httpx.post(f"{server}/api/v1/captures", files={"file": (capture.name, fh)}, data=form or {},
                         timeout=60).json()["capture"]["id"]
    for _ in range(600):
        runs = httpx.get(f"{server}/api/v1/runs", params={"capture": cid}).json()
        if runs and runs[0]["status"] in ("succeeded", "failed"):
            assert runs[0]["status"] == "succeeded"
            return cid, runs[0]["id"]
        time.sleep(0.3)
    raise AssertionError("the run did not finish")


def test_congestion_graph_keeps_spikes_and_zooms_to_full_resolution(server, page):
    """Per-pixel downsampling keeps every extreme (BE's highest estimate is drawn, and marked ▲ above the
    axis); brushing a short window fetches it again and every ACK in it is drawn; a double click returns to
    the whole flow."""
    cid, run_id = _default_run(server, S09)
    flows = httpx.get(f"{server}/api/v1/captures/{cid}/flows").json()["items"]
    fid = max(flows, key=lambda f: f["bytes"])["flow_id"]
    api = f"{server}/api/v1/runs/{run_id}/captures/{cid}/flows/{fid}"
    page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/{fid}")
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    assert page.get_attribute("#congestion", "data-full-resolution") == "false"
    every = page.evaluate("async (cid) => { const api = await import('/dashboard/js/api.js'); "  # page by page
                          "return (await api.getAll(`/captures/${cid}/flows`, { limit: 1 })).map((f) => f.flow_id); }",
                          cid)
    assert len(flows) > 1 and every == [f["flow_id"] for f in flows]

    series = pl.read_csv(io.BytesIO(httpx.get(f"{api}/series", params={"format": "csv"}).content))
    trace = "document.getElementById('congestion').data.find(t => t.name === NAME)"
    be = page.evaluate(f"(() => {{ const t = {trace.replace('NAME', repr('be'))}; "
                       "return [t.x.length, Math.max(...t.y.filter(v => v !== null))]; })()")
    assert be[0] < series.height  # thinned …
    assert be[1] * 1e6 == pytest.approx(series["be_bps"].max(), rel=1e-9, abs=1)  # … with the spike kept
    y_top = page.evaluate("document.getElementById('congestion').layout.yaxis3.range[1]")
    if series["be_bps"].max() / 1e6 > y_top:  # above the axis: marked at its edge, with the value
        marked = page.evaluate(f"Math.max(...{trace.replace('NAME', repr('be clipped'))}.customdata)")
        assert marked == pytest.approx(be[1])

    acks = pl.read_csv(io.BytesIO(httpx.get(f"{server}/api/v1/captures/{cid}/flows/{fid}/acks",
                                            params={"format": "csv"}).content))
    t = acks["t_rel"].to_list()
    mid = len(t) // 2
    t0, t1 = (t[mid - 1] + t[mid]) / 2, (t[mid + 799] + t[mid + 800]) / 2  # 800 ACKs, edges between two
    page.evaluate(f"Plotly.relayout('congestion', {{'xaxis.range': [{t0}, {t1}]}})")
    expect(page.locator("#congestion")).to_have_attribute("data-full-resolution", "true", timeout=30_000)
    xs = page.evaluate(f"{trace.replace('NAME', repr('ACK'))}.x")
    assert sum(t0 <= x <= t1 for x in xs) == 800
    ranges = page.evaluate("['yaxis', 'yaxis2', 'yaxis3', 'yaxis4'].map(a => document.getElementById('congestion')"
                           ".layout[a].domain)")
    assert len(ranges) == 4 and "x=" in page.url  # every panel follows the one x axis; the window is in the URL
    page.dblclick("#congestion .nsewdrag >> nth=0")
    expect(page.locator("#congestion")).to_have_attribute("data-full-resolution", "false", timeout=30_000)
    expect(page).not_to_have_url(re.compile("x="))

    # log scale on demand: the rate panel switches, no point is marked clipped
    page.check("#log-scale")
    expect(page).to_have_url(re.compile("log=1"))
    assert page.evaluate("document.getElementById('congestion').layout.yaxis3.type") == "log"
    assert page.evaluate("document.getElementById('congestion').data.filter(t => t.name.endsWith('clipped'))"
                         ".length") == 0


def test_offline_report_draws_the_congestion_graph(browser, tmp_path):
    """``ackreplay report`` writes one file that opens from disk with nothing fetched: each replayed flow's
    congestion graph is drawn by the inlined renderer, with its four panels, and zooms."""
    target = tmp_path / "report.html"
    subprocess.run([EXE, "report", str(SAMPLE), "-o", str(target)], cwd=ROOT, check=True, capture_output=True)
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    problems: list[str] = []
    page.on("request", lambda req: None if req.url.startswith("file://") else outside.append(req.url))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(target.as_uri())
    page.wait_for_selector("#congestion-0[data-ready='1']", timeout=30_000)
    axes = page.evaluate("[...new Set(document.getElementById('congestion-0').data.map(t => t.yaxis))]")
    names = page.evaluate("document.getElementById('congestion-0').data.map(t => t.name)")
    assert axes == ["y", "y2", "y3", "y4", "y5"] and {"ACK", "bytes in flight", "achieved", "srtt"} <= set(names)
    # hovering a point of the time–sequence graph names its packet in the capture file
    hover = page.evaluate("document.getElementById('congestion-0').data.filter(t => ['data sent', 'retransmitted', "
                          "'ACK'].includes(t.name)).map(t => t.hovertext)")
    assert len(hover) == 3 and all(h and all(re.fullmatch(r"frame [1-9][0-9]*", x) for x in h) for h in hover)
    page.evaluate("Plotly.relayout('congestion-0', {'xaxis.range': [1.0, 1.5]})")
    expect(page.locator("#congestion-0")).to_have_attribute("data-window", "1.000000,1.500000")
    shot(page, "report-flow.png")
    assert outside == [] and problems == [], (outside, problems)
    context.close()


def _open_report(browser, target: Path) -> tuple[Page, list[str], list[str]]:
    """The report opened from disk, with the requests it makes off disk and the page's errors collected."""
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    outside: list[str] = []
    problems: list[str] = []
    page.on("request", lambda req: None if req.url.startswith("file://") else outside.append(req.url))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(target.as_uri())
    return page, outside, problems


def test_the_report_of_a_2mb_capture_is_small_and_draws_every_graph(browser, tmp_path):
    """Issue #36: ``score --out`` on a 2.4 MB capture writes a report of at most 1.1 MB that needs no other file
    (plotly.js's basic bundle inside it) and draws, offline, the congestion graph's five panels and the figures."""
    out = tmp_path / "out"
    subprocess.run([EXE, "score", str(S06), "--out", str(out)], cwd=ROOT, check=True, capture_output=True)
    target = out / "report.html"
    assert target.stat().st_size <= 1_100_000, target.stat().st_size
    page, outside, problems = _open_report(browser, target)
    page.wait_for_selector("#congestion-0[data-ready='1']", timeout=30_000)
    axes = page.evaluate("[...new Set(document.getElementById('congestion-0').data.map(t => t.yaxis))]")
    names = page.evaluate("document.getElementById('congestion-0').data.map(t => t.name)")
    assert axes == ["y", "y2", "y3", "y4", "y5"] and {"ACK", "bytes in flight", "achieved", "re", "srtt"} <= set(names)
    figures = page.locator(".figure")
    assert figures.count() >= 2
    for i in range(figures.count()):  # every figure drawn: an SVG with its traces
        expect(figures.nth(i).locator(".main-svg").first).to_be_attached(timeout=10_000)
    assert page.evaluate("[...document.querySelectorAll('.figure')].every(f => f.data && f.data.length > 0)")
    assert outside == [] and problems == [], (outside, problems)
    page.context.close()


def test_the_report_draws_a_flow_that_was_not_replayed_from_the_capture(browser, tmp_path):
    """Issue #33: a capture whose every flow is refused for replay: the report draws its time–sequence, flight and
    RTT panels (no rate panel, no estimator) and says why the overlays are missing."""
    target = tmp_path / "refused.html"
    subprocess.run([EXE, "report", str(REFUSED), "-o", str(target)], cwd=ROOT, check=True, capture_output=True)
    page, outside, problems = _open_report(browser, target)
    page.wait_for_selector("#congestion-0[data-ready='1']", timeout=30_000)
    axes = page.evaluate("[...new Set(document.getElementById('congestion-0').data.map(t => t.yaxis))]")
    counts = dict(page.evaluate("document.getElementById('congestion-0').data.map(t => [t.name, t.x.length])"))
    assert axes == ["y", "y2", "y4"] and counts["retransmitted"] == 5 and "achieved" not in counts
    titles = page.evaluate("(() => { const l = document.getElementById('congestion-0').layout; "
                           "return ['yaxis', 'yaxis2', 'yaxis4'].map(a => l[a].title.text); })()")
    assert titles == ["sequence (bytes)", "in flight (bytes)", "RTT (ms)"]
    expect(page.locator(".not-replayed")).to_contain_text("the estimators' overlays")
    shot(page, "report-not-replayed.png")
    assert outside == [] and problems == [], (outside, problems)
    page.context.close()


def test_report_names_the_decision_only_controls_by_their_markers(browser, tmp_path):
    """``ackreplay report -e highspeed``: CUBIC and the other §8 controls have no estimate, so no rate line; their
    ssthresh markers in the flight panel carry their names in the legend (and toggle them), Westwood+ keeps
    its rate line."""
    target = tmp_path / "report.html"
    capture = ROOT / "tests" / "data" / "ns3" / "cubic_1f_bdp1.pcap.gz"
    subprocess.run([EXE, "report", str(capture), "-e", "highspeed", "-o", str(target)], cwd=ROOT, check=True,
                   capture_output=True)
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(target.as_uri())
    page.wait_for_selector("#congestion-0[data-ready='1']", timeout=30_000)
    traces = page.evaluate("document.getElementById('congestion-0').data.map(t => [t.name, t.yaxis, "
                           "t.showlegend !== false])")
    legend = {(n, axis) for n, axis, shown in traces if shown}
    for name in ("stcp", "hstcp", "htcp", "bic", "cubic"):
        assert (name, "y2") in legend and (name, "y3") not in legend
    assert ("westwood_plus", "y3") in legend and problems == []
    context.close()


def test_flows_appear_while_the_run_is_going_and_say_why_they_were_not_replayed(server, page):
    """The capture page lists the flows as soon as ingest has found them (the run still going: 'pending'),
    then says per flow whether it was replayed and, when not, why; the run picker names the captures."""
    cid, run_id = _default_run(server, S09)

    # The handler stays installed and passes requests through once the check is done: unrouting while the
    # dashboard's poll is inside the handler (between fetch and fulfill) makes Playwright handle that request
    # twice ("Route is already handled"), a race that failed CI once.
    mocking = {"on": True}

    def still_running(route):
        if not mocking["on"]:
            route.fallback()
            return
        body = route.fetch().json()
        if "capture_id" in body:  # the capture's entry in the run: nothing skipped yet
            body.update(status="queued", skipped_flows={}, skipped_total=0, skipped_counts={})
        else:
            body.update(status="running", progress={"tasks_done": 1, "tasks_total": 3})
        route.fulfill(json=body)

    page.route(re.compile(rf".*/api/v1/runs/{run_id}(/captures/{cid})?(\?.*)?$"), still_running)
    page.goto(f"{server}/dashboard/#/captures/{cid}?run={run_id}")
    expect(page.locator("#run-status")).to_contain_text("running")
    rows = page.locator("#flows-table tbody tr")
    expect(rows).to_have_count(6)
    expect(rows.first.locator("td").last).to_have_text("pending")
    mocking["on"] = False
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=30_000)
    expect(page.locator("#flows-table tbody tr", has_text="10.201.1.1:40001").first).to_contain_text("replayed")
    receiver = page.locator("#flows-table tbody tr", has_text="receiver").first
    expect(receiver).to_contain_text("not replayed: vantage receiver")
    runs = httpx.get(f"{server}/api/v1/runs", params={"capture": cid}).json()
    assert runs[0]["capture_names"] == [S09.name]
    page.goto(f"{server}/dashboard/#/compare?runs={run_id}")
    expect(page.locator(f"#runs-select option[value='{run_id}']")).to_contain_text(S09.name)


def test_the_page_of_a_flow_the_run_did_not_replay_draws_what_the_capture_shows(server, page):
    """Issue #33: the page of a flow the run refused (S09's receiver-side control connections) draws its
    time–sequence, flight and RTT from the capture's own graph (``/captures/{c}/flows/{f}/graph``: no run needed),
    without the estimators, and says why; zooming fetches the window again."""
    cid, run_id = _default_run(server, S09)
    status = httpx.get(f"{server}/api/v1/runs/{run_id}").json()
    skipped = next(c for c in status["captures"] if c["capture_id"] == cid)["skipped_flows"]
    fid = min(int(f) for f in skipped)
    api = f"{server}/api/v1/captures/{cid}/flows/{fid}/graph"
    graph = httpx.get(api).json()
    assert not graph["replayed"] and graph["rates"] == {} and graph["flight"]["estimators"] == {}
    assert graph["sequence"]["ack"]["t"] and graph["rtt"]["samples"]["t"]
    missing = httpx.get(f"{server}/api/v1/runs/{run_id}/captures/{cid}/flows/{fid}/graph")
    assert missing.status_code == 404 and missing.json()["error"] == "results_not_found"
    assert httpx.get(f"{server}/api/v1/captures/{cid}/flows/999/graph").json()["error"] == "flow_not_found"

    page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/{fid}")
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    expect(page.locator("#not-replayed")).to_contain_text(f"Not replayed: {skipped[str(fid)]}")
    expect(page.locator("#not-replayed")).to_contain_text("The estimators' overlays")
    axes = page.evaluate("[...new Set(document.getElementById('congestion').data.map(t => t.yaxis))]")
    drawn = dict(page.evaluate("document.getElementById('congestion').data.map(t => [t.name, t.x])"))
    assert axes == ["y", "y2", "y4"] and "achieved" not in drawn and not [n for n in drawn if n in ESTIMATORS]
    assert drawn["ACK"] == graph["sequence"]["ack"]["t"] and drawn["RTT samples"] == graph["rtt"]["samples"]["t"]
    assert page.locator("#scores-table").count() == 0
    t0, t1 = graph["t_span"]
    mid = (t0 + t1) / 2
    page.evaluate(f"Plotly.relayout('congestion', {{'xaxis.range': [{t0}, {mid}]}})")
    expect(page.locator("#congestion")).to_have_attribute("data-window", f"{t0:.6f},{mid:.6f}", timeout=30_000)
    assert "x=" in page.url
    shot(page, "dashboard-flow-not-replayed.png")


def test_capture_table_says_what_limited_each_flow(server, page):
    """The capture page's flow table has a "limited by" column: each replayed flow's limits shares as the API
    serves them (``GET /runs/{id}/captures/{c}/limits``, paginated, summing to 1), the largest first; flows
    not replayed have none. Its CSV export carries the column."""
    cid, run_id = _default_run(server, S09)
    url = f"{server}/api/v1/runs/{run_id}/captures/{cid}/limits"
    body = httpx.get(url).json()
    shares = {item["flow_id"]: item["shares"] for item in body["items"]}
    assert body["total"] == len(shares) >= 2 and body["next"] is None
    assert all(abs(sum(s.values()) - 1.0) <= 1e-12 for s in shares.values())
    first = httpx.get(url, params={"limit": 1}).json()
    assert len(first["items"]) == 1 and first["next"].endswith("/limits?offset=1&limit=1")
    missing = httpx.get(f"{server}/api/v1/runs/{run_id}/captures/{'0' * 32}/limits")
    assert missing.status_code == 404 and missing.json()["error"] == "capture_not_found"

    def words(s: dict[str, float]) -> str:
        kept = sorted(((v, k) for k, v in s.items() if v >= 0.005), reverse=True)
        return ", ".join(f"{k} {100 * v:.0f} %" for v, k in kept)

    page.goto(f"{server}/dashboard/#/captures/{cid}?run={run_id}")
    expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=60_000)
    table = page.locator("#flows-table")
    expect(table.locator("thead")).to_contain_text("limited by")
    expect(table.locator("tbody tr", has_text="replayed").first).to_contain_text(" %")
    column = table.locator("thead th").all_inner_texts().index("limited by")
    cells = page.evaluate(f"[...document.querySelectorAll('#flows-table tbody tr')].map(r => [r.cells[0].innerText, "
                          f"r.cells[{column}].innerText, r.cells[r.cells.length - 1].innerText])")
    assert {int(f): text for f, text, replay in cells if replay == "replayed"} == {
        f: words(s) for f, s in shares.items()}
    assert all(text == "" for _, text, replay in cells if replay.startswith("not replayed"))
    with page.expect_download() as dl:
        page.click("#export-flows")
    exported = pl.read_csv(dl.value.path())
    assert "limited by" in exported.columns


@pytest.mark.parametrize("width", [1400, 390])
def test_nothing_overflows_at_desktop_and_phone_widths(server, browser, width):
    """At 1400 px and 390 px no page is wider than the window (tables scroll inside their own box)."""
    cid, run_id = _default_run(server, S09)
    flows = httpx.get(f"{server}/api/v1/captures/{cid}/flows").json()["items"]
    fid = max(flows, key=lambda f: f["bytes"])["flow_id"]
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    for path, ready in ((f"#/captures/{cid}?run={run_id}", "#flows-table"),
                        (f"#/runs/{run_id}/captures/{cid}/flows/{fid}", "#congestion[data-ready='1']"),
                        (f"#/compare?runs={run_id}", "#leaderboard"), ("#/captures", "#captures-table")):
        page.goto(f"{server}/dashboard/{path}")
        page.wait_for_selector(ready, timeout=60_000)
        wide = page.evaluate(f"""[...document.querySelectorAll("body *")]
            .filter(e => e.getBoundingClientRect().right > {width} + 1 && !e.closest(".table-wrap"))
            .map(e => e.tagName + "#" + e.id + "." + e.className).slice(0, 8)""")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (path, wide)
        if width == 390 and "flows/" in path:
            shot(page, "dashboard-flow-phone.png", "section:has(#congestion)")
    context.close()


def test_the_compare_page_ranks_the_variants_of_a_sweep(server, page):
    """A run that sweeps RE's τ (issue #25): the compare page's board has a column per variant, re[tau=…]. The
    sample's flow is too short in network-limited time for τ = 4 s (``scoring.comparable``): left out of the
    board, its columns are still there, and ranked once asked."""
    cid, _ = _default_run(server, SAMPLE)
    r = httpx.post(f"{server}/api/v1/runs", json={"captures": [cid], "estimators": [
        "be", {"name": "re", "parameters": {"tau": [0.25, 0.5, 1, 2, 4]}}]}, timeout=30)
    assert r.status_code == 202, r.text
    run_id = r.json()["run_id"]
    for _ in range(600):
        if httpx.get(f"{server}/api/v1/runs/{run_id}").json()["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.3)
    page.goto(f"{server}/dashboard/#/compare?runs={run_id}")
    board = page.locator("#leaderboard")
    for name in ("be", "re[tau=0.25]", "re[tau=0.5]", "re[tau=1.0]", "re[tau=2.0]", "re[tau=4.0]"):
        expect(board.locator("thead th", has_text=name)).to_have_count(1)
    expect(board.locator("td.best")).to_have_count(0)
    page.check("#include-incomparable")
    expect(page.locator("#leaderboard td.best").first).to_be_visible()
    shot(page, "dashboard-compare-sweep.png")


def test_the_path_card_and_the_queue_panel(server, page):
    """Issue #24 on s09 (Reno and CUBIC sharing 10 Mbit/s, buffer 2×BDP): the flow page's Path card gives each
    figure with its evidence, names the flow sharing the bottleneck, seed 004's verdict per algorithm and seed
    002's curve with this path's buffer/BDP marked; the congestion graph has a queue panel with the buffer."""
    cid, run_id = _default_run(server, S09)
    flows = httpx.get(f"{server}/api/v1/captures/{cid}/flows").json()["items"]
    fid = max(flows, key=lambda f: f["bytes"])["flow_id"]
    page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/{fid}")
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    expect(page.locator("#path-figures")).to_contain_text("packet-pair dispersion mode (pathrate)")
    expect(page.locator("#path-figures")).to_contain_text("Mbit/s")
    expect(page.locator("#path-group")).to_contain_text("Shares its bottleneck with flows")
    expect(page.locator("#path-group")).to_contain_text("newreno (b 0.50)")
    expect(page.locator("#busy-link tbody tr")).to_have_count(7)
    expect(page.locator("#busy-link-replayed")).to_contain_text("real_sender")
    page.wait_for_selector("#share-model .main-svg", timeout=30_000)
    marked = page.evaluate("document.getElementById('share-model').data.find(t => t.name === 'this path').x[0]")
    path = httpx.get(f"{server}/api/v1/runs/{run_id}/captures/{cid}/flows/{fid}/path").json()
    assert marked == pytest.approx(path["path"]["buffer_over_bdp"]) and 1.5 < marked < 2.5
    names = page.evaluate("document.getElementById('congestion').data.map(t => t.name)")
    assert "queue (RTT − RTTmin)·C" in names and "inferred buffer" in names


def test_a_tap_is_shown_with_its_position_and_be_crb_labelled(server, page):
    """Issue #27: a tap 2 ms before the receiver of a 42 ms path is a tap at 95 % of the RTT from the sender (no
    longer "receiver"), rebuilt; BE and CRB are labelled not reproducible on its flow page."""
    cid, run_id = _default_run(server, ROOT / "tests" / "data" / "pairs" / "tapfar_mid.pcap.gz")
    page.goto(f"{server}/dashboard/#/captures/{cid}?run={run_id}")
    big = page.locator("#flows-table tbody tr", has_text="40001")
    expect(big).to_contain_text("mid_path at 95 % of the RTT from the sender (reconstructed)", timeout=60_000)
    big.locator("a").first.click()
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    expect(page.locator("h1 + p")).to_contain_text("vantage mid_path at 95 % of the RTT from the sender")
    expect(page.locator("#scores-table tbody tr", has=page.locator(".not-reproducible"))).to_have_count(2)


def test_a_capture_with_the_most_tags_and_the_longest_name_keeps_every_column_on_screen(server, page):
    """100 tags of 100 characters and a 500-character name (the most the API takes; 20 000 tags are 422)
    leave the captures table within the window: the cells wrap and show the first tags and how many more."""
    from tests.pcapgen import Conv

    conv = Conv(isn=424242)
    conv.handshake(0, 20)
    for i in range(20):
        conv.send(30 + i, i * 1000, 1000)
        conv.ack(50 + i, (i + 1) * 1000)
    tags = ",".join(f"{i:03d}" + "t" * 97 for i in range(100))
    r = httpx.post(f"{server}/api/v1/captures", files={"file": ("many-tags.pcap", conv.pcap())},
                   data={"name": "n" * 500, "tags": tags}, timeout=60)
    assert r.status_code == 201, r.text
    page.goto(f"{server}/dashboard/#/captures")
    expect(page.locator("#captures-table")).to_contain_text("n" * 500)
    right = page.evaluate("Math.max(...[...document.querySelectorAll('#captures-table th')]"
                          ".map(th => th.getBoundingClientRect().right))")
    assert right <= page.viewport_size["width"], right
    expect(page.locator("#captures-table")).to_contain_text("+95 more")
    shot(page, "dashboard-many-tags.png")
    too_many = httpx.post(f"{server}/api/v1/captures", files={"file": ("x.pcap", conv.pcap())},
                          data={"tags": ",".join(f"t{i}" for i in range(20_000))}, timeout=60)
    assert too_many.status_code == 422 and too_many.json()["error"] == "invalid_request"


def test_the_what_if_card_simulates_on_request_and_says_why_it_cannot(server, page):
    """Issue #37 on the testbed's CUBIC capture: the flow page's What-if card runs the chosen algorithms on the
    flow's path when asked — the self-check passed, one row per algorithm with its range and the captured flow's,
    the simulated cwnd drawn — and on a flow whose path lacks a figure shows the refusal with its code."""
    capture = ROOT / "tests" / "data" / "testbed" / "cubic_1f_10M_rtt40_buf025bdp.pcap.gz"
    cid, run_id = _default_run(server, capture)
    page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/2")
    page.wait_for_selector("#congestion[data-ready='1']", timeout=60_000)
    page.locator("#whatif-algorithms input[value='westwood_plus']").uncheck()
    page.fill("#whatif-duration", "4")
    page.click("#whatif-run")
    page.wait_for_selector("#whatif-out[data-ready='1']", timeout=120_000)
    expect(page.locator("#whatif-self-check")).to_contain_text("Self-check (cubic, given): passed")
    expect(page.locator("#whatif-table tbody tr")).to_have_count(3)  # newreno, cubic, captured
    expect(page.locator("#whatif-table")).to_contain_text("captured")
    assert re.search(r"\d+\.\d+ \[\d+\.\d+–\d+\.\d+\]", page.locator("#whatif-table tbody tr").first.inner_text())
    names = page.evaluate("document.getElementById('whatif-plot').data.map(t => t.name)")
    assert names == ["newreno", "cubic"]
    page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/0")
    page.wait_for_selector("#whatif-run", timeout=60_000)
    page.click("#whatif-run")
    expect(page.locator("#whatif-error")).to_contain_text("path_", timeout=60_000)


def _one_ack_capture(seed: int) -> bytes:
    """A capture of one flow that is not replayed ("fewer than two ACKs"): its handshake, one segment, one ACK."""
    c = Conv(isn=1000 + seed * 7919)
    c.handshake(0, 20)
    c.send(30, 0, 1000)
    c.ack(50, 1000)
    return c.pcap()


def test_a_capture_past_the_first_status_page_of_its_run_shows_its_own_details(tmp_path, browser):
    """In a batch's run of 103 captures, the capture and flow pages of one that the run's first status page
    (100 captures) does not list still say why its flow was not replayed: they read the capture's own entry
    (``GET /runs/{r}/captures/{c}``), and all its skipped flows from ``…/skipped`` when the entry shows only
    the first of them."""
    base, proc, _ = serve(tmp_path)
    try:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for i in range(103):
                zf.writestr(f"tiny-{i:03}.pcap", _one_ack_capture(i))
        r = httpx.post(f"{base}/api/v1/batches", files=[("files", ("tiny.zip", buf.getvalue()))], timeout=60)
        assert r.status_code == 202, r.text
        run_id = r.json()["run_id"]
        for _ in range(600):
            status = httpx.get(f"{base}/api/v1/runs/{run_id}").json()
            if status["status"] in ("succeeded", "failed"):
                break
            time.sleep(0.3)
        assert status["status"] == "succeeded" and status["captures_total"] == 103
        first_page = {c["capture_id"] for c in status["captures"]}
        entry = httpx.get(f"{base}/api/v1/runs/{run_id}", params={"offset": 102}).json()["captures"][0]
        cid = entry["capture_id"]
        assert cid not in first_page and entry["skipped_flows"] == {"0": "fewer than two ACKs"}
        assert httpx.get(f"{base}/api/v1/runs/{run_id}/captures/{cid}").json() == entry

        context = browser.new_context(viewport={"width": 1366, "height": 900})
        page = context.new_page()
        page.goto(f"{base}/dashboard/#/captures/{cid}?run={run_id}")
        expect(page.locator("#run-status")).to_contain_text("succeeded", timeout=60_000)
        expect(page.locator("#flows-table tbody tr")).to_have_count(1)
        expect(page.locator("#flows-table tbody tr td").last).to_have_text("not replayed: fewer than two ACKs")
        page.goto(f"{base}/dashboard/#/runs/{run_id}/captures/{cid}/flows/0")
        expect(page.locator("#not-replayed")).to_contain_text("Not replayed: fewer than two ACKs", timeout=60_000)

        # an entry that shows none of its skipped flows (as one of more than 100 would not show them all): the
        # pages read them from …/skipped
        def shows_none(route):
            body = route.fetch().json()
            route.fulfill(json={**body, "skipped_flows": {}})

        page.route(f"**/api/v1/runs/{run_id}/captures/{cid}", shows_none)
        page.goto(f"{base}/dashboard/#/captures/{cid}?run={run_id}")
        expect(page.locator("#flows-table tbody tr td").last).to_have_text("not replayed: fewer than two ACKs",
                                                                          timeout=60_000)
        page.goto(f"{base}/dashboard/#/runs/{run_id}/captures/{cid}/flows/0")
        expect(page.locator("#not-replayed")).to_contain_text("Not replayed: fewer than two ACKs", timeout=60_000)
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
