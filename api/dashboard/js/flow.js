// One flow of one run: estimates over time against the achieved rate and the truth (zoomable, estimators
// toggled on and off, loss events marked), each estimator's ssthresh at every loss against the ideal and
// NewReno's, and the score table. Toggles and zoom live in the URL.
import { blob, get } from "./api.js";
import { download, html, mbit, num, query, render, setQuery, sortableTable, toCsv } from "./util.js";

const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png", scale: 2 } };
const LEGEND = { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 };

export async function flowView(view, runId, captureId, flowId, alive) {
  const base = `/runs/${runId}/captures/${captureId}/flows/${flowId}`;
  const [flow, series, decisions, scores, diag] = await Promise.all([
    get(`/captures/${captureId}/flows/${flowId}`), get(`${base}/series`, { points: 3000 }),
    get(`${base}/decisions`), get(`/runs/${runId}/scores`, { capture: captureId, flow: flowId }),
    get(`${base}/diagnostics`),
  ]);
  if (!alive()) return;
  const names = series.columns.filter((c) => c.endsWith("_bps") && !["achieved_bps", "truth_bps"].includes(c)).map((c) => c.slice(0, -4));
  const q = query();
  const shown = new Set(q.get("est") ? q.get("est").split(",") : names.filter((n) => n !== "newreno"));
  render(view, html`
    <p><a href="#/captures/${captureId}?run=${runId}">← capture</a></p>
    <h1>Flow ${flowId}: ${flow.sender} → ${flow.receiver}</h1>
    <p class="muted">goodput ${mbit(flow.goodput_bps)} Mbit/s (bytes / connection duration; while delivering ${mbit(flow.delivery_rate_bps)}) · RTTmin ${num(flow.rttmin_s, 2, 1e3)} ms · ${flow.loss_events} loss events
      (${flow.fast_retransmit_events} fast retransmit, ${flow.timeout_events} timeout) · vantage ${flow.vantage}${flow.reconstruction
      ? html` <strong class="reconstructed">(reconstructed, ${flow.confidence} confidence)</strong></p>
    <p class="muted" id="reconstruction">${flow.reconstruction_evidence}. ${flow.confidence_note}.` : ""}</p>
    <fieldset class="card"><legend>Estimators shown</legend><div class="toggles" id="toggles">${names.map((n) => shown.has(n)
      ? html`<label><input type="checkbox" value="${n}" checked> ${n}</label>`
      : html`<label><input type="checkbox" value="${n}"> ${n}</label>`)}</div></fieldset>
    <section class="card"><div class="toolbar"><button class="secondary" id="png-estimates">PNG</button><button class="secondary" id="csv-series">CSV (full resolution)</button></div>
      <div id="estimates" class="plot" role="img" aria-label="estimates over time"></div></section>
    <section class="card"><div class="toolbar"><button class="secondary" id="png-decisions">PNG</button><button class="secondary" id="csv-decisions">CSV</button></div>
      <div id="decisions" class="plot" role="img" aria-label="ssthresh at each loss event"></div></section>
    <section><h2>Scores</h2><div class="toolbar"><button class="secondary" id="csv-scores">CSV</button></div><div id="scores"></div></section>
    <section class="card" id="why"><h2>Why</h2><ul>${whyLines(diag).map((w) => html`<li>${w}</li>`)}</ul></section>`);

  const rows = series.data;
  const x = rows.map((r) => r.t_rel);
  const traces = [{ x, y: rows.map((r) => r.achieved_bps / 1e6), name: "achieved", line: { color: "black", width: 3 } }];
  if (series.columns.includes("truth_bps")) traces.push({ x, y: rows.map((r) => r.truth_bps / 1e6), name: "truth", line: { color: "grey", dash: "dash", width: 3 } });
  for (const n of names) traces.push({ x, y: rows.map((r) => (r[`${n}_bps`] ?? NaN) / 1e6), name: n, visible: shown.has(n) ? true : "legendonly" });
  const episodes = [...new Map(decisions.map((d) => [d.episode, d])).values()];
  const shapes = episodes.map((d) => ({ type: "line", xref: "x", yref: "paper", x0: d.t_rel, x1: d.t_rel, y0: 0, y1: 1,
    line: { color: d.kind === "timeout" ? "red" : "orange", width: 1, dash: "dot" } }));
  const range = q.get("x") ? q.get("x").split(",").map(Number) : null;
  await Plotly.newPlot("estimates", traces, {
    title: { text: "Estimates over time (orange: fast retransmit, red: timeout)" }, legend: LEGEND, shapes,
    xaxis: { title: { text: "time since the flow's first packet (s)" }, ...(range ? { range } : {}) },
    yaxis: { title: { text: "Mbit/s" } }, margin: { t: 90 },
  }, CONFIG);
  const plot = document.getElementById("estimates");
  const state = () => { const s = { est: [...shown].join(",") }; const r = plot.layout.xaxis.range; if (plot.layout.xaxis.autorange === false && r) s.x = r.map((v) => Number(v).toFixed(3)).join(","); return s; };
  plot.on("plotly_relayout", () => setQuery(state()));
  document.querySelectorAll("#toggles input").forEach((box) => box.addEventListener("change", () => {
    box.checked ? shown.add(box.value) : shown.delete(box.value);
    const idx = traces.findIndex((t) => t.name === box.value);
    Plotly.restyle(plot, { visible: box.checked ? true : "legendonly" }, [idx]);
    setQuery(state());
  }));
  plot.on("plotly_legendclick", (ev) => { const n = ev.data[ev.curveNumber].name; const box = [...document.querySelectorAll("#toggles input")].find((b) => b.value === n);
    if (box) { box.checked = !box.checked; box.dispatchEvent(new Event("change")); } return false; });

  const byEst = new Map();
  for (const d of decisions) { if (!byEst.has(d.estimator)) byEst.set(d.estimator, []); byEst.get(d.estimator).push(d); }
  const dtraces = [
    { x: episodes.map((d) => d.t_rel), y: episodes.map((d) => d.ideal_truth_segments ?? d.ideal_segments), name: "ideal", mode: "markers", marker: { symbol: "line-ew-open", size: 18, color: "black" } },
    { x: episodes.map((d) => d.t_rel), y: episodes.map((d) => d.newreno_ssthresh_segments), name: "NewReno", mode: "markers", marker: { symbol: "x", size: 9, color: "grey" } },
    ...[...byEst].filter(([n]) => n !== "newreno").map(([n, ds]) => ({ x: ds.map((d) => d.t_rel), y: ds.map((d) => d.ssthresh_segments), name: n, mode: "markers" })),
  ];
  await Plotly.newPlot("decisions", dtraces, { title: { text: "ssthresh each estimator would set at each loss event" }, legend: LEGEND,
    xaxis: { title: { text: "time since the flow's first packet (s)" } }, yaxis: { title: { text: "segments" } }, margin: { t: 90 } }, CONFIG);

  const scoreCols = [
    { key: "estimator", label: "estimator", text: true },
    { key: "mean_bps", label: "mean Mbit/s", fmt: (v) => mbit(v) },
    { key: "mean_signed_rel_error", label: "bias", fmt: (v) => num(v, 3) },
    { key: "mean_abs_rel_error", label: "|err|", fmt: (v) => num(v, 3) },
    { key: "over_share", label: "over", fmt: (v) => num(v) },
    { key: "under_share", label: "under", fmt: (v) => num(v) },
    { key: "cov", label: "cov", fmt: (v) => num(v) },
    { key: "convergence_s", label: "conv s", fmt: (v) => num(v) },
    { key: "ssthresh_over_ideal_median", label: "ss/ideal", fmt: (v) => num(v) },
    { key: "closer_than_newreno_share", label: ">NewReno", fmt: (v) => num(v) },
    ...(scores.items.some((r) => "mean_abs_rel_error_truth" in r) ? [{ key: "mean_abs_rel_error_truth", label: "|err| truth", fmt: (v) => num(v, 3) }] : []),
  ];
  document.getElementById("scores").append(sortableTable("scores-table", scoreCols, scores.items, { sortKey: "mean_abs_rel_error" }));

  document.getElementById("png-estimates").addEventListener("click", () => Plotly.downloadImage(plot, { format: "png", filename: `flow-${flowId}-estimates` }));
  document.getElementById("png-decisions").addEventListener("click", () => Plotly.downloadImage("decisions", { format: "png", filename: `flow-${flowId}-decisions` }));
  document.getElementById("csv-series").addEventListener("click", async () => download(`flow-${flowId}-series.csv`, await blob(`${base}/series`, { format: "csv" })));
  document.getElementById("csv-decisions").addEventListener("click", () => download(`flow-${flowId}-decisions.csv`,
    toCsv(Object.keys(decisions[0] || {}).map((k) => ({ key: k, label: k })), decisions)));
  document.getElementById("csv-scores").addEventListener("click", () => download(`flow-${flowId}-scores.csv`, toCsv(scoreCols, scores.items)));
}

/** The diagnostics as sentences (ESTIMATORS.md §7): ACK compression, BE's largest samples and their cause,
 * the capacity seen in packet dispersion, and how CRB and NewBR classified each loss. */
export function whyLines(d) {
  const lines = [];
  if (d.ack_compression_share != null) {
    const big = (d.largest_samples || []).map((s) => `${(s.bps / 1e6).toFixed(0)} Mbit/s over ${s.interval_us.toFixed(0)} µs (${s.cause.replace("_", " ")})`).join(", ");
    lines.push(`ACK intervals under 100 µs: ${(100 * d.ack_compression_share).toFixed(1)} %; BE's largest samples: ${big || "none"}`);
  }
  if (d.dispersion_capacity_bps != null) lines.push(`capacity from packet dispersion (${d.dispersion_from}): ${mbit(d.dispersion_capacity_bps)} Mbit/s`);
  for (const [name, c] of Object.entries(d.loss_classes || {})) {
    let text = `${name} classified ${c.congestion} losses as congestion, ${c.random} as random`;
    if (c.correct_share != null) text += ` (${(100 * c.correct_share).toFixed(0)} % right of ${c.labelled} labelled)`;
    lines.push(text);
  }
  return lines;
}
