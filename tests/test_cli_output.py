"""Output that scales: ``score`` on a capture of 1 000 short flows fits a screen (counts and the first ids, one line
per reason a flow was not replayed), no empty table or legend, headers that say what they count; and the HTML
report, which holds the congestion graphs thinned to its width and compressed with plotly.js's basic bundle, written
once, and draws the flows that were not replayed from the capture alone."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ackreplay.cli.flow_lists import id_list, id_runs, reason_groups
from ackreplay.cli.main import app
from bench.make_capture import generate_mix
from tests.conftest import ROOT, SHARED

SAMPLE = ROOT / "samples" / "sample.pcap"
S06 = SHARED / "generated" / "s06_cubic_1f_10M_rtt40_buf1bdp_2sides.pcap"  # 2.4 MB, one bulk flow
REFUSED = SHARED / "public" / "gh-chrissanders-packets__tcp_retransmissions.pcapng"  # its one flow is refused
S07 = SHARED / "generated" / "s07_bbr_3f_20M_rtt20_buf2bdp.pcap"
S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"
MPTCP = SHARED / "public" / "pypi-mptcpanalyzer-0.3.2__server_2.pcap"
RECEIVER = ROOT / "tests" / "data" / "pairs" / "asym_rcv.pcap.gz"
SCREEN = 24  # lines of a terminal
runner = CliRunner()


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1 000 flows of 2–20 packets without a handshake (so of unknown vantage), made at test time."""
    path = tmp_path_factory.mktemp("many") / "thousand.pcap"
    generate_mix(path, 1000)
    return path


def _expand(text: str) -> list[int]:
    """The ids of an id list (``0–3, 7``)."""
    out: list[int] = []
    for part in text.split(", "):
        lo, _, hi = part.partition("–")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def test_a_thousand_refused_flows_are_one_line_and_no_table(thousand):
    """Every flow refused for one reason: one line with the count and the ids as a range; no table, legend or
    fairness line."""
    code, out = run("score", thousand)
    lines = out.splitlines()
    assert code == 0 and len(lines) <= SCREEN, out
    assert " ".join(out.split()).startswith(f"== {thousand} not replayed, 1,000 flows (0–999): vantage unknown")
    assert sum(line.startswith("not replayed") for line in lines) == 1
    assert "columns:" not in out and "estimator" not in out and "Jain" not in out


def test_a_thousand_small_flows_are_counted_not_listed(thousand):
    """Replayed anyway: the flows under 64 kB and those with fewer than two ACKs, each a count with its first ids,
    fit a screen; --all-flows lists every id of a reason."""
    code, out = run("score", thousand, "--allow-vantage", "-f", "json")
    flows = json.loads(out)["captures"][0]["flows"]
    small = [f["flow_id"] for f in flows if f["replayed"] and f["bytes"] < 65536]
    refused = [f["flow_id"] for f in flows if not f["replayed"]]
    assert small and refused and len(small) + len(refused) == 1000
    code, out = run("score", thousand, "--allow-vantage")
    text = " ".join(out.split())
    assert code == 0 and len(out.splitlines()) <= SCREEN, out
    assert f"{len(small):,} flows under 65,536 bytes acked replayed, not shown (--all-flows shows them)" in text
    assert f"not replayed, {len(refused):,} flows (" in text and "more; --all-flows lists them): fewer than two" in text


def test_all_flows_lists_every_id_of_a_reason(tmp_path):
    capture = tmp_path / "some.pcap"
    generate_mix(capture, 150)
    code, out = run("score", capture, "--allow-vantage", "-e", "re", "-f", "json")
    refused = [f["flow_id"] for f in json.loads(out)["captures"][0]["flows"] if not f["replayed"]]
    pattern = rf"not replayed, {len(refused)} flows \(([^)]*)\): fewer than two ACKs"
    code, out = run("score", capture, "--allow-vantage", "-e", "re")
    cut = re.search(pattern, " ".join(out.split()))
    assert code == 0 and cut and "… and" in cut.group(1)
    code, out = run("score", capture, "--allow-vantage", "-e", "re", "--all-flows")
    listed = re.search(pattern, " ".join(out.split()))
    assert code == 0 and listed and _expand(listed.group(1)) == refused


