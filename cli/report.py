"""The self-contained HTML report of ``ackreplay score --out`` and ``ackreplay report``: plots that open offline.

Per flow drawn: the congestion graph (``graphs.congestion``, drawn by the dashboard's own ``congestion.js``,
inlined: time–sequence, flight with each estimator's cwnd/ssthresh at every loss, estimates against the achieved
rate, RTT, on one time axis), each estimator's ssthresh at every loss event against the ideal and NewReno's, the
score table and why, and the path (§9) with the papers' models on it. Every bulk flow is drawn, replayed or not: one
that was not replayed (refused as invalid, off the sender, …) has what the capture shows — time–sequence, flight
and RTT — with a note saying why the estimators' overlays are missing; a capture without a bulk flow has its
largest flow drawn, as ``ackreplay graph`` does.

The graph is embedded thinned to ``REPORT_PX`` pixel columns, the report's width (M4, the dashboard's own
downsampling: each column's first, last, minimum and maximum, so the drawing is the full series'); the dashboard
and ``ackreplay graph --t0 --t1`` zoom at full resolution. The graphs' number columns are packed as integer steps
(:func:`pack`) and gzip-compressed in base64 (the browser unpacks them with ``DecompressionStream``).

plotly.js: the report draws scatter traces only, so it embeds plotly.js's *basic* bundle (scatter, bar, pie;
``cli/data/plotly-basic.min.js``, the npm package ``plotly.js-basic-dist-min`` at the version of the plotly.js
that the ``plotly`` package ships, refreshed by ``scripts/vendor-plotly-basic.sh``), 1.2 MB instead of 4.8 MB,
compressed likewise: 0.5 MB in the page instead of 2.0 MB. It is embedded, not written beside the report: one file
opens offline wherever it is copied, and a 2 MB capture's report is about 0.8 MB. The dashboard keeps the full
bundle (its compare page draws a heat map).
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import polars as pl

from ackreplay.cli.score_table import score_table
from ackreplay.cli.wording import explain, group_line, limits_line, vantage_text
from ackreplay.core.capture_scoring import ScoredCapture, path_models
from ackreplay.graphs.congestion import source_for
from ackreplay.replay.engine import FlowReplay

#: The graph's pixel columns: the report's width (its body is at most 1200 px wide).
REPORT_PX = 1200
#: A list of numbers this long or longer is packed as integer steps (:func:`pack`); shorter ones gain nothing.
PACK_MIN = 8
CONGESTION_JS = Path(__file__).resolve().parents[1] / "api" / "dashboard" / "js" / "congestion.js"
#: plotly.js's basic bundle (scatter, bar, pie): everything the report draws, a quarter of the full bundle's size.
PLOTLY_BASIC_JS = Path(__file__).resolve().parent / "data" / "plotly-basic.min.js"
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


def share_model_figure(buffer_over_bdp: float, measured: dict[str, float] | None = None) -> go.Figure:
    """Möller et al.'s (2007) NewReno/Westwood+ shares over buffer/BDP (with and without the floor-half fix), this
    path's buffer/BDP marked."""
    from ackreplay.path.analytic import newreno_westwood_curve

    hi = max(8.0, 2 * buffer_over_bdp)
    plain, fixed = newreno_westwood_curve(0.05, hi, 40), newreno_westwood_curve(0.05, hi, 40, floor_half=True)
    fig = go.Figure()
    x = [p["buffer_over_bdp"] for p in plain]
    fig.add_scatter(x=x, y=[p["newreno"] for p in plain], name="NewReno", line={"color": "#1f77b4"})
    fig.add_scatter(x=x, y=[p["westwood_plus"] for p in plain], name="Westwood+", line={"color": "#d62728"})
    fig.add_scatter(x=x, y=[p["westwood_plus"] for p in fixed], name="Westwood+ (floor-half fix: never below w/2)",
                    line={"color": "#d62728", "dash": "dot"})
    fig.add_vline(x=buffer_over_bdp, line={"color": "grey", "dash": "dash"},
                  annotation_text=f"this path: {buffer_over_bdp:.2f}×BDP")
    fig.update_layout(title="Throughput shares of one NewReno and one Westwood+ flow (Möller et al., NGI 2007)",
                      height=330,
                      xaxis={"title": "buffer / BDP", "type": "log"}, yaxis={"title": "share of C", "range": [0, 1]},
                      legend=LEGEND, margin={"t": 90})
    return fig


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A small HTML table (cells escaped)."""
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return "<table class='path'><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr>{cells}</table>"


class Figures:
    """The report's plotly figures, drawn once plotly.js is unpacked: each a placeholder ``<div>`` in the page and
    its data and layout in one JSON element, plotly's template (7 kB) kept once for all."""

    def __init__(self) -> None:
        self.specs: dict[str, Any] = {}
        self.template: Any = None

    def div(self, fig: go.Figure) -> str:
        """The figure's placeholder; its spec is kept for :meth:`script`."""
        spec = json.loads(fig.to_json())
        self.template = spec["layout"].pop("template", self.template)
        fig_id = f"figure-{len(self.specs)}"
        self.specs[fig_id] = spec
        height = spec["layout"].get("height") or 450
        return f"<div id='{fig_id}' class='figure' style='height:{height}px;width:100%'></div>"

    def script(self) -> str:
        """The figures' data as a JSON element (text in it stays readable: titles, names)."""
        return (f"<script type='application/json' id='report-figures'>"
                f"{_script_json({'template': self.template, 'figures': self.specs})}</script>")


