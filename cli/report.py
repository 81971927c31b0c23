"""The self-contained HTML report of ``ackreplay score --out``: plots that open offline.

plotly.js comes from the ``plotly`` package and is embedded once; nothing is fetched from the network.
Per replayed flow: estimates over time against the achieved rate (and the truth), loss events marked;
each estimator's ssthresh at every loss event against the ideal and NewReno's; the score table.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go
import polars as pl
from plotly.offline import get_plotlyjs

from cli.score_table import score_table
from core.scoring import ScoredCapture
from estimators.diagnostics import explain

MAX_POINTS = 3000
LEGEND = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "xanchor": "left"}


def _thin(frame: pl.DataFrame) -> pl.DataFrame:
    step = max(1, frame.height // MAX_POINTS)
    return frame.gather_every(step) if step > 1 else frame


def flow_figures(sc: ScoredCapture, flow_id: int) -> tuple[go.Figure, go.Figure]:
    fr = next(f for f in sc.replay.flows if f.flow_id == flow_id)
    s = _thin(fr.series)
    x = s["t_rel"].to_list()
    fig = go.Figure()
    fig.add_scatter(x=x, y=(s["achieved_bps"] / 1e6).to_list(), name="achieved", line={"color": "black", "width": 3})
    if "truth_bps" in s.columns:
        fig.add_scatter(x=x, y=(s["truth_bps"] / 1e6).to_list(), name="truth (fair share)",
                        line={"color": "grey", "dash": "dash", "width": 3})
    for col in s.columns:
        if col.endswith("_bps") and col not in ("achieved_bps", "truth_bps"):
            name = col[:-4]
            fig.add_scatter(x=x, y=(s[col] / 1e6).to_list(), name=name, mode="lines",
                            visible="legendonly" if name == "newreno" else True)
    eps = fr.decisions.unique("episode", keep="first", maintain_order=True) if len(fr.decisions) else None
    if eps is not None:
        for row in eps.iter_rows(named=True):
            fig.add_vline(x=row["t_rel"], line={"color": "red" if row["kind"] == "timeout" else "orange",
                                                  "width": 1, "dash": "dot"})
    fig.update_layout(title=f"flow {flow_id}: estimates over time (loss events: orange = fast retransmit, "
                      "red = timeout)", xaxis_title="time since the flow's first packet (s)",
                      yaxis_title="Mbit/s", height=480, legend=LEGEND, margin={"t": 110})
    dec = go.Figure()
    if eps is not None:
        ideal_col = "ideal_truth_segments" if sc.truth is not None else "ideal_segments"
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
    return fig, dec


def render(scored: Sequence[ScoredCapture]) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>ackreplay report</title>",
             "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px}"
             "pre{background:#f6f6f6;padding:.8em;overflow-x:auto}</style>",
             f"<script>{get_plotlyjs()}</script></head><body><h1>ackreplay report</h1>",
             "<p>Estimates are replayed open-loop over each flow's real ACK stream (ESTIMATORS.md). "
             "'bias' is the time-weighted mean of (E−R)/R against the achieved rate R; '*' marks the best "
             "per column.</p>"]
    for sc in scored:
        parts.append(f"<h2>{html.escape(str(sc.path))}</h2>")
        if sc.truth is not None:
            parts.append(f"<p>Ground truth ({html.escape(sc.truth_source or '')}): "
                         f"{html.escape(str(sc.truth.to_dict()))}</p>")
        min_bytes = sc.truth.min_flow_bytes if sc.truth is not None else 65536
        small = []
        for fr in sc.replay.flows:
            summary = next(s for s in sc.ingest.flows if s.flow_id == fr.flow_id)
            if summary.bytes < min_bytes:
                small.append(str(fr.flow_id))
                continue
            parts.append(f"<h3>flow {fr.flow_id}: {html.escape(summary.sender)} → {html.escape(summary.receiver)}, "
                         f"{summary.goodput_bps / 1e6:.3f} Mbit/s, {summary.loss_events} loss events, "
                         f"vantage {html.escape(summary.vantage)}"
                         + (" <strong>(reconstructed)</strong>" if summary.reconstruction else "") + "</h3>")
            if summary.reconstruction:
                parts.append(f"<p>{html.escape(summary.reconstruction_evidence)}; {summary.confidence} confidence: "
                             f"{html.escape(summary.confidence_note)}.</p>")
            fig, dec = flow_figures(sc, fr.flow_id)
            parts.append(fig.to_html(full_html=False, include_plotlyjs=False))
            if len(fr.decisions):
                parts.append(dec.to_html(full_html=False, include_plotlyjs=False))
            parts.append(f"<pre>{html.escape(score_table(fr.scores, sc.truth is not None))}</pre>")
            why = explain(fr.diagnostics, fr.scores) if fr.diagnostics else []
            if why:
                parts.append("<ul class='why'>" + "".join(f"<li>{html.escape(w)}</li>" for w in why) + "</ul>")
        if small:
            parts.append(f"<p>Flows under {min_bytes} bytes (replayed; scores in scores.json/csv): "
                         f"{', '.join(small)}</p>")
        if sc.replay.skipped:
            items = "".join(f"<li>flow {k}: {html.escape(v)}</li>" for k, v in sc.replay.skipped.items())
            parts.append(f"<p>Not replayed:</p><ul>{items}</ul>")
    parts.append("</body></html>")
    return "".join(parts)
