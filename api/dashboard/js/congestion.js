// The congestion graph (graphs/congestion.py draws the data): four panels on one shared time axis —
// time–sequence, bytes in flight with each estimator's cwnd/ssthresh at every loss (y-range following the
// flight, decisions above it marked ▲ at the edge; shaded where the sender was not network-limited: what
// limited it), estimates against the
// achieved rate (y-range following the achieved rate, clipped points marked ▲ at the edge, log scale on
// demand), RTT — and a fifth when the path's capacity is known: the queue the RTT implies, (RTT − RTTmin)·C,
// with the inferred buffer. A flow that was not replayed (`replayed` false) has what the capture shows alone:
// time–sequence, flight and RTT, without the estimators' overlays. Dragging brushes a time range (every panel
// follows), the modebar pans, a double click resets. With `refetch(t0, t1, px)`, every zoom asks for that window again so the points come back at full
// resolution; without it (the offline report) the embedded data is re-used.
//
// No imports: the HTML report inlines this file as it is.

const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
  "#7f7f7f"];
const ROWS = [["y", [0.71, 1.0]], ["y2", [0.47, 0.67]], ["y3", [0.23, 0.43]], ["y4", [0.0, 0.19]]];
// what limited the sender (scoring.limits), as graphs/static.py shades it; the network's time (cwnd) unshaded
const LIMIT_COLORS = { rwnd: "rgba(188,189,34,0.18)", app: "rgba(23,190,207,0.15)", sndbuf: "rgba(148,103,189,0.15)", unknown: "rgba(150,150,150,0.15)" };
const ROWS5 = [["y", [0.76, 1.0]], ["y2", [0.56, 0.72]], ["y3", [0.36, 0.52]], ["y4", [0.18, 0.32]], ["y5", [0.0, 0.14]]];
// a flow that was not replayed (`replayed` false): the capture's panels alone — no rate panel, RTT below the flight
const ROWS3 = [["y", [0.56, 1.0]], ["y2", [0.28, 0.5]], ["y4", [0.0, 0.22]]];
const TITLES = { y: "sequence (bytes)", y2: "in flight (bytes)", y4: "RTT (ms)", y5: "queue (bytes)" };

/** The panels drawn: [axis, [bottom, top] of the page] from the top down. */
function panelRows(d) {
  if (d.queue) return ROWS5;
  return d.replayed === false ? ROWS3 : ROWS;
}

/** plotly.js, once its (async) script has run: the dashboard loads it beside the data, not before. */
export function plotlyReady() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  const script = document.getElementById("plotly-js");
  return new Promise((resolve, reject) => {
    if (!script) { reject(new Error("plotly.js is not on the page")); return; }
    script.addEventListener("load", () => resolve(window.Plotly), { once: true });
    script.addEventListener("error", () => reject(new Error("plotly.js did not load")), { once: true });
  });
}

/** The trace of one estimator's colour, stable across panels and pages. */
export function estimatorColors(names) {
  const out = {};
  names.forEach((n, i) => { out[n] = PALETTE[i % PALETTE.length]; });
  return out;
}