def path_html(path: dict[str, Any], models: dict[str, Any] | None, figures: Figures, title: str = "path") -> str:
    """The §9 path: each figure with its evidence, the buffer study's verdict and single-flow utilisation per rule, the
    same rule for every replayed decision at the flow's losses, and Möller et al.'s (2007) curve with this path's
    buffer/BDP."""
    from ackreplay.cli.wording import path_line

    def link(v: dict[str, Any]) -> str:
        return "busy" if v["busy_link"] else "idles"

    evidence = (path.get("evidence") or {}).items()
    out = [f"<p><strong>{html.escape(title)}:</strong> {html.escape(path_line(path))}</p>",
           _table(("figure", "value", "evidence"), [(k, path.get(k), v) for k, v in evidence])]
    if models:
        out.append("<p>Busy-link rule on this path (one flow; docs/models.md): b, the window's decrease factor at a "
                   "loss; the link stays busy iff B ≥ b/(1−b)·BDP; utilisation, the flow's mean rate over C in the "
                   "single-flow model.</p>")
        out.append(_table(("rule", "b", "link", "utilisation"), [(n, f"{v['decrease']:.3f}", link(v),
                                                                  f"{v['utilisation']:.3f}")
                                                                 for n, v in models["busy_link"].items()]))
        if models.get("replayed"):
            out.append("<p>The busy-link rule for each replayed decision at this flow's losses (b = median of "
                       "1 − ssthresh/w; real_sender: what the captured sender did).</p>")
            out.append(_table(("rule", "b", "losses", "link"), [(n, f"{v['decrease']:.3f}", v["losses"], link(v))
                                                               for n, v in models["replayed"].items()]))
        out.append(figures.div(share_model_figure(float(path["buffer_over_bdp"]))))
    return "".join(out)


