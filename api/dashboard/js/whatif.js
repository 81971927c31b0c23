// The flow page's What-if card (docs/whatif.md): on request, each chosen congestion control in control on the path
// the run inferred for the flow (POST …/whatif), the self-check first — its results withheld when the captured
// sender's own control does not reproduce the flow — then a table of each algorithm's figures with their ranges
// beside the captured flow, and its congestion window over time.
import { post } from "./api.js";
import { plotlyReady } from "./congestion.js";
import { html, mbit, num, render } from "./util.js";

const ALGORITHMS = ["newreno", "westwood_plus", "cubic", "bic", "stcp", "hstcp", "htcp", "bbr",
  "be", "re", "crb", "abse", "tibet", "tibet_tx", "newbr"];
const DEFAULT_CHOSEN = new Set(["newreno", "westwood_plus", "cubic"]);
const COLUMNS = [
  { key: "goodput_bps", label: "goodput Mbit/s", fmt: (v) => mbit(v) },
  { key: "utilisation", label: "utilisation", fmt: (v) => num(v, 3) },
  { key: "loss_rate", label: "loss rate %", fmt: (v) => num(v, 3, 100) },
  { key: "queue_delay_mean_s", label: "queue mean ms", fmt: (v) => num(v, 1, 1e3) },
  { key: "queue_delay_p95_s", label: "queue p95 ms", fmt: (v) => num(v, 1, 1e3) },
  { key: "share", label: "share", fmt: (v) => num(v, 2) },
];

/** The card: the algorithms to run, the sender's control for the self-check, the duration, and a button. */
export function whatifCard() {
  return html`<section class="card" id="whatif"><h2>What-if: each control in the loop on this path</h2>
    <p class="muted">A packet-level simulation of one bulk sender per algorithm on the path above (capacity, base RTT, buffer, random loss), each figure with its range over the path's plausible values. The captured sender's control is re-enacted first: where it does not reproduce this flow (goodput within 10 %, loss-event rate within 30 %) the results are withheld.</p>
    <div class="toolbar" id="whatif-algorithms">${ALGORITHMS.map((a) => DEFAULT_CHOSEN.has(a)
      ? html`<label class="inline"><input type="checkbox" value="${a}" checked>${a}</label>`
      : html`<label class="inline"><input type="checkbox" value="${a}">${a}</label>`)}</div>
    <div class="toolbar"><label class="inline">sender ran <select id="whatif-sender">${["cubic", "newreno", "bic", "stcp", "hstcp", "westwood_plus", "bbr"].map((a) => html`<option value="${a}">${a}</option>`)}</select></label>
      <label class="inline">seconds <input type="number" id="whatif-duration" min="1" max="30" step="1" placeholder="flow's span"></label>
      <button id="whatif-run">Simulate</button><span class="muted" id="whatif-status" role="status"></span></div>
    <div id="whatif-out"></div></section>`;
}

/** Wire the card's button to the run's what-if of this flow (``base``: …/runs/{r}/captures/{c}/flows/{f}). */
export function bindWhatif(base) {
  const button = document.getElementById("whatif-run");
  const status = document.getElementById("whatif-status");
  const out = document.getElementById("whatif-out");
  button.addEventListener("click", async () => {
    const algorithms = [...document.querySelectorAll("#whatif-algorithms input:checked")].map((b) => b.value);
    const duration = Number(document.getElementById("whatif-duration").value) || null;
    button.disabled = true;
    status.textContent = "simulating…";
    try {
      const doc = await post(`${base}/whatif`, { algorithms, sender_cc: document.getElementById("whatif-sender").value, duration_s: duration });
      status.textContent = `${num(doc.duration_s, 1)} s simulated per run`;
      await showResult(out, doc);
    } catch (err) {
      status.textContent = "";
      render(out, html`<p class="error" id="whatif-error" role="alert">${err.message}</p>`);
    } finally {
      button.disabled = false;
    }
  });
}

const cell = (c, r) => {
  const range = r.ranges?.[c.key];
  const v = c.fmt(r[c.key]);
  return range && (range[0] !== r[c.key] || range[1] !== r[c.key]) ? `${v} [${c.fmt(range[0])}–${c.fmt(range[1])}]` : v;
};

async function showResult(out, doc) {
  const sc = doc.self_check;
  const ratios = sc.goodput_ratio == null ? "not run" : `goodput ratio ${num(sc.goodput_ratio, 3)}, loss-event rate ratio ${num(sc.loss_rate_ratio, 3)}`;
  const check = html`<p id="whatif-self-check" class="${sc.passed ? "" : "error"}">Self-check (${sc.algorithm}, ${sc.algorithm_source}): ${sc.passed ? "passed" : "failed"} — ${ratios}${sc.reason ? `; ${sc.reason}` : ""}</p>`;
  if (doc.withheld) {
    render(out, html`${check}<p class="muted" id="whatif-withheld">What-if withheld (${doc.withheld_code}): ${doc.withheld}</p>`);
    return;
  }
  const rows = [...Object.entries(doc.results).map(([name, r]) => ({ name, r })), { name: "captured", r: doc.captured }];
  render(out, html`${check}
    <div class="table-wrap"><table id="whatif-table"><thead><tr><th class="text">algorithm</th>${COLUMNS.map((c) => html`<th>${c.label}</th>`)}</tr></thead>
      <tbody>${rows.map(({ name, r }) => html`<tr><td class="text">${name}</td>${COLUMNS.map((c) => html`<td>${r[c.key] == null ? "—" : cell(c, r)}</td>`)}</tr>`)}</tbody></table></div>
    <p class="muted">[low–high]: the figure over the path's plausible values (capacity ±10 %, base RTT ±3 %, buffer ±25 %, random loss ±30 %); share: of the bytes every flow on the bottleneck delivered (the flows the capture shows sharing it are simulated beside it).</p>
    <div id="whatif-plot" class="plot" role="img" aria-label="congestion window of each simulated algorithm"></div>`);
  const Plotly = await plotlyReady();
  const narrow = out.clientWidth < 600;
  await Plotly.newPlot("whatif-plot", Object.entries(doc.results).map(([name, r]) => ({ x: r.series.t, y: r.series.cwnd, name, mode: "lines" })),
    { height: 320, showlegend: !narrow, legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 }, xaxis: { title: { text: "simulated time (s)" } },
      yaxis: { title: { text: "cwnd (segments)" } }, margin: narrow ? { t: 30, l: 50, r: 8 } : { t: 60 } }, { responsive: true, displaylogo: false });
  out.dataset.ready = "1";
}