function traces(d, { shown, log }) {
  const names = Object.keys(d.rates).filter((n) => n !== "achieved" && n !== "truth");
  const color = estimatorColors(names);
  const vis = (n) => (shown === null || shown.has(n) ? true : "legendonly");
  const drawn = new Set(names.filter((n) => d.rates[n].y.some((v) => v !== null)));  // has an estimate here
  const mb = (ys) => ys.map((v) => (v === null ? null : v / 1e6));
  const out = [];
  const s = d.sequence;
  // each point's packet in the capture file, as Wireshark numbers it: "frame N" on hover
  const frames = (l) => (l.frame || []).map((f) => (f === null ? "" : `frame ${f}`));
  out.push({ name: "data sent", x: s.sent.t, y: s.sent.y, hovertext: frames(s.sent), yaxis: "y", mode: "markers", marker: { size: 3, color: "#222" }, legendgroup: "seq" });
  out.push({ name: "retransmitted", x: s.retransmitted.t, y: s.retransmitted.y, hovertext: frames(s.retransmitted), yaxis: "y", mode: "markers", marker: { size: 7, symbol: "x", color: "#d62728" }, legendgroup: "seq" });
  out.push({ name: "ACK", x: s.ack.t, y: s.ack.y, hovertext: frames(s.ack), yaxis: "y", mode: "lines", line: { shape: "hv", color: "#2ca02c", width: 1.5 }, legendgroup: "seq" });
  const sx = [], sy = [];
  s.sack.t.forEach((t, i) => { sx.push(t, t, null); sy.push(s.sack.lo[i], s.sack.hi[i], null); });
  out.push({ name: "SACK blocks", x: sx, y: sy, yaxis: "y", mode: "lines", line: { color: "#9467bd", width: 3 }, legendgroup: "seq", connectgaps: false });
  out.push({ name: "receive window", x: s.rwnd.t, y: s.rwnd.y, yaxis: "y", mode: "lines", line: { shape: "hv", color: "#bcbd22", width: 1 }, legendgroup: "seq" });

  out.push({ name: "bytes in flight", x: d.flight.flight.t, y: d.flight.flight.y, yaxis: "y2", mode: "lines", line: { color: "#222", width: 1 }, legendgroup: "flight" });
  out.push({ name: "ideal (rate × RTTmin)", x: d.flight.ideal.t, y: d.flight.ideal.y, yaxis: "y2", mode: "markers", marker: { symbol: "line-ew-open", size: 18, color: "black" }, legendgroup: "flight" });
  for (const [n, e] of Object.entries(d.flight.estimators)) {
    if (!(n in color)) color[n] = PALETTE[Object.keys(color).length % PALETTE.length];
    // a decision-only control (§8: no estimate, no rate line) is named in the legend by its ssthresh markers
    out.push({ name: drawn.has(n) ? `${n} ssthresh` : n, x: e.t, y: e.ssthresh, yaxis: "y2", mode: "markers", marker: { symbol: "circle", size: 8, color: color[n] }, legendgroup: n, showlegend: !drawn.has(n), visible: vis(n) });
    out.push({ name: `${n} cwnd`, x: e.cwnd_t, y: e.cwnd, yaxis: "y2", mode: "markers", marker: { symbol: "diamond-open", size: 8, color: color[n] }, legendgroup: n, showlegend: false, visible: vis(n) });
    const fc = (d.flight_clipped || {})[n];
    if (fc && d.flight_top) out.push({ name: `${n} above`, x: fc.t, y: fc.t.map(() => d.flight_top), customdata: fc.y, yaxis: "y2", mode: "markers",
      marker: { symbol: "triangle-up", size: 9, color: color[n] }, legendgroup: n, showlegend: false, visible: vis(n),
      hovertemplate: `${n}: %{customdata:,.0f} bytes (above the axis)<extra></extra>` });
  }
  for (const label of Object.keys(LIMIT_COLORS)) {  // a legend entry per band colour present
    if ((d.limits || []).some((r) => r[2] === label)) out.push({ name: `limited by ${label}`, x: [null], y: [null], yaxis: "y2", mode: "markers", marker: { symbol: "square", size: 12, color: LIMIT_COLORS[label] }, legendgroup: "limits" });
  }

  if (d.rates.achieved) out.push({ name: "achieved", x: d.rates.achieved.t, y: mb(d.rates.achieved.y), yaxis: "y3", mode: "lines", line: { color: "black", width: 3 } });
  if (d.rates.truth) out.push({ name: "truth", x: d.rates.truth.t, y: mb(d.rates.truth.y), yaxis: "y3", mode: "lines", line: { color: "grey", dash: "dash", width: 3 } });
  if (d.capacity_bps) out.push({ name: "capacity (packet pairs)", x: d.window, y: [d.capacity_bps / 1e6, d.capacity_bps / 1e6], yaxis: "y3", mode: "lines", line: { color: "grey", dash: "dot", width: 2 } });
  for (const n of names.filter((m) => drawn.has(m))) {
    out.push({ name: n, x: d.rates[n].t, y: mb(d.rates[n].y), yaxis: "y3", mode: "lines", line: { color: color[n], width: 1.5 }, legendgroup: n, visible: vis(n) });
    const c = d.clipped[n];
    if (c && !log) out.push({ name: `${n} clipped`, x: c.t, y: c.t.map(() => d.y_top / 1e6), customdata: mb(c.y), yaxis: "y3", mode: "markers",
      marker: { symbol: "triangle-up", size: 9, color: color[n] }, legendgroup: n, showlegend: false, visible: vis(n),
      hovertemplate: `${n}: %{customdata:.1f} Mbit/s (above the axis)<extra></extra>` });
  }

  out.push({ name: "RTT samples", x: d.rtt.samples.t, y: d.rtt.samples.y, yaxis: "y4", mode: "markers", marker: { size: 3, color: "#1f77b4" }, legendgroup: "rtt" });
  out.push({ name: "srtt", x: d.rtt.srtt.t, y: d.rtt.srtt.y, yaxis: "y4", mode: "lines", line: { color: "#ff7f0e", width: 1.5 }, legendgroup: "rtt" });
  out.push({ name: "RTTmin", x: d.rtt.rttmin.t, y: d.rtt.rttmin.y, yaxis: "y4", mode: "lines", line: { color: "#2ca02c", dash: "dash", width: 1.5 }, legendgroup: "rtt" });
  if (d.queue) {
    out.push({ name: "queue (RTT − RTTmin)·C", x: d.queue.queue.t, y: d.queue.queue.y, yaxis: "y5", mode: "markers", marker: { size: 3, color: "#8c564b" }, legendgroup: "queue" });
    if (d.queue.buffer_bytes) out.push({ name: "inferred buffer", x: d.window, y: [d.queue.buffer_bytes, d.queue.buffer_bytes], yaxis: "y5", mode: "lines", line: { color: "#8c564b", dash: "dot", width: 2 }, legendgroup: "queue" });
  }
  return out;
}

