"""``ackreplay score``: table, JSON, CSV, the --out files, ground truth, and clean errors."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from ackreplay.cli.main import app
from tests.conftest import ROOT, SHARED

SAMPLE = ROOT / "samples" / "sample.pcap"
S09 = SHARED / "generated" / "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"
SCORE_KEYS = {"mean_bps", "median_bps", "mean_signed_rel_error", "mean_abs_rel_error", "nrmse", "over_share",
              "under_share", "cov", "convergence_s", "decisions", "ssthresh_over_ideal_mean",
              "ssthresh_over_ideal_median", "newreno_over_ideal_median", "closer_than_newreno_share", "parameters"}
TRUTH_KEYS = {"mean_signed_rel_error_truth", "mean_abs_rel_error_truth", "nrmse_truth", "over_share_truth",
              "under_share_truth", "convergence_s_truth", "ssthresh_over_ideal_median_truth"}
runner = CliRunner()


def run(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_table_marks_the_best_per_column():
    code, out, _ = run("score", SAMPLE)
    assert code == 0
    assert "flow 2: 10.201.1.1:40001 -> 10.201.2.1:5201" in out
    for name in ("be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr", "westwood_plus", "bbr_bw", "newreno"):
        assert re.search(rf"^{name}\s", out, re.M)
    assert "*" in out and "vs truth" in out  # the sample's metadata sidecar gives the truth
    # what limited the sender, the largest share first (the sample's bulk CUBIC flow: mostly the network)
    assert re.search(r"^  limited by: the network \(cwnd\) \d+ %, the (application|send buffer) \d+ %", out, re.M)


def test_json_has_every_score_of_section_5():
    code, out, _ = run("score", S09, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    (cap,) = doc["captures"]
    assert cap["file"].endswith(S09.name) and cap["truth"]["bottleneck_bps"] == 10_000_000
    flows = {f["flow_id"]: f for f in cap["flows"]}
    bulk = [f for f in flows.values() if f["replayed"] and f["bytes"] > 65536]
    assert len(bulk) == 2
    for f in bulk:
        for key in ("flow_id", "sender", "receiver", "packets", "acks", "dupacks", "retransmissions",
                    "loss_events", "goodput_bps", "rttmin_s", "mss", "vantage"):
            assert key in f
        assert set(f["scores"]) == {e["name"] for e in doc["estimators"]}
        for s in f["scores"].values():
            assert set(s) >= SCORE_KEYS | TRUTH_KEYS
        assert f["scores"]["be"]["decisions"] == f["loss_events"]
    assert cap["scores"]["fairness"]["goodput"] == pytest.approx(0.959, abs=0.01)
    assert cap["scores"]["re"]["flows"] == sum(f["replayed"] for f in flows.values())
    receiver_side = [f for f in flows.values() if not f["replayed"]]
    assert receiver_side and all("vantage" in f["skipped_reason"] for f in receiver_side)


def test_selection_and_parameters_are_recorded():
    code, out, _ = run("score", SAMPLE, "-e", "be,abse", "-p", "be.tau=0.5", "-p", "abse.N=12", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    params = {"tau": 0.5, "pairing": True, "max_segments_per_ack": None}
    assert doc["estimators"][0] == {"name": "be", "parameters": params, "version": doc["ackreplay_version"]}
    flow = next(f for f in doc["captures"][0]["flows"] if f["flow_id"] == 2)
    assert set(flow["scores"]) == {"be", "abse"} and flow["scores"]["abse"]["parameters"]["N"] == 12.0


def test_truth_on_the_command_line_overrides_the_sidecar():
    code, out, _ = run("score", SAMPLE, "-e", "re", "--truth", "fair_share=5Mbit", "-f", "json")
    assert code == 0
    cap = json.loads(out)["captures"][0]
    assert cap["truth"]["fair_share_bps"] == 5e6 and cap["truth_source"] == "command line"


def test_csv_has_a_row_per_flow_and_estimator():
    code, out, _ = run("score", SAMPLE, "-e", "be,re", "-f", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    replayed = {r["flow_id"] for r in rows}
    assert len(rows) == 2 * len(replayed) and {"be", "re"} == {r["estimator"] for r in rows}
    assert json.loads(rows[0]["parameters"])["tau"] == 1.0
    # what limited each flow's sender: each label's share of its time, the same on each of its rows
    shares = [float(rows[0][f"limit_{k}"]) for k in ("cwnd", "rwnd", "app", "sndbuf", "unknown")]
    assert sum(shares) == pytest.approx(1) and rows[0]["limit_cwnd"] == rows[1]["limit_cwnd"]


def test_out_directory_holds_series_decisions_scores_and_an_offline_report(tmp_path):
    code, _, err = run("score", SAMPLE, "--out", tmp_path / "out")
    assert code == 0 and "report.html" in err
    base = tmp_path / "out"
    series = pl.read_parquet(base / SAMPLE.name / "series.parquet")
    assert {"t", "t_rel", "achieved_bps", "truth_bps", "be_bps", "newbr_bps", "flow_id"} <= set(series.columns)
    decisions = pl.read_parquet(base / SAMPLE.name / "decisions.parquet")
    assert decisions.filter(pl.col("flow_id") == 2)["episode"].n_unique() == 39
    doc = json.loads((base / "scores.json").read_text())
    (flow2,) = [f for f in doc["captures"][0]["flows"] if f["flow_id"] == 2]
    assert sum(flow2["limits"].values()) == pytest.approx(1)
    # the limits' intervals: contiguous round trips whose lengths make the JSON's shares
    limits = pl.read_parquet(base / SAMPLE.name / "limits.parquet").filter(pl.col("flow_id") == 2)
    assert limits.height > 10 and (limits["start_rel_s"][1:] == limits["end_rel_s"][:-1]).all()
    by = limits.group_by("label").agg((pl.col("end_rel_s") - pl.col("start_rel_s")).sum().alias("s"))
    span = limits["end_rel_s"][-1] - limits["start_rel_s"][0]
    assert dict(zip(by["label"], (by["s"] / span).to_list(), strict=True)) == pytest.approx(
        {k: v for k, v in flow2["limits"].items() if v > 0})
    assert (base / "scores.csv").read_text().startswith("file,flow_id")
    report = (base / "report.html").read_text()
    assert "Plotly" in report and "drawCongestion" in report and "id='congestion-0'" in report
    assert "<strong>limited by:</strong> the network (cwnd)" in report
    assert not re.search(r"<script[^>]+src=", report)  # nothing to fetch: opens offline


def test_sidecar_yaml_truth(tmp_path):
    cap = tmp_path / "x.pcap"
    shutil.copy(SAMPLE, cap)
    (tmp_path / "x.pcap.truth.yaml").write_text("bottleneck: 8Mbit\nshared_by: each\n")
    code, out, _ = run("score", cap, "-e", "re", "-f", "json")
    assert code == 0
    doc = json.loads(out)["captures"][0]
    assert doc["truth"]["bottleneck_bps"] == 8e6 and doc["truth_source"].endswith("x.pcap.truth.yaml")


@pytest.mark.parametrize("args,code,error", [
    (["-e", "vegas"], 2, "unknown_estimator"),
    (["-p", "be.tau=-1"], 2, "parameter_out_of_range"),
    (["-p", "be.speed=3"], 2, "unknown_parameter"),
    (["-p", "tau=3"], 2, "invalid_parameter"),
    (["--truth", "bottleneck=fast"], 2, "invalid_truth"),
    (["-f", "xml"], 2, "bad_format"),
])
def test_bad_options_are_named(args, code, error):
    c, out, err = run("score", SAMPLE, *args)
    assert c == code and f"error [{error}]" in err and out == ""


def test_bad_capture_exits_3_without_traceback(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    proc = subprocess.run([sys.executable, "-m", "ackreplay.cli.main", "score", str(bad)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 3 and "error [unknown_format]" in proc.stderr
    assert "Traceback" not in proc.stderr


def _cli(*args: str, stdin: bytes | None = None, shell: str | None = None) -> subprocess.CompletedProcess[bytes]:
    cmd = shell if shell is not None else [sys.executable, "-m", "ackreplay.cli.main", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=300, cwd=ROOT, shell=shell is not None,
                          executable="/bin/bash" if shell is not None else None)


def test_score_reads_standard_input_and_pipes_as_the_file_itself():
    """`-` reads standard input, and /dev/stdin fed by a pipe (not seekable) works too; the document is
    the file's, named `stdin`."""
    want = json.loads(_cli("score", str(SAMPLE), "-f", "json", "--no-sidecar").stdout)
    piped = _cli("score", "-", "-f", "json", stdin=SAMPLE.read_bytes())
    assert piped.returncode == 0, piped.stderr
    doc = json.loads(piped.stdout)
    assert doc["captures"][0]["file"] == "stdin"
    assert doc["captures"][0]["flows"] == want["captures"][0]["flows"]
    dev = _cli(shell=f"cat {SAMPLE} | {sys.executable} -m ackreplay.cli.main score /dev/stdin -f json --no-sidecar")
    assert dev.returncode == 0, dev.stderr
    assert json.loads(dev.stdout)["captures"][0]["flows"] == want["captures"][0]["flows"]
    flows = _cli("flows", "-", "--json", stdin=SAMPLE.read_bytes())
    assert flows.returncode == 0 and [f["file"] for f in json.loads(flows.stdout)] == ["stdin"] * 3