def test_reasons_that_differ_in_a_number_are_one_line():
    """The 12 mid-path flows of the MPTCP capture each rebuilt 0 to 7 RTT samples: one line, the numbers as a
    range."""
    code, out = run("score", MPTCP, "-e", "re")
    refused = [line for line in out.splitlines() if line.startswith("not replayed")]
    assert code == 0 and len(refused) == 1
    assert "not replayed, 12 flows (0–3, 6–12, 15): vantage mid_path: mid-path capture: only 0–7 RTT samples " \
           "rebuilt (fewer than 8)" in " ".join(out.split())


def test_flow_lists_cut_to_a_budget():
    assert id_runs([9, 1, 2, 3, 5, 6, 2]) == ["1–3", "5", "6", "9"]
    assert id_list(list(range(0, 200, 2)), 20, " (more)") == "0, 2, 4, 6, 8, 10, … and 94 more (more)"
    assert id_list(list(range(0, 200, 2)), None) == ", ".join(map(str, range(0, 200, 2)))
    groups = reason_groups({4: "x 1.5 of 8", 2: "x 3 of 8", 7: "y", 3: "x 2 of 8 (#)"})
    assert groups == [("x 1.5–3 of 8", [2, 4]), ("x 2 of 8 (#)", [3]), ("y", [7])]


def test_no_dangling_fairness_or_legend_rows_no_table_shows():
    """A decision-only control has no estimate: the fairness line is goodput's alone. The legend's truth and
    not-reproducible rows only under tables that have them."""
    code, out = run("score", S09, "-e", "cubic")
    fair = " ".join(out.split()).split("Jain's fairness over bulk flows: ")[1]
    assert code == 0 and fair.startswith("goodput 0.96") and "estimates" not in fair.split("columns:")[0]
    code, out = run("score", SAMPLE, "-e", "re", "--no-sidecar")
    assert "columns:" in out and "vs truth" not in out and "(n/r)" not in out
    code, out = run("score", RECEIVER, "-e", "be,re", "--no-sidecar")
    assert "(n/r)       not reproducible" in out


def test_flows_table_headers_say_what_they_count():
    code, out = run("flows", SAMPLE)
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("flow "))
    assert code == 0 and re.search(r"packets\s+bytes\s+goodput", lines[top])
    assert re.search(r"both ways\s+acked\s+Mbit/s", lines[top + 1]) and set(lines[top + 2]) <= {"-", " "}


def _unpack(o: Any) -> Any:
    """The report's packed number lists restored (what the report's script does in the browser)."""
    if isinstance(o, list):
        return [_unpack(v) for v in o]
    if not isinstance(o, dict):
        return o
    if "$" in o and isinstance(o.get("v"), list):
        k, out = 0, []
        for step in o["v"]:
            if step is not None:
                k += step
            out.append(None if step is None else k / 10 ** o["$"])
        return out
    return {key: _unpack(v) for key, v in o.items()}


def _element(page: str, element_id: str) -> str:
    found = re.search(rf"<script[^>]*id='{element_id}'[^>]*>(.*?)</script>", page, re.S)
    assert found, element_id
    return found.group(1)


