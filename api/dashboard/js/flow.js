// One flow of one run: the congestion graph (time–sequence, flight with each estimator's cwnd/ssthresh at every
// loss, estimates against the achieved rate, RTT — linked panels, brush zoom that fetches the window again at
// full resolution), each estimator's ssthresh at every loss against the ideal and NewReno's, the score table
// and why, what limited the sender, the path (§9) with the papers' models on it, and the what-if on that path (whatif.js). A selector moves between the capture's flows; toggles, log scale and zoom live in the URL.
import { blob, get, getAll } from "./api.js";
import { skippedFlows, vantageText } from "./capture.js";
import { drawCongestion, estimatorColors, plotlyReady } from "./congestion.js";
import { download, html, mbit, num, query, render, setQuery, sortableTable, toCsv } from "./util.js";
import { bindWhatif, whatifCard } from "./whatif.js";

const CONFIG = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png", scale: 2 } };
const LEGEND = { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 };

export async function flowView(view, runId, captureId, flowId, alive) {
  const base = `/runs/${runId}/captures/${captureId}/flows/${flowId}`;
  const q = query();
  const range = q.get("x") ? q.get("x").split(",").map(Number) : [null, null];
  const px = plotColumns(view.clientWidth || 1200);
  const [flow, flows, run, entry] = await Promise.all([get(`/captures/${captureId}/flows/${flowId}`), getAll(`/captures/${captureId}/flows`),
    get(`/runs/${runId}`, { limit: 1 }), get(`/runs/${runId}/captures/${captureId}`)]);
  if (!alive()) return;
  const skipped = await skippedFlows(runId, captureId, entry);
  if (!alive()) return;
  const selector = html`<div class="toolbar"><label class="inline">Flow <select id="flow-select">${flows.map((f) => html`<option value="${f.flow_id}" ${String(f.flow_id) === String(flowId) ? html`selected` : ""}>${f.flow_id}: ${f.sender} → ${f.receiver} (${mbit(f.goodput_bps)} Mbit/s)${skipped[f.flow_id] ? " — not replayed" : ""}</option>`)}</select></label></div>`;
  const bindSelector = () => document.getElementById("flow-select").addEventListener("change", (e) => { location.hash = `#/runs/${runId}/captures/${captureId}/flows/${e.target.value}`; });
  if (skipped[flowId] || run.status !== "succeeded" && !(await hasResults(runId, captureId, flowId))) {
    const why = skipped[flowId] ? html`Not replayed: ${skipped[flowId]}.` : html`Not replayed yet: run ${runId} is ${run.status}. Reload when it has finished.`;
    await unreplayedView(view, { captureId, flowId, flow, range, px, alive, why, head: html`<p><a href="#/captures/${captureId}?run=${runId}">← capture</a></p>${selector}` });
    if (alive()) bindSelector();
    return;
  }
  const [graph, decisions, scores, diag, path, limits] = await Promise.all([
    get(`${base}/graph`, { t0: range[0], t1: range[1], px }),
    getAll(`${base}/decisions`), get(`/runs/${runId}/scores`, { capture: captureId, flow: flowId }),
    get(`${base}/diagnostics`), get(`${base}/path`), get(`${base}/limits`),
  ]);
  if (!alive()) return;
  const names = Object.keys(graph.rates).filter((n) => n !== "achieved" && n !== "truth");
  const shown = new Set(q.get("est") ? q.get("est").split(",") : names.filter((n) => n !== "newreno"));
  render(view, html`
    <p><a href="#/captures/${captureId}?run=${runId}">← capture</a></p>
    ${selector}
    <h1>Flow ${flowId}: ${flow.sender} → ${flow.receiver}</h1>
    <p class="muted">goodput ${mbit(flow.goodput_bps)} Mbit/s (bytes / connection duration; while delivering ${mbit(flow.delivery_rate_bps)}) · RTTmin ${num(flow.rttmin_s, 2, 1e3)} ms · ${flow.loss_events} loss events
      (${flow.fast_retransmit_events} fast retransmit, ${flow.timeout_events} timeout) · vantage ${vantageText(flow)}${flow.reconstruction
      ? html` <strong class="reconstructed">(reconstructed, ${flow.confidence} confidence)</strong></p>
    <p class="muted" id="reconstruction">${flow.reconstruction_evidence}. ${flow.confidence_note}.` : ""}</p>
    <fieldset class="card"><legend>Estimators shown</legend><div class="toggles" id="toggles">${names.map((n) => shown.has(n)
      ? html`<label><input type="checkbox" value="${n}" checked><span class="swatch" data-estimator="${n}"></span>${n}</label>`
      : html`<label><input type="checkbox" value="${n}"><span class="swatch" data-estimator="${n}"></span>${n}</label>`)}</div></fieldset>
    <section class="card"><h2>Congestion graph</h2>
      <div class="toolbar"><label class="inline"><input type="checkbox" id="log-scale" ${q.get("log") === "1" ? html`checked` : ""}> log scale (rates)</label>
        <button class="secondary" id="reset-zoom">whole flow</button><button class="secondary" id="png-congestion">PNG</button><button class="secondary" id="csv-series">CSV (full resolution)</button>
        <span class="muted" id="graph-resolution" role="status"></span></div>
      <p class="muted">Drag across any panel to zoom every panel to that time range (the window is fetched again, at full resolution once it is short enough); double-click for the whole flow. Shaded: loss episodes (orange fast retransmit, red timeout). ▲ on the rate panel: an estimate above the axis (hover for its value).</p>
      <div id="congestion" class="plot congestion" role="img" aria-label="congestion graph"></div></section>
    <section class="card"><div class="toolbar"><button class="secondary" id="png-decisions">PNG</button><button class="secondary" id="csv-decisions">CSV</button></div>
      <div id="decisions" class="plot" role="img" aria-label="ssthresh at each loss event"></div></section>
    <section><h2>Scores</h2><div class="toolbar"><button class="secondary" id="csv-scores">CSV</button></div><div id="scores"></div></section>
    <section class="card" id="why"><h2>Why</h2><ul>${whyLines(diag).map((w) => html`<li>${w}</li>`)}</ul></section>
    ${limitsCard(limits)}
    ${pathCard(path)}
    ${whatifCard()}`);
  bindSelector();
  bindWhatif(base);
  const colors = estimatorColors(names);  // the graph's colours, beside each toggle (the legend hides on phones)
  document.querySelectorAll(".swatch[data-estimator]").forEach((sw) => { sw.style.background = colors[sw.dataset.estimator]; });
  const plot = document.getElementById("congestion");
  const resolution = document.getElementById("graph-resolution");
  const win = { x: range[0] !== null ? range : null };
  const state = () => {
    const s = { est: [...shown].join(",") };
    if (win.x) s.x = win.x.map((v) => Number(v).toFixed(4)).join(",");
    if (document.getElementById("log-scale").checked) s.log = "1";
    return s;
  };
  const note = () => { resolution.textContent = `${plot.dataset.points} points drawn${plot.dataset.fullResolution === "true" ? " (full resolution)" : ", thinned per pixel (minima and maxima kept)"}`; };
  const graphApi = await drawCongestion(plot, graph, {
    shown, height: plot.clientWidth < 600 ? 720 : 900, log: q.get("log") === "1",
    refetch: (t0, t1, w) => get(`${base}/graph`, { t0, t1, px: plotColumns(w) }),
    onWindow: (t0, t1) => {
      const [a, b] = graph.t_span;
      win.x = t0 <= a && t1 >= b ? null : [t0, t1];
      setQuery(state()); note();
    },
  });
  note();
  document.querySelectorAll("#toggles input").forEach((box) => box.addEventListener("change", async () => {
    box.checked ? shown.add(box.value) : shown.delete(box.value);
    await graphApi.setShown(box.value, box.checked);
    setQuery(state());
  }));
  document.getElementById("log-scale").addEventListener("change", async (e) => { await graphApi.setLog(e.target.checked); setQuery(state()); });
  document.getElementById("reset-zoom").addEventListener("click", () => graphApi.zoom(...graph.t_span));
  plot.on("plotly_legendclick", (ev) => { const n = ev.data[ev.curveNumber].legendgroup; const box = [...document.querySelectorAll("#toggles input")].find((b) => b.value === n);
    if (box) { box.checked = !box.checked; box.dispatchEvent(new Event("change")); return false; } return true; });
  const episodes = [...new Map(decisions.map((d) => [d.episode, d])).values()];

  const byEst = new Map();
  for (const d of decisions) { if (!byEst.has(d.estimator)) byEst.set(d.estimator, []); byEst.get(d.estimator).push(d); }
  const dtraces = [
    { x: episodes.map((d) => d.t_rel), y: episodes.map((d) => d.ideal_truth_segments ?? d.ideal_segments), name: "ideal", mode: "markers", marker: { symbol: "line-ew-open", size: 18, color: "black" } },
    { x: episodes.map((d) => d.t_rel), y: episodes.map((d) => d.newreno_ssthresh_segments), name: "NewReno", mode: "markers", marker: { symbol: "x", size: 9, color: "grey" } },
    ...[...byEst].filter(([n]) => n !== "newreno").map(([n, ds]) => ({ x: ds.map((d) => d.t_rel), y: ds.map((d) => d.ssthresh_segments), name: n, mode: "markers", marker: { color: colors[n] } })),
  ];
  const Plotly = await plotlyReady();
  const narrow = plot.clientWidth < 600;
  if (path.path_models) await drawShareModel(Plotly, "share-model", path, narrow);
  await Plotly.newPlot("decisions", dtraces, { title: { text: narrow ? "ssthresh at each loss" : "ssthresh each estimator would set at each loss event" },
    legend: LEGEND, showlegend: !narrow, xaxis: { title: { text: "time since the flow's first packet (s)" } }, yaxis: { title: { text: "segments" } },
    margin: narrow ? { t: 40, l: 50, r: 8 } : { t: 90 } }, CONFIG);

  const scoreCols = [
    { key: "estimator", label: "estimator", text: true, fmt: (v, r) => (r.not_reproducible ? html`${v} <span class="not-reproducible" title="${r.not_reproducible}">(not reproducible from this vantage)</span>` : v) },
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

  document.getElementById("png-congestion").addEventListener("click", () => Plotly.downloadImage(plot, { format: "png", filename: `flow-${flowId}-congestion`, width: 1400, height: 1000 }));
  document.getElementById("png-decisions").addEventListener("click", () => Plotly.downloadImage("decisions", { format: "png", filename: `flow-${flowId}-decisions` }));
  document.getElementById("csv-series").addEventListener("click", async () => download(`flow-${flowId}-series.csv`, await blob(`${base}/series`, { format: "csv" })));
  document.getElementById("csv-decisions").addEventListener("click", () => download(`flow-${flowId}-decisions.csv`,
    toCsv(Object.keys(decisions[0] || {}).map((k) => ({ key: k, label: k })), decisions)));
  document.getElementById("csv-scores").addEventListener("click", () => download(`flow-${flowId}-scores.csv`, toCsv(scoreCols, scores.items)));
}

/** A flow the run did not replay (or has not yet): what its capture shows — time–sequence, flight, RTT, from the
 * capture's own graph (`/captures/{c}/flows/{f}/graph`, no run needed) — with why the estimators' overlays are
 * missing. Zooming fetches the window again, as for a replayed flow. */
async function unreplayedView(view, { captureId, flowId, flow, range, px, alive, why, head }) {
  const base = `/captures/${captureId}/flows/${flowId}`;
  const graph = await get(`${base}/graph`, { t0: range[0], t1: range[1], px });
  if (!alive()) return;
  render(view, html`${head}
    <h1>Flow ${flowId}: ${flow.sender} → ${flow.receiver}</h1>
    <p class="muted">goodput ${mbit(flow.goodput_bps)} Mbit/s · ${flow.loss_events} loss events · vantage ${vantageText(flow)}</p>
    <p class="card" id="not-replayed" role="status">${why} Below is what the capture shows of it: time–sequence, bytes in flight and RTT. The estimators' overlays — their estimates against the achieved rate, cwnd and ssthresh at each loss, the ideal — and the scores come from a replay, so there are none here.</p>
    <section class="card"><h2>What the capture shows</h2>
      <div class="toolbar"><button class="secondary" id="reset-zoom">whole flow</button><span class="muted" id="graph-resolution" role="status"></span></div>
      <p class="muted">Drag across any panel to zoom every panel to that time range; double-click for the whole flow. Shaded: loss episodes (orange fast retransmit, red timeout).</p>
      <div id="congestion" class="plot congestion" role="img" aria-label="time–sequence, flight and RTT from the capture alone"></div></section>`);
  const plot = document.getElementById("congestion");
  const note = () => { document.getElementById("graph-resolution").textContent = `${plot.dataset.points} points drawn${plot.dataset.fullResolution === "true" ? " (full resolution)" : ", thinned per pixel (minima and maxima kept)"}`; };
  const api = await drawCongestion(plot, graph, {
    height: plot.clientWidth < 600 ? 720 : 900,  // the panels share the page as the replayed flow's four do
    refetch: (t0, t1, w) => get(`${base}/graph`, { t0, t1, px: plotColumns(w) }),
    onWindow: (t0, t1) => { const [a, b] = graph.t_span; setQuery(t0 <= a && t1 >= b ? {} : { x: [t0, t1].map((v) => Number(v).toFixed(4)).join(",") }); note(); },
  });
  note();
  document.getElementById("reset-zoom").addEventListener("click", () => api.zoom(...graph.t_span));
}

const PATH_LABELS = { capacity_bps: "capacity", base_rtt_s: "base RTT", buffer_bytes: "buffer", buffer_over_bdp: "buffer / BDP", random_loss_rate: "random loss" };

/** One figure of the path (§9) in its unit, or "—" when the capture cannot show it. */
function pathValue(key, v) {
  if (v == null) return "—";
  if (key === "capacity_bps") return `${mbit(v)} Mbit/s`;
  if (key === "base_rtt_s") return `${num(v, 2, 1e3)} ms`;
  if (key === "buffer_bytes") return `${Math.round(v).toLocaleString("en")} B`;
  if (key === "random_loss_rate") return `${num(v, 3, 100)} %`;
  return num(v, 2);
}

/** The Path card (docs/path.md §9): each figure with its evidence, the flows sharing the bottleneck, the buffer study's
 * verdict and single-flow utilisation per algorithm, and the place of Möller et al.'s (2007) curve. */
export function pathCard(doc) {
  const p = doc.path;
  if (!p) return "";
  const g = doc.path_group;
  const senders = g && g.members ? g.members.map((m) => `${m.flow_id} ${m.kind}${m.decrease != null ? ` (b ${num(m.decrease, 2)})` : ""}`).join(", ") : "";
  const shares = g && g.share_model ? html` NewReno/Westwood+ model (Möller et al., NGI 2007) at this buffer/BDP: NewReno ${num(g.share_model.model.newreno, 2)}, Westwood+ ${num(g.share_model.model.westwood_plus, 2)} of the capacity; measured ${num(g.share_model.measured.newreno, 2)}, ${num(g.share_model.measured.westwood_plus, 2)}.` : "";
  const group = g ? html`<p class="muted" id="path-group">Shares its bottleneck with flows ${g.flows.join(", ")}: capacity and base RTT are the group's. Senders: ${senders}.${shares}</p>` : "";
  const models = doc.path_models;
  const modelCards = models ? html`<h3>Busy-link rule on this path (one flow)</h3><p class="muted">A flow whose window falls by b (its decrease factor at a loss) keeps the link busy iff B ≥ b/(1−b)·BDP; the utilisation is the single-flow model's mean rate over the capacity (docs/models.md in the repository).</p>
    <div class="table-wrap"><table id="busy-link"><thead><tr><th>algorithm</th><th>b</th><th>link</th><th>utilisation</th></tr></thead><tbody>${Object.entries(models.busy_link).map(([n, v]) => html`<tr><td>${n}</td><td>${num(v.decrease, 3)}</td><td>${v.busy_link ? "busy" : "idles"}</td><td>${num(v.utilisation, 3)}</td></tr>`)}</tbody></table></div>
    ${Object.keys(models.replayed || {}).length ? html`<p class="muted">The same rule for each replayed decision at this flow's losses (b = median of 1 − ssthresh/w; real_sender: what the captured sender did):</p>
    <div class="table-wrap"><table id="busy-link-replayed"><thead><tr><th>rule</th><th>b</th><th>losses</th><th>link</th></tr></thead><tbody>${Object.entries(models.replayed).map(([n, v]) => html`<tr><td>${n}</td><td>${num(v.decrease, 3)}</td><td>${v.losses}</td><td>${v.busy_link ? "busy" : "idles"}</td></tr>`)}</tbody></table></div>` : ""}
    <h3>NewReno and Westwood+ sharing this bottleneck (Möller et al., NGI 2007)</h3><p class="muted">At ${num(p.buffer_over_bdp, 2)}×BDP: NewReno ${num(models.share_model.newreno, 3)}, Westwood+ ${num(models.share_model.westwood_plus, 3)} of the capacity; with the floor-half fix (Westwood+ never below half its window) ${num(models.share_model_floor_half.newreno, 3)} / ${num(models.share_model_floor_half.westwood_plus, 3)}.</p>
    <div id="share-model" class="plot" role="img" aria-label="NewReno and Westwood+ shares over buffer/BDP"></div>`
    : html`<p class="muted">No model on this path: it needs the capacity, base RTT and buffer/BDP.</p>`;
  return html`<section class="card" id="path"><h2>Path</h2>${group}
    <div class="table-wrap"><table id="path-figures"><thead><tr><th>figure</th><th>value</th><th class="text">evidence</th></tr></thead><tbody>${Object.keys(PATH_LABELS).map((k) => html`<tr><th>${PATH_LABELS[k]}</th><td>${pathValue(k, p[k])}</td><td class="evidence">${p.evidence[k]}</td></tr>`)}</tbody></table></div>
    <p class="muted">confidence ${p.confidence}</p>${modelCards}</section>`;
}

async function drawShareModel(Plotly, id, doc, narrow) {
  const c = doc.path_models.share_model_curve, x = c.map((r) => r.buffer_over_bdp), b = doc.path.buffer_over_bdp;
  await Plotly.newPlot(id, [
    { x, y: c.map((r) => r.newreno), name: "NewReno", mode: "lines", line: { color: "#1f77b4" } },
    { x, y: c.map((r) => r.westwood_plus), name: "Westwood+", mode: "lines", line: { color: "#d62728" } },
    { x, y: c.map((r) => r.westwood_plus_floor_half), name: "Westwood+ (floor-half fix)", mode: "lines", line: { color: "#d62728", dash: "dot" } },
    { x: [b, b], y: [0, 1], name: "this path", mode: "lines", line: { color: "grey", dash: "dash" } },
  ], { height: 320, legend: LEGEND, showlegend: !narrow, xaxis: { type: "log", title: { text: "buffer / BDP" } }, yaxis: { range: [0, 1], title: { text: "share of capacity" } },
    margin: narrow ? { t: 30, l: 50, r: 8 } : { t: 60 } }, CONFIG);
}

/** Pixel columns of the graph's plot area in an element `width` px wide (the margins take ~90 px). */
const plotColumns = (width) => Math.max(300, Math.min(4000, Math.round(width - 90)));

async function hasResults(runId, captureId, flowId) {
  const page = await get(`/runs/${runId}/scores`, { capture: captureId, flow: flowId, limit: 1 });
  return page.items.length > 0;
}

/** Where the ACK timing was seen, as `cli.wording.seen_at` says it: nothing at the sender; off it, that
 * the share is the capture point's, not the sender's: the return path after it bunches ACKs unseen there. */
function seenAt(vantage) {
  if (vantage == null || vantage === "sender") return "";
  const where = { receiver: "the receiver", mid_path: "the tap" }[vantage] || "the capture point";
  return ` as the ACKs passed ${where} (not the sender's share: the return path after ${where} bunches ACKs unseen here)`;
}

/** The diagnostics as sentences (docs/estimators.md §7): ACK compression, BE's largest samples and their cause,
 * the path's capacity (packet-pair dispersion mode, §9), and how CRB and NewBR classified each loss. */
export /** What limited the sender (docs/estimators.md "What limited the sender"): each label's share of the flow's
 * time, the largest first; nothing for a run replayed before the service stored them. */
const LIMIT_WORDS = { cwnd: "the network (cwnd)", rwnd: "the receive window", app: "the application", sndbuf: "the send buffer", unknown: "unknown" };
function limitsCard(limits) {
  const rows = Object.entries(limits.shares || {}).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  if (!rows.length) return "";
  return html`<section class="card" id="limits"><h2>What limited the sender</h2>
    <div class="table-wrap"><table id="limits-table"><thead><tr><th class="text">limited by</th><th>share of the time</th></tr></thead><tbody>${rows.map(([k, v]) => html`<tr><td class="text">${LIMIT_WORDS[k] || k}</td><td>${num(v, 1, 100)} %</td></tr>`)}</tbody></table></div></section>`;
}

function whyLines(d) {
  const lines = [];
  if (d.ack_compression_share != null) {
    const big = (d.largest_samples || []).map((s) => `${(s.bps / 1e6).toFixed(0)} Mbit/s over ${s.interval_us.toFixed(0)} µs (${s.cause.replace("_", " ")})`).join(", ");
    lines.push(`ACK intervals under 100 µs${seenAt(d.ack_timing_seen_at)}: ${(100 * d.ack_compression_share).toFixed(1)} %; BE's largest samples: ${big || "none"}`);
  }
  for (const [name, why] of Object.entries(d.not_reproducible || {})) lines.push(`${name}: ${why}`);
  if (d.dispersion_capacity_bps != null) lines.push(`capacity from the packet-pair dispersion mode (${d.dispersion_from}): ${mbit(d.dispersion_capacity_bps)} Mbit/s`);
  for (const [name, c] of Object.entries(d.loss_classes || {})) {
    let text = `${name} classified ${c.congestion} losses as congestion, ${c.random} as random`;
    if (c.correct_share != null) text += ` (${(100 * c.correct_share).toFixed(0)} % right of ${c.labelled} labelled)`;
    lines.push(text);
  }
  return lines;
}