@pytest.mark.parametrize(("data", "error"), [(b"", "empty_capture"), (b"hello, not a capture\n", "unknown_format")])
def test_bad_standard_input_is_named_without_traceback(data, error):
    proc = _cli("score", "-", stdin=data)
    assert proc.returncode == 3 and f"error [{error}]: stdin:".encode() in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_version_and_completion():
    code, out, _ = run("--version")
    assert code == 0 and re.fullmatch(r"ackreplay \S+\n", out)
    code, out, _ = run("--help")
    assert code == 0 and "--install-completion" in out and "report" in out


def test_flow_host_and_port_select_what_is_replayed():
    """--flow, --host and --port (issue #12): only the selected flows are replayed; the others are listed as
    not selected in JSON and left out of the table's 'not replayed' line."""
    code, out, _ = run("score", SAMPLE, "-e", "re", "--port", "40001", "-f", "json")
    assert code == 0
    flows = {f["flow_id"]: f for f in json.loads(out)["captures"][0]["flows"]}
    assert [fid for fid, f in flows.items() if f["replayed"]] == [2]
    assert flows[0]["skipped_reason"].startswith("not selected")
    code, out, _ = run("score", SAMPLE, "-e", "re", "--flow", "2", "--host", "10.201.2.1")
    assert code == 0 and "flow 2:" in out and "not selected" not in out
    code, out, _ = run("score", SAMPLE, "-e", "re", "--host", "192.0.2.1", "-f", "json")
    assert code == 0 and not any(f["replayed"] for f in json.loads(out)["captures"][0]["flows"])
    code, _, err = run("score", SAMPLE, "--flow", "99")
    assert code == 4 and "error [flow_not_found]" in err and "Traceback" not in err