def _script_json(data: object) -> str:
    """JSON that can sit inside a <script> element."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def _steps(values: list[Any]) -> dict[str, Any] | None:
    """``values`` (numbers rounded to at most 6 decimals, or None) as ``{"$": d, "v": steps}``: each value times
    10^d as an integer, written as its difference from the previous one, which unpacks to exactly the same
    floats (an integer below 2^53 divided by 10^d rounds as the decimal text does); None when they are not
    such numbers."""
    if any(type(v) is bool for v in values) or not any(isinstance(v, int | float) for v in values):
        return None
    for d in range(7):
        ints = [None if v is None else round(v * 10**d) for v in values]
        if all(k is None or (abs(k) < 2**53 and k / 10**d == v) for k, v in zip(ints, values, strict=True)):
            steps: list[int | None] = []
            prev = 0
            for k in ints:
                steps.append(None if k is None else k - prev)
                prev = prev if k is None else k
            return {"$": d, "v": steps}
    return None


def pack(value: Any) -> Any:
    """``value`` (JSON data) with every list of at least ``PACK_MIN`` numbers as integer steps (:func:`_steps`):
    the graph's times and values are a few digits each instead of ten to twenty; ``UNPACK_JS`` restores them."""
    if isinstance(value, dict):
        return {k: pack(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) >= PACK_MIN and all(v is None or isinstance(v, int | float) for v in value):
            packed = _steps(value)
            if packed is not None:
                return packed
        return [pack(v) for v in value]
    return value


def compressed(data: bytes) -> str:
    """``data`` gzip-compressed in base64, to sit in a <script> element (base64 holds no ``<``)."""
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")


@functools.cache
def plotly_js() -> str:
    """plotly.js's basic bundle compressed (:func:`compressed`): 1.2 MB becomes 0.5 MB; made once per process."""
    return compressed(PLOTLY_BASIC_JS.read_bytes())


#: Unpacks the report when it opens: gunzips plotly.js (run as an inline script, so nothing is fetched) and the
#: graphs, restores the packed number lists (``pack``), then draws the figures and the congestion graphs.
UNPACK_JS = """
async function inflate(id) {
  const bytes = Uint8Array.from(atob(document.getElementById(id).textContent), (c) => c.charCodeAt(0));
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}
function unpack(o) {
  if (Array.isArray(o)) return o.map(unpack);
  if (o === null || typeof o !== "object") return o;
  if ("$" in o && Array.isArray(o.v)) {
    const scale = 10 ** o.$;
    let k = 0;
    return o.v.map((s) => (s === null ? null : (k += s) / scale));
  }
  return Object.fromEntries(Object.entries(o).map(([key, v]) => [key, unpack(v)]));
}
const [plotlySource, graphsText] = await Promise.all([inflate("report-plotly"), inflate("report-graphs")]);
const plotlyScript = document.createElement("script");
plotlyScript.textContent = plotlySource;
document.head.append(plotlyScript);
const FIGURES = JSON.parse(document.getElementById("report-figures").textContent);
for (const [id, spec] of Object.entries(FIGURES.figures)) {
  Plotly.newPlot(id, spec.data, { ...spec.layout, template: FIGURES.template }, { responsive: true });
}
for (const [id, data] of Object.entries(unpack(JSON.parse(graphsText)))) {
  drawCongestion(document.getElementById(id), data, { height: 900 });
}
"""


HEAD = ("<!doctype html><html><head><meta charset='utf-8'><title>ackreplay report</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px}"
        "pre{background:#f6f6f6;padding:.8em;overflow-x:auto}"
        "table.path{border-collapse:collapse;font-size:.9em}table.path td,table.path th{border:1px solid #ddd;"
        "padding:.2em .5em;text-align:left;vertical-align:top}</style></head><body><h1>ackreplay report</h1>"
        "<p>Estimates are replayed open-loop over each flow's real ACK stream (docs/estimators.md). "
        "'bias' is the time-weighted mean of (E−R)/R against the achieved rate R; '*' marks the best "
        "per column.</p>"
        "<p>Each flow's congestion graph: time–sequence (data sent, retransmissions, ACK line, SACK blocks, "
        "receive window), bytes in flight with each estimator's cwnd (◇) and ssthresh (●) at every loss, "
        "estimates against the achieved rate (▲: above the axis; hover for the value), RTT. Drag to zoom "
        f"every panel; double-click to reset. Thinned to {REPORT_PX} columns, minima and maxima kept. A flow "
        "that was not replayed has what the capture shows alone: time–sequence, flight, RTT.</p>")


def render(scored: Sequence[ScoredCapture]) -> str:
    """The report of these captures as one HTML text (plotly.js and the graphs inside it, compressed)."""
    parts = [HEAD]
    graphs: dict[str, Any] = {}
    figures = Figures()
    for sc in scored:
        parts += capture_html(sc, graphs, figures)
    if len(scored) > 1:  # the combined board of ``score``, with its statistics (intervals, ties, the sample)
        from ackreplay.cli.boards import combined_summary

        parts.append(f"<h2>All captures</h2><pre class='board'>{html.escape(combined_summary(scored, None))}</pre>")
    if graphs or figures.specs:  # the dashboard's renderer, inlined: an inline module may hold exports
        parts += [f"<script type='application/gzip' id='report-plotly'>{plotly_js()}</script>",
                  f"<script type='application/gzip' id='report-graphs'>"
                  f"{compressed(_script_json(pack(graphs)).encode())}</script>",
                  figures.script(), f"<script type='module'>{CONGESTION_JS.read_text()}\n{UNPACK_JS}</script>"]
    parts.append("</body></html>")
    return "".join(parts)


def capture_html(sc: ScoredCapture, graphs: dict[str, Any], figures: Figures) -> list[str]:
    """One capture's part of the report: the flows it draws (:func:`drawn_flows`; :func:`flow_html`,
    :func:`unreplayed_html`), shared bottlenecks, and the flows not shown or not replayed as counts with their ids
    (one line per reason)."""
    from ackreplay.cli.flow_lists import id_list, reason_groups

    parts = [f"<h2>{html.escape(str(sc.path))}</h2>"]
    if sc.truth is not None:
        parts.append(f"<p>Ground truth ({html.escape(sc.truth_source or '')}): "
                     f"{html.escape(str(sc.truth.to_dict()))}</p>")
    replayed, unreplayed, small = drawn_flows(sc)
    for fr in replayed:
        parts += flow_html(sc, fr, graphs, figures)
    for fid in unreplayed:
        parts += unreplayed_html(sc, fid, graphs)
    for g in sc.replay.path_groups:
        title = "shared bottleneck of flows " + ", ".join(map(str, g["flows"]))
        parts.append(path_html(g["path"], path_models(g["path"]), figures, title))
        parts.append(f"<p>{html.escape(group_line(g))}</p>")
    if small:
        parts.append(f"<p>{len(small):,} flow(s) under {sc.min_flow_bytes:,} bytes acked (replayed; scores in "
                     f"scores.json/csv): {html.escape(id_list(small, None))}</p>")
    if sc.replay.skipped:
        items = "".join(f"<li>{len(ids):,} flow(s) ({html.escape(id_list(ids, None))}): {html.escape(text)}</li>"
                        for text, ids in reason_groups(sc.replay.skipped))
        parts.append(f"<p>Not replayed:</p><ul>{items}</ul>")
    return parts


def drawn_flows(sc: ScoredCapture) -> tuple[list[FlowReplay], list[int], list[int]]:
    """The flows the report draws — the replayed bulk flows, and the ids of the bulk flows that were not replayed
    (those left out by ``--flow``/``--host``/``--port`` aside) — and the ids of the replayed flows under the bulk
    size, listed only. A capture without a bulk flow has its largest flow drawn (one that keeps ingest's
    invariants first), as ``ackreplay graph`` draws by default."""
    from ackreplay.replay.engine import NOT_SELECTED

    by_id = sc.ingest.flows.by_id()
    replayed = [fr for fr in sc.replay.flows if sc.bulk(by_id[fr.flow_id].bytes)]
    small = [fr.flow_id for fr in sc.replay.flows if not sc.bulk(by_id[fr.flow_id].bytes)]
    shown = [fid for fid, why in sc.replay.skipped.items() if why != NOT_SELECTED]
    unreplayed = [fid for fid in shown if sc.bulk(by_id[fid].bytes)]
    if replayed or unreplayed or not (small or shown):
        return replayed, unreplayed, small
    largest = max(small + shown, key=lambda fid: (not by_id[fid].invalid, by_id[fid].bytes, -fid))
    if largest in small:
        small.remove(largest)
        return [fr for fr in sc.replay.flows if fr.flow_id == largest], [], small
    return [], [largest], small


def flow_heading(sc: ScoredCapture, flow_id: int, note: str = "") -> list[str]:
    """A flow's heading (its ends, goodput, loss events, vantage; ``note`` after them) and, for a flow rebuilt as its
    sender saw it, how."""
    summary = sc.ingest.flows.by_id()[flow_id]
    parts = [f"<h3>flow {flow_id}: {html.escape(summary.sender)} → {html.escape(summary.receiver)}, "
             f"{summary.goodput_bps / 1e6:.3f} Mbit/s, {summary.loss_events} loss events, "
             f"vantage {html.escape(vantage_text(summary.vantage, summary.vantage_position))}"
             + (" <strong>(reconstructed)</strong>" if summary.reconstruction else "") + note + "</h3>"]
    if summary.reconstruction:
        parts.append(f"<p>{html.escape(summary.reconstruction_evidence)}; {summary.confidence} confidence: "
                     f"{html.escape(summary.confidence_note)}.</p>")
    return parts


def graph_div(graphs: dict[str, Any], data: dict[str, Any], flow_id: int) -> str:
    """The placeholder of one congestion graph; its data goes into ``graphs``."""
    graph_id = f"congestion-{len(graphs)}"
    graphs[graph_id] = data
    return (f"<div id='{graph_id}' class='congestion' role='img' aria-label='congestion graph of flow "
            f"{flow_id}'></div>")


def unreplayed_html(sc: ScoredCapture, flow_id: int, graphs: dict[str, Any]) -> list[str]:
    """A flow that was not replayed: its heading, why, and what the capture shows of it (time–sequence, flight,
    RTT: ``graphs.congestion`` without a replay)."""
    why = sc.replay.skipped.get(flow_id, "not replayed")
    return [*flow_heading(sc, flow_id, " <strong>(not replayed)</strong>"),
            f"<p class='not-replayed'><strong>Not replayed</strong>: {html.escape(why)}. Drawn from the capture "
            "alone — time–sequence, bytes in flight, RTT; the estimators' overlays (their estimates against the "
            "achieved rate, cwnd and ssthresh at each loss, the ideal) and the queue come from the replay, so "
            "there are none here, and no scores.</p>",
            graph_div(graphs, source_for(sc.ingest, None, flow_id).window(px=REPORT_PX), flow_id)]


def flow_html(sc: ScoredCapture, fr: FlowReplay, graphs: dict[str, Any], figures: Figures) -> list[str]:
    """One replayed flow: its heading, the congestion graph (its data into ``graphs``), the decisions at each loss,
    the score table and why, and its path with the papers' models."""
    parts = flow_heading(sc, fr.flow_id)
    parts.append(graph_div(graphs, source_for(sc.ingest, fr, fr.flow_id).window(px=REPORT_PX), fr.flow_id))
    if len(fr.decisions):
        parts.append(figures.div(decisions_figure(fr, sc.truth is not None)))
    if fr.limits is not None:
        parts.append(f"<p class='limits'><strong>limited by:</strong> {html.escape(limits_line(fr.limits.shares))}"
                     "</p>")
    if fr.comparable_reason is not None:
        parts.append(f"<p class='incomparable'><strong>not comparable</strong> (no best marked, left out of the "
                     f"rankings): {html.escape(fr.comparable_reason)}</p>")
    parts.append(f"<pre>{html.escape(score_table(fr.scores, sc.truth is not None, best=fr.comparable_reason is None))}"
                 "</pre>")
    why = explain(fr.diagnostics, fr.scores) if fr.diagnostics else []
    if why:
        parts.append("<ul class='why'>" + "".join(f"<li>{html.escape(w)}</li>" for w in why) + "</ul>")
    if fr.path:
        parts.append(path_html(fr.path, path_models(fr.path, fr.decision_rows), figures))
    return parts