def test_the_report_holds_the_graph_thinned_to_its_width_and_compressed(tmp_path, monkeypatch):
    """The embedded graph is the congestion graph's M4 window at the report's width, exactly (once unpacked);
    plotly.js and the graphs are compressed; ``--out`` renders and writes the report once."""
    from ackreplay.cli import report as report_module
    from ackreplay.core.capture_scoring import build_estimators, score_file
    from ackreplay.graphs.congestion import source_for

    renders = []
    render = report_module.render
    monkeypatch.setattr(report_module, "render", lambda scored: renders.append(1) or render(scored))
    code, _ = run("score", S07, "-e", "be,re,newreno", "--out", tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert code == 0 and renders == [1] and len(page) < 1_300_000  # 10.8 MB with the default set, uncompressed
    graphs = json.loads(gzip.decompress(base64.b64decode(_element(page, "report-graphs"))))
    plotly = gzip.decompress(base64.b64decode(_element(page, "report-plotly")))
    assert plotly == report_module.PLOTLY_BASIC_JS.read_bytes()  # the basic bundle: all the report draws
    sc = score_file(S07, build_estimators(["be", "re", "newreno"], {}), keep_series=True)
    flows = {fr.flow_id: fr for fr in sc.replay.flows}
    want = json.loads(json.dumps(source_for(sc.ingest, flows[2], 2).window(px=report_module.REPORT_PX)))
    assert graphs["congestion-0"]["sequence"] != want["sequence"]  # packed: the steps, not the values
    assert _unpack(graphs["congestion-0"]) == want and want["px"] == 1200 and not want["full_resolution"]
    assert "Throughput shares of one NewReno and one Westwood+ flow" in _element(page, "report-figures")
    assert not re.search(r"<script[^>]+src=", page)


def _series(o: Any) -> list[list[Any]]:
    """Every time column of the graphs' data (the ``t`` of each series)."""
    if isinstance(o, list):
        return [t for v in o for t in _series(v)]
    if not isinstance(o, dict):
        return []
    return ([o["t"]] if isinstance(o.get("t"), list) else []) + [t for v in o.values() for t in _series(v)]


def test_the_report_of_a_2mb_capture_is_under_1_1_mb_with_every_series_in_the_m4_budget(tmp_path):
    """Issue #36: ``score --out`` on a 2.4 MB capture writes a report that needs no other file (nothing it loads
    from beside it or the network) and is at most 1.1 MB; every series of its graphs holds at most the M4
    budget, 4 points per pixel column and the one point each side that takes the line to the edges."""
    from ackreplay.cli.report import REPORT_PX

    code, _ = run("score", S06, "--out", tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert code == 0 and not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert len(page.encode()) <= 1_100_000, len(page.encode())
    graphs = _unpack(json.loads(gzip.decompress(base64.b64decode(_element(page, "report-graphs")))))
    series = _series(graphs)
    assert len(graphs) == 1 and len(series) > 20 and graphs["congestion-0"]["px"] == REPORT_PX
    assert max(map(len, series)) <= 4 * REPORT_PX + 2 and not graphs["congestion-0"]["full_resolution"]
    figures = json.loads(_element(page, "report-figures"))["figures"]
    assert all(len(t["x"]) <= 4 * REPORT_PX + 2 for f in figures.values() for t in f["data"])


def test_the_vendored_plotly_basic_bundle_is_the_plotly_packages_version():
    """The report's plotly.js (the basic bundle, cli/data) is the version the ``plotly`` package ships in full
    (the figures' JSON is made by it): after a plotly upgrade, scripts/vendor-plotly-basic.sh refreshes it."""
    import plotly

    from ackreplay.cli.report import PLOTLY_BASIC_JS

    full = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:300]
    basic = PLOTLY_BASIC_JS.read_text()[:300]
    version = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", full)
    assert version and f"plotly.js (basic - minified) v{version.group(1)}" in basic


def test_a_report_draws_flows_that_were_not_replayed_from_the_capture_alone(tmp_path):
    """Issue #33: every flow of this capture is refused for replay; the report draws its time–sequence, flight and
    RTT panels all the same (the congestion graph without a replay) and says why there are no estimator
    overlays."""
    from ackreplay.cli.report import REPORT_PX
    from ackreplay.core.capture_scoring import build_estimators, score_file
    from ackreplay.graphs.congestion import source_for

    target = tmp_path / "refused.html"
    code, out = run("report", REFUSED, "-o", target)
    page = target.read_text()
    assert code == 0 and "wrote" in out
    graphs = _unpack(json.loads(gzip.decompress(base64.b64decode(_element(page, "report-graphs")))))
    sc = score_file(REFUSED, build_estimators(None, {}))
    assert sc.replay.flows == [] and list(sc.replay.skipped) == [0]
    want = json.loads(json.dumps(source_for(sc.ingest, None, 0).window(px=REPORT_PX)))
    assert list(graphs) == ["congestion-0"] and graphs["congestion-0"] == want and not want["replayed"]
    assert len(want["sequence"]["retransmitted"]["t"]) == 5 and want["rates"] == {}
    note = re.search(r"<p class='not-replayed'>(.*?)</p>", page)
    assert note and "vantage unknown" in note.group(1) and "the estimators' overlays" in note.group(1)
    assert "flow 0: " in page and "(not replayed)" in page