def test_report_writes_the_html_report_alone(tmp_path):
    target = tmp_path / "sample.html"
    code, out, _ = run("report", SAMPLE, "-o", target, "-e", "be,re")
    assert code == 0 and str(target) in out
    text = target.read_text()
    assert text.startswith("<!doctype html>") and "flow 2:" in text and "why" in text
    assert "<script src=" not in text  # plotly is inlined: the report opens offline


def test_graph_writes_png_svg_and_pdf_and_names_bad_requests(tmp_path):
    """``ackreplay graph``: the congestion graph of the biggest replayed flow (or each --flow) as a file;
    an unknown flow exits 4 and an unknown format 2, each with its message and nothing written."""
    code, out, _ = run("graph", SAMPLE, "-o", tmp_path / "g.png")
    assert code == 0 and (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, _ = run("graph", SAMPLE, "--flow", "2", "--flow", "0", "-o", tmp_path / "w.svg", "--t0", "1",
                       "--t1", "2", "--log", "-e", "be,abse")
    assert code == 0 and "w-flow2.svg" in out and "w-flow0.svg" in out
    svg = (tmp_path / "w-flow2.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "abse" in svg and "westwood_plus" not in svg
    code, _, _ = run("graph", SAMPLE, "--flow", "2", "-o", tmp_path / "g.pdf")
    assert code == 0 and (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    code, _, err = run("graph", SAMPLE, "--flow", "7", "-o", tmp_path / "none.png")
    assert code == 4 and "flow 7: no such flow" in err and not (tmp_path / "none.png").exists()
    code, _, err = run("graph", SAMPLE, "-o", tmp_path / "g.txt")
    assert code == 2 and "bad_format" in err
    # the queue panel (#24): (RTT − RTTmin)·C with the path's capacity, and the inferred buffer when known
    code, _, _ = run("graph", SHARED / "generated" / "s08_cubic_1f_2M_rtt200_buf1bdp.pcap", "-o", tmp_path / "q.svg",
                     "-e", "newreno")
    svg = (tmp_path / "q.svg").read_text()
    assert code == 0 and "queue (bytes)" in svg and "inferred buffer" in svg and "capacity (packet pairs)" in svg


def test_graph_draws_a_flow_that_was_not_replayed_from_the_capture_alone(tmp_path):
    """Every flow of this capture is refused for replay (5 RTO retransmissions, no ACK, no handshake to place the
    capture point by): tcptrace and Wireshark
    draw its time–sequence graph all the same, and so does ``graph`` — without the rate panel and the estimators,
    saying why; a flow the capture does not have still exits 4."""
    retx = SHARED / "public" / "gh-chrissanders-packets__tcp_retransmissions.pcapng"
    code, out, err = run("graph", retx, "-o", tmp_path / "r.svg")
    assert code == 0 and "wrote" in out
    assert "flow 0 was not replayed (vantage unknown: " in err and "): drawn from the capture alone" in err
    svg = (tmp_path / "r.svg").read_text()
    assert "retransmitted" in svg and "RTT (ms)" in svg and "Mbit/s" not in svg and "(not replayed)" in svg
    code, _, err = run("graph", retx, "--flow", "0", "-o", tmp_path / "f.png")
    assert code == 0 and (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run("graph", retx, "--flow", "3", "-o", tmp_path / "none.png")
    assert code == 4 and "flow 3: no such flow" in err and not (tmp_path / "none.png").exists()


def _cli_env(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "ackreplay.cli.main", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("columns", [60, 80, 132])
def test_tables_fit_the_terminal_split_by_columns_never_mid_number(columns):
    """Every line fits the terminal (paths aside); a table too wide is split into blocks of whole columns,
    each repeating the estimator column; headers carry units; the legend says what each column is."""
    res = _cli_env("score", SAMPLE, S09, columns=columns)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if str(SHARED) not in line and str(ROOT) not in line]
    assert max(len(line) for line in lines) <= columns, max(lines, key=len)
    flow2 = res.stdout.split("-- flow 2:")[1].split("why:")[0]
    assert flow2.count("\nestimator") == (1 if columns >= 132 else 2 if columns >= 80 else 3)
    assert "Mbit/s" in flow2 and "(E-R)/R" in flow2 and "vs truth" in flow2  # units in the headers
    # each block holds every estimator with whole numbers: the be row's cells, block after block
    be_cells = [c for line in flow2.splitlines() if line.startswith("be ") for c in line.split()[1:]]
    assert be_cells[:3] == ["38.538", "15.235", "15.235"] and all(re.fullmatch(r"-|-?\d+\.\d+\*?", c)
                                                                  for c in be_cells)
    assert "columns:" in res.stdout and "ss/ideal    median ssthresh at loss events" in res.stdout
    # several captures: a combined board over every bulk flow, ranked by the composite error
    combined = res.stdout.split("== all 2 captures: 3 bulk flows")[1]
    assert re.search(r"^tibet\s+1=?\s+3!\s", combined, re.M)  # = a tie, ! under the minimum sample
    assert "95% CI" in combined and "Warning: 3 flow(s), under 10" in " ".join(combined.split())
    assert "--no-legend" and "columns:" not in _cli_env("score", SAMPLE, "--no-legend").stdout


def test_compare_puts_two_captures_side_by_side():
    res = _cli_env("compare", SAMPLE, S09)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"A = {SAMPLE}") and "(2 bulk flows)" in res.stdout
    tibet = next(line for line in res.stdout.splitlines() if line.startswith("tibet "))
    a, b, change = (float(x) for x in tibet.split()[1:4])
    assert change == pytest.approx(b - a, abs=1.5e-3)
    assert max(len(line) for line in res.stdout.splitlines()[2:]) <= 80
    bad = _cli_env("compare", SAMPLE, ROOT / "nope.pcap")
    assert bad.returncode == 3 and "nope.pcap" in bad.stderr and "Traceback" not in bad.stderr


def test_csv_carries_bytes_and_a_bulk_flag():
    code, out, _ = run("score", SAMPLE, "-e", "re", "-f", "csv")
    assert code == 0
    rows = {r["flow_id"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["0"]["bytes"] == "480" and rows["0"]["bulk"] == "False"  # the control connection
    assert int(rows["2"]["bytes"]) > 6_000_000 and rows["2"]["bulk"] == "True"
    assert rows["2"]["vantage"] == "sender"


def test_numpy_warnings_never_reach_the_terminal(monkeypatch):
    """Degenerate arithmetic inside scoring (NaN by design before the first sample) is never reported as a
    numpy warning to the user."""
    import numpy as np

    import ackreplay.core.capture_scoring

    real = ackreplay.core.capture_scoring.score_file

    def noisy(*args, **kwargs):
        np.mean(np.array([]))  # "Mean of empty slice"
        _ = np.float64(1.0) / np.float64(0.0)  # "divide by zero"
        return real(*args, **kwargs)

    monkeypatch.setattr(ackreplay.core.capture_scoring, "score_file", noisy)
    import warnings as w

    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        code, _, err = run("score", SAMPLE, "-e", "re")
    assert code == 0 and not [c for c in caught if issubclass(c.category, RuntimeWarning)]
    assert "RuntimeWarning" not in err


def test_one_progress_bar_on_a_terminal_that_leaves_nothing_behind():
    """On a terminal, one bar covers every input (1/2, 2/2) and is erased at the end; stdout is the table."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ackreplay.cli.main", "score", str(SAMPLE), str(S09)],
                            stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "COLUMNS": "80", "TERM": "xterm"},
                            cwd=ROOT)
    os.close(slave)
    out = proc.stdout.read() if proc.stdout else b""
    proc.wait(timeout=300)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    text = seen.decode()
    assert proc.returncode == 0 and "sample.pcap (1/2)" in text and "(2/2) replay" in text
    assert text.endswith("\x1b[2K")  # the bar's line erased: nothing left behind
    assert "\n" not in text.replace("\r\n\x1b[?25h", "")  # one line, redrawn in place
    assert out.decode().startswith("== ")


def test_notebook_results_convert_to_pandas_and_render_as_html():
    from ackreplay.core.capture_scoring import build_estimators, score_file

    sc = score_file(SAMPLE, build_estimators(["re", "abse"], {}))
    frame = sc.scores_frame()
    assert frame.columns[:8] == ["file", "flow_id", "sender", "receiver", "bytes", "bulk", "vantage",
                                 "reconstruction"]
    assert frame.filter(pl.col("bulk"))["flow_id"].unique().to_list() == [2]
    df = sc.to_pandas()
    assert type(df).__module__.startswith("pandas") and df.shape == frame.shape
    assert df.loc[(df.flow_id == 2) & (df.estimator == "re"), "mean_abs_rel_error"].iloc[0] == pytest.approx(
        sc.replay.flows[-1].scores["re"]["mean_abs_rel_error"])
    html_text = sc._repr_html_()
    assert "<table" in html_text and "1 bulk flows replayed" in html_text
    assert "<table" in sc.replay._repr_html_() and "<table" in sc.replay.flows[-1]._repr_html_()


NS3_CUBIC = ROOT / "tests" / "data" / "ns3" / "cubic_1f_bdp1.pcap.gz"


def test_highspeed_group_scores_the_decision_only_controls(tmp_path):
    """``-e highspeed`` adds STCP, HSTCP, HTCP, BIC and CUBIC beside NewReno and Westwood+: decisions and the
    loss-event scores in the JSON, CSV and Parquet; their estimate columns none, never 0."""
    code, out, _ = run("score", NS3_CUBIC, "-e", "highspeed", "-f", "json")
    assert code == 0
    flow = max(json.loads(out)["captures"][0]["flows"], key=lambda f: f["bytes"])
    sc = flow["scores"]
    assert list(sc) == ["newreno", "stcp", "hstcp", "htcp", "westwood_plus", "bic", "cubic"]
    for name in ("stcp", "hstcp", "htcp", "bic", "cubic"):
        assert sc[name]["mean_bps"] is None and sc[name]["decisions"] == flow["loss_events"] > 0
        assert sc[name]["ssthresh_over_ideal_median"] > 0 and sc[name]["closer_than_newreno_share"] is not None
    assert sc["cubic"]["parameters"] == {"beta": 0.7, "fast_convergence": True}
    code, out, _ = run("score", NS3_CUBIC, "-e", "stcp,cubic", "-p", "cubic.beta=buffer_study", "-f", "csv")
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["bulk"] == "True"]
    assert [r["estimator"] for r in rows] == ["stcp", "cubic"] and rows[0]["mean_bps"] == ""
    assert json.loads(rows[1]["parameters"])["beta"] == 0.8
    # the old names (docs/estimators.md, renamed names) are still read, and never written back
    code, out, _ = run("score", NS3_CUBIC, "-e", "seed004", "-p", "cubic.beta=seed004", "-f", "json")
    old = max(json.loads(out)["captures"][0]["flows"], key=lambda f: f["bytes"])["scores"]
    assert code == 0 and list(old) == list(sc) and old["cubic"]["parameters"]["beta"] == 0.8 and "seed00" not in out
    code, _, _ = run("score", NS3_CUBIC, "-e", "all", "--out", tmp_path / "out")
    base = tmp_path / "out" / NS3_CUBIC.name
    decisions = pl.read_parquet(base / "decisions.parquet")
    cubic = decisions.filter(pl.col("estimator") == "cubic")
    assert cubic.height == flow["loss_events"] and cubic["estimate_bps"].null_count() == cubic.height
    assert cubic["note"].str.contains("W_max").all()
    series = pl.read_parquet(base / "series.parquet")
    assert series["cubic_bps"].null_count() == series.height  # none, not 0
    assert "cubic" in (tmp_path / "out" / "report.html").read_text()


def test_graph_names_decision_only_controls_by_their_markers(tmp_path):
    """CUBIC and the other §8 controls have no estimate: no rate line, their ssthresh markers named in the
    flight panel (a group word selects them)."""
    code, _, _ = run("graph", NS3_CUBIC, "-e", "highspeed", "-o", tmp_path / "g.svg")
    assert code == 0
    svg = (tmp_path / "g.svg").read_text()
    assert "cubic ssthresh" in svg and "westwood_plus" in svg and "westwood_plus ssthresh" not in svg


def test_the_report_shows_the_path_and_the_seed_models(tmp_path):
    """Issue #24: each flow's path (figures and evidence), seed 004's verdicts and seed 002's curve with the
    path's buffer/BDP marked — on s01, whose buffer is one BDP."""
    s01 = SHARED / "generated" / "s01_cubic_1f_10M_rtt40_buf1bdp.pcap"
    if not s01.exists():
        pytest.skip("shared captures not present")
    target = tmp_path / "r.html"
    code, _, _ = run("report", s01, "-o", target, "-e", "newreno")
    text = target.read_text()
    assert code == 0 and "<strong>path:</strong> capacity 10.0" in text and "packet-pair dispersion mode" in text
    assert "Busy-link rule on this path" in text and "westwood_plus" in text
    assert "Throughput shares of one NewReno and one Westwood+ flow" in text
    assert "this path: 0.99" in text  # the buffer/BDP marked on the curve


def test_model_prints_the_share_model_and_the_busy_link_rule(tmp_path):
    """``ackreplay model``: seed 002's shares at a buffer/BDP (with the floor-half fix) and seed 004's verdict
    per algorithm; ``--curve`` a range; ``--json`` the same as data; a bad range is a usage error."""
    code, out, _ = run("model", "--buffer-bdp", "0.5")
    assert code == 0 and "NewReno 0.375, Westwood+ 0.623" in out and "cubic" in out and "link busy" in out
    code, out, _ = run("model", "--buffer-bdp", "2", "--json")
    doc = json.loads(out)
    assert doc["share_model_floor_half"]["newreno"] == pytest.approx(0.5) and doc["busy_link"]["newreno"]["busy_link"]
    code, out, _ = run("model", "--curve", "0.1:10:5")
    assert code == 0 and len([line for line in out.splitlines() if line.strip()[:1].isdigit()]) == 5
    code, _, _err = run("model", "--curve", "3:1")
    assert code == 2


def test_incomparable_flows_are_explained_unmarked_and_left_out_of_the_board_unless_asked():
    """s02's BBR flow loses no packet: no decision to score, so it is not comparable — its table has no best
    marked and says why; the combined board leaves it out unless --include-incomparable."""
    s01, s02 = SHARED / "generated" / "s01_cubic_1f_10M_rtt40_buf1bdp.pcap", \
        SHARED / "generated" / "s02_bbr_1f_10M_rtt40_buf4bdp.pcap"
    code, out, _ = run("score", s01, s02, "-e", "re,westwood_plus", "--no-legend")
    assert code == 0
    bbr = out.split(str(s02))[1].split("== all")[0]
    assert "not comparable (no best marked, left out of the rankings): 0 loss events" in " ".join(bbr.split())
    assert "*" not in bbr and "*" in out.split(str(s02))[0]
    board = " ".join(out.split("== all")[1].split())
    assert board.startswith("2 captures: 2 bulk flows") and "left out: 1 bulk flow(s) not comparable" in board
    code, out, _ = run("score", s01, s02, "-e", "re,westwood_plus", "--no-legend", "--include-incomparable")
    assert "ranked as asked (--include-incomparable): 1 bulk flow(s) not comparable" in " ".join(out.split())
    doc = json.loads(run("score", s02, "-e", "re", "-f", "json")[1])
    (flow,) = [f for f in doc["captures"][0]["flows"] if f["bytes"] > 1e6]
    assert flow["comparable"] is False and flow["comparable_reason"].startswith("0 loss events")


def test_the_report_of_several_captures_ends_with_the_combined_board_and_its_statistics():
    import ackreplay.estimators as E
    from ackreplay.cli.report import render
    from ackreplay.core.capture_scoring import score_file

    ests = [E.create("re"), E.create("tibet")]
    report = render([score_file(p, ests) for p in (SAMPLE, ROOT / "tests" / "data" / "pairs" / "asym.pcap.gz")])
    board = report.split("<h2>All captures</h2>")[1]
    assert "2 bulk flows" in board and "95% CI" in board and "Warning: 2 flow(s), under 10" in " ".join(board.split())


def test_batches_and_several_graphs_turn_the_garbage_collector_back_on(tmp_path):
    """``cli.collection``: a command runs with the collector paused (``main``); one input or one graph leaves it
    so; a batch of inputs turns it back on from the second, and ``graph`` from its second flow (a figure is held
    by reference cycles), so that what they leave behind is collected."""
    import gc

    from ackreplay.cli import collection

    try:
        for args, resumed in ((("score", SAMPLE, "-f", "json"), False), (("score", SAMPLE, SAMPLE, "-f", "json"), True),
                              (("graph", SAMPLE, "--flow", "2", "-o", tmp_path / "one.svg"), False),
                              (("graph", SAMPLE, "--flow", "2", "--flow", "0", "-o", tmp_path / "two.svg"), True)):
            collection.pause()
            assert run(*args)[0] == 0
            assert gc.isenabled() == resumed, args
    finally:
        collection.resume()
