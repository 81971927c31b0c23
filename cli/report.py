"""The self-contained HTML report of ``ackreplay score --out`` and ``ackreplay report``: plots that open offline.

plotly.js comes from the ``plotly`` package and is embedded once; nothing is fetched from the network.
Per replayed flow: the congestion graph (``graphs.congestion``, drawn by the dashboard's own
``congestion.js``, inlined: time–sequence, flight with each estimator's cwnd/ssthresh at every loss,
estimates against the achieved rate, RTT, on one time axis), each estimator's ssthresh at every loss event
against the ideal and NewReno's, the score table and why, and the path (§9) with the seeds' models on it.
The graph is embedded thinned to ``REPORT_PX``
pixel columns (minima and maxima kept); the dashboard and ``ackreplay graph --t0 --t1`` zoom at full
resolution.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import polars as pl
from plotly.offline import get_plotlyjs

from ackreplay.cli.score_table import score_table
from ackreplay.cli.wording import explain, group_line, vantage_text
from ackreplay.core.capture_scoring import ScoredCapture, path_models
from ackreplay.graphs.congestion import source_for
from ackreplay.replay.engine import FlowReplay

REPORT_PX = 2000
CONGESTION_JS = Path(__file__).resolve().parents[1] / "api" / "dashboard" / "js" / "congestion.js"
LEGEND = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "xanchor": "left"}


def decisions_figure(fr: FlowReplay, with_truth: bool) -> go.Figure:
    """Each estimator's ssthresh at every loss event against the ideal and NewReno's."""
    flow_id = fr.flow_id
    dec = go.Figure()
    if len(fr.decisions):
        eps = fr.decisions.unique("episode", keep="first", maintain_order=True)
        ideal_col = "ideal_truth_segments" if with_truth else "ideal_segments"
        dec.add_scatter(x=eps["t_rel"].to_list(), y=eps[ideal_col].to_list(), name="ideal", mode="markers",
                        marker={"symbol": "line-ew-open", "size": 18, "color": "black"})
        dec.add_scatter(x=eps["t_rel"].to_list(), y=eps["newreno_ssthresh_segments"].to_list(), name="NewReno",
                        mode="markers", marker={"symbol": "x", "size": 9, "color": "grey"})
        for name in fr.decisions["estimator"].unique(maintain_order=True):
            if name == "newreno":
                continue
            rows = fr.decisions.filter(pl.col("estimator") == name)
            dec.add_scatter(x=rows["t_rel"].to_list(), y=rows["ssthresh_segments"].to_list(), name=name,
                            mode="markers")
    dec.update_layout(title=f"flow {flow_id}: ssthresh each estimator would set at each loss event",
                      xaxis_title="time since the flow's first packet (s)", yaxis_title="ssthresh (segments)",
                      height=400, legend=LEGEND, margin={"t": 110})
    return dec


def seed002_figure(buffer_over_bdp: float, measured: dict[str, float] | None = None) -> go.Figure:
    """Seed 002's NewReno/Westwood+ shares over buffer/BDP (with and without the floor-half fix), this
    path's buffer/BDP marked."""
    from ackreplay.path.analytic import seed002_curve

    hi = max(8.0, 2 * buffer_over_bdp)
    plain, fixed = seed002_curve(0.05, hi, 40), seed002_curve(0.05, hi, 40, floor_half=True)
    fig = go.Figure()
    x = [p["buffer_over_bdp"] for p in plain]
    fig.add_scatter(x=x, y=[p["newreno"] for p in plain], name="NewReno", line={"color": "#1f77b4"})
    fig.add_scatter(x=x, y=[p["westwood_plus"] for p in plain], name="Westwood+", line={"color": "#d62728"})
    fig.add_scatter(x=x, y=[p["westwood_plus"] for p in fixed], name="Westwood+ (floor-half fix)",
                    line={"color": "#d62728", "dash": "dot"})
    fig.add_vline(x=buffer_over_bdp, line={"color": "grey", "dash": "dash"},
                  annotation_text=f"this path: {buffer_over_bdp:.2f}×BDP")
    fig.update_layout(title="seed 002: throughput shares of one NewReno and one Westwood+ flow", height=330,
                      xaxis={"title": "buffer / BDP", "type": "log"}, yaxis={"title": "share of C", "range": [0, 1]},
                      legend=LEGEND, margin={"t": 90})
    return fig


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A small HTML table (cells escaped)."""
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return "<table class='path'><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr>{cells}</table>"


def path_html(path: dict[str, Any], models: dict[str, Any] | None, title: str = "path") -> str:
    """The §9 path: each figure with its evidence, seed 004's verdict and single-flow utilisation per rule, the
    same rule for every replayed decision at the flow's losses, and seed 002's curve with this path's
    buffer/BDP."""
    from ackreplay.cli.wording import path_line

    def link(v: dict[str, Any]) -> str:
        return "busy" if v["busy_link"] else "idles"

    evidence = (path.get("evidence") or {}).items()
    out = [f"<p><strong>{html.escape(title)}:</strong> {html.escape(path_line(path))}</p>",
           _table(("figure", "value", "evidence"), [(k, path.get(k), v) for k, v in evidence])]
    if models:
        out.append("<p>Seed 004 on this path (one flow): decrease factor b, the rule B ≥ b/(1−b)·BDP, and the "
                   "utilisation of the single-flow model.</p>")
        out.append(_table(("rule", "b", "link", "utilisation"), [(n, f"{v['decrease']:.3f}", link(v),
                                                                  f"{v['utilisation']:.3f}")
                                                                 for n, v in models["seed004"].items()]))
        if models.get("replayed"):
            out.append("<p>Seed 004's rule for each replayed decision at this flow's losses (b = median of "
                       "1 − ssthresh/w; real_sender: what the captured sender did).</p>")
            out.append(_table(("rule", "b", "losses", "link"), [(n, f"{v['decrease']:.3f}", v["losses"], link(v))
                                                               for n, v in models["replayed"].items()]))
        out.append(seed002_figure(float(path["buffer_over_bdp"])).to_html(full_html=False, include_plotlyjs=False))
    return "".join(out)


def _script_json(data: object) -> str:
    """JSON that can sit inside a <script> element."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render(scored: Sequence[ScoredCapture]) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>ackreplay report</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px}"
             "pre{background:#f6f6f6;padding:.8em;overflow-x:auto}"
             "table.path{border-collapse:collapse;font-size:.9em}table.path td,table.path th{border:1px solid #ddd;"
             "padding:.2em .5em;text-align:left;vertical-align:top}</style>",
             f"<script>{get_plotlyjs()}</script></head><body><h1>ackreplay report</h1>",
             "<p>Estimates are replayed open-loop over each flow's real ACK stream (ESTIMATORS.md). "
             "'bias' is the time-weighted mean of (E−R)/R against the achieved rate R; '*' marks the best "
             "per column.</p>"
             "<p>Each flow's congestion graph: time–sequence (data sent, retransmissions, ACK line, SACK blocks, "
             "receive window), bytes in flight with each estimator's cwnd (◇) and ssthresh (●) at every loss, "
             "estimates against the achieved rate (▲: above the axis; hover for the value), RTT. Drag to zoom "
             f"every panel; double-click to reset. Thinned to {REPORT_PX} columns, minima and maxima kept.</p>"]
    graphs: dict[str, object] = {}
    for sc in scored:
        parts.append(f"<h2>{html.escape(str(sc.path))}</h2>")
        if sc.truth is not None:
            parts.append(f"<p>Ground truth ({html.escape(sc.truth_source or '')}): "
                         f"{html.escape(str(sc.truth.to_dict()))}</p>")
        min_bytes = sc.min_flow_bytes
        small = []
        by_id = sc.ingest.flows.by_id()
        for fr in sc.replay.flows:
            summary = by_id[fr.flow_id]
            if not sc.bulk(summary.bytes):
                small.append(str(fr.flow_id))
                continue
            parts.append(f"<h3>flow {fr.flow_id}: {html.escape(summary.sender)} → {html.escape(summary.receiver)}, "
                         f"{summary.goodput_bps / 1e6:.3f} Mbit/s, {summary.loss_events} loss events, "
                         f"vantage {html.escape(vantage_text(summary.vantage, summary.vantage_position))}"
                         + (" <strong>(reconstructed)</strong>" if summary.reconstruction else "") + "</h3>")
            if summary.reconstruction:
                parts.append(f"<p>{html.escape(summary.reconstruction_evidence)}; {summary.confidence} confidence: "
                             f"{html.escape(summary.confidence_note)}.</p>")
            graph_id = f"congestion-{len(graphs)}"
            graphs[graph_id] = source_for(sc.ingest, fr, fr.flow_id).window(px=REPORT_PX)
            parts.append(f"<div id='{graph_id}' class='congestion' role='img' aria-label='congestion graph of flow "
                         f"{fr.flow_id}'></div>")
            if len(fr.decisions):
                fig = decisions_figure(fr, sc.truth is not None)
                parts.append(fig.to_html(full_html=False, include_plotlyjs=False))
            parts.append(f"<pre>{html.escape(score_table(fr.scores, sc.truth is not None))}</pre>")
            why = explain(fr.diagnostics, fr.scores) if fr.diagnostics else []
            if why:
                parts.append("<ul class='why'>" + "".join(f"<li>{html.escape(w)}</li>" for w in why) + "</ul>")
            if fr.path:
                parts.append(path_html(fr.path, path_models(fr.path, fr.decision_rows)))
        for g in sc.replay.path_groups:
            title = "shared bottleneck of flows " + ", ".join(map(str, g["flows"]))
            parts.append(path_html(g["path"], path_models(g["path"]), title))
            parts.append(f"<p>{html.escape(group_line(g))}</p>")
        if small:
            parts.append(f"<p>Flows under {min_bytes} bytes (replayed; scores in scores.json/csv): "
                         f"{', '.join(small)}</p>")
        if sc.replay.skipped:
            items = "".join(f"<li>flow {k}: {html.escape(v)}</li>" for k, v in sc.replay.skipped.items())
            parts.append(f"<p>Not replayed:</p><ul>{items}</ul>")
    if graphs:  # the dashboard's renderer, inlined: an inline module may hold exports, nothing imports them
        parts.append(f"<script type='module'>{CONGESTION_JS.read_text()}\nconst GRAPHS = {_script_json(graphs)};\n"
                     "for (const [id, data] of Object.entries(GRAPHS)) "
                     "drawCongestion(document.getElementById(id), data, { height: 900 });</script>")
    parts.append("</body></html>")
    return "".join(parts)