function layout(d, { log, height, compact }) {
  const shapes = d.episodes.map((e) => ({ type: "rect", xref: "x", yref: "paper", x0: e.start, x1: e.end, y0: 0, y1: 1,
    fillcolor: e.kind === "timeout" ? "rgba(214,39,40,0.18)" : "rgba(255,127,14,0.15)", line: { width: 1, color: e.kind === "timeout" ? "rgba(214,39,40,0.5)" : "rgba(255,127,14,0.45)" }, layer: "below" }));
  const titles = { ...TITLES, y3: log ? "Mbit/s (log)" : "Mbit/s" };
  const rows = panelRows(d);
  const [f0, f1] = rows[1][1];  // the flight panel's band of the page
  for (const [a, b, label] of d.limits || []) {
    if (LIMIT_COLORS[label]) shapes.push({ type: "rect", xref: "x", yref: "paper", x0: a, x1: b, y0: f0, y1: f1, fillcolor: LIMIT_COLORS[label], line: { width: 0 }, layer: "below" });
  }
  // narrow screens: no legend (the estimator toggles above the graph name the colours), tighter margins
  const lay = {
    height, margin: compact ? { t: 10, l: 55, r: 8, b: 45 } : { t: 40, l: 70, r: 20, b: 50 }, hovermode: "closest",
    dragmode: "zoom", shapes, showlegend: !compact,
    legend: { orientation: "h", y: 1.0, yanchor: "bottom", x: 0, traceorder: "normal" },
    xaxis: { title: { text: "time since the flow's first packet (s)" }, range: d.window, autorange: false, anchor: rows[rows.length - 1][0] },
  };
  rows.forEach(([axis, domain]) => {
    const key = axis === "y" ? "yaxis" : `yaxis${axis.slice(1)}`;
    lay[key] = { domain, title: { text: titles[axis] }, fixedrange: true };
  });
  if (d.flight_top) Object.assign(lay.yaxis2, { range: [0, d.flight_top], autorange: false });
  if (!lay.yaxis3) return lay;  // no rate panel
  if (log) Object.assign(lay.yaxis3, { type: "log", autorange: true });
  else if (d.y_top) Object.assign(lay.yaxis3, { range: [0, d.y_top / 1e6], autorange: false });
  return lay;
}

/**
 * Draw the graph into `el`. opts: { refetch(t0, t1, px) → Promise<data> | null, shown: Set of estimator
 * names or null (all), log: bool, height, onWindow(t0, t1) }. Returns { setShown(name, on), setLog(on) }.
 * `el.dataset`: ready ("1" once drawn), points, fullResolution, window.
 */
export async function drawCongestion(el, data, opts = {}) {
  const Plotly = await plotlyReady();
  const state = { data, shown: opts.shown ?? null, log: !!opts.log, height: opts.height ?? 900, compact: (el.clientWidth || 1200) < 600 };
  const config = { responsive: true, displaylogo: false, toImageButtonOptions: { format: "png", scale: 2 } };
  let busy = false, pending = null, timer = null;
  const mark = () => {
    el.dataset.points = String(state.data.points);
    el.dataset.fullResolution = String(state.data.full_resolution);
    el.dataset.window = state.data.window.map((v) => Number(v).toFixed(6)).join(",");
    el.dataset.ready = "1";
  };
  const draw = async () => {
    await Plotly.react(el, traces(state.data, state), layout(state.data, state), config);
    mark();
  };
  const load = async (t0, t1) => {
    if (busy) { pending = [t0, t1]; return; }
    busy = true;
    el.dataset.ready = "0";
    try {
      state.data = opts.refetch ? await opts.refetch(t0, t1, Math.round(el.clientWidth || 1200)) : { ...state.data, window: [t0, t1] };
      await draw();
      opts.onWindow && opts.onWindow(t0, t1);
    } finally {
      busy = false;
      if (pending) { const [a, b] = pending; pending = null; load(a, b); }
    }
  };
  await Plotly.newPlot(el, traces(data, state), layout(data, state), config);
  mark();
  el.on("plotly_relayout", (ev) => {
    let win = null;
    if ("xaxis.range[0]" in ev) win = [Number(ev["xaxis.range[0]"]), Number(ev["xaxis.range[1]"])];
    else if (Array.isArray(ev["xaxis.range"])) win = ev["xaxis.range"].map(Number);
    else if (ev["xaxis.autorange"]) win = state.data.t_span;
    if (!win) return;
    clearTimeout(timer);
    timer = setTimeout(() => load(win[0], win[1]), 120);
  });
  return {
    setShown(name, on) {
      if (state.shown === null) state.shown = new Set(Object.keys(state.data.rates));
      on ? state.shown.add(name) : state.shown.delete(name);
      return draw();
    },
    setLog(on) { state.log = on; return draw(); },
    zoom(t0, t1) { return load(t0, t1); },
  };
}
