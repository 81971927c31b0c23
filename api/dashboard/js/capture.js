// One capture: its flows (sortable; listed as soon as ingest has found them, while the run is still going, each
// saying whether it was replayed and, when not, why) and the live progress of its runs.
import { get, getAll } from "./api.js";
import { download, html, mbit, num, query, render, setQuery, sortableTable, toCsv } from "./util.js";

const FLOW_COLUMNS = [
  { key: "flow_id", label: "flow" },
  { key: "sender", label: "sender", text: true },
  { key: "receiver", label: "receiver", text: true },
  { key: "duration_s", label: "duration s", fmt: (v) => num(v, 2) },
  { key: "goodput_bps", label: "goodput Mbit/s", fmt: (v) => mbit(v) },
  { key: "rttmin_s", label: "RTTmin ms", fmt: (v) => num(v, 2, 1e3) },
  { key: "loss_events", label: "loss events" },
  { key: "retransmissions", label: "retransmissions" },
  { key: "vantage", label: "vantage", text: true, fmt: (v, f) => vantageLabel(f) },
  { key: "limits", label: "limited by", text: true },
  { key: "replay", label: "replay", text: true, fmt: (v) => (v === "replayed" ? v : html`<span class="muted reason">${v}</span>`) },
];

/** "receiver (reconstructed)" for a flow rebuilt as its sender saw it (docs/estimators.md §7); a tap with where it
 * lies, as `cli.wording.vantage_text` says it. */
export function vantageLabel(f) {
  return f.reconstruction ? `${vantageText(f)} (reconstructed)` : vantageText(f);
}

/** "mid_path at 9 % of the RTT from the sender" for a tap with a position (where it lies decides how much of the
 * path's ACK timing it sees), else the vantage. */
export function vantageText(f) {
  return f.vantage === "mid_path" && f.vantage_position != null
    ? `mid_path at ${(100 * f.vantage_position).toFixed(0)} % of the RTT from the sender` : f.vantage;
}

/** What limited a flow's sender in a few words, as the CLI's "limited by" line: each label's share of its time,
 * the largest first (under 0.5 % left out: it rounds to 0 %); "—" when nothing is known. */
export function limitsText(shares) {
  const kept = Object.entries(shares || {}).filter(([, v]) => v != null && v >= 0.005).sort((a, b) => b[1] - a[1]);
  return kept.map(([k, v]) => `${k} ${(100 * v).toFixed(0)} %`).join(", ") || "—";
}

/** Every flow's limits shares of the capture in the run, by flow id (the API's pages followed to the end). */
async function captureLimits(runId, id) {
  const out = new Map();
  for (let offset = 0; ;) {
    const page = await get(`/runs/${runId}/captures/${id}/limits`, { offset, limit: 10000 });
    for (const item of page.items) out.set(item.flow_id, item.shares);
    offset += page.items.length;
    if (!page.next || !page.items.length) return out;
  }
}

/** Why each flow of the capture the run did not replay, by flow id: the capture's own entry in the run
 * (`GET /runs/{r}/captures/{c}`: whichever page of the run's status lists it) holds the first 100, the rest
 * are read from `…/skipped` when there are more. */
export async function skippedFlows(runId, id, entry) {
  const shown = entry.skipped_flows || {};
  if (Object.keys(shown).length >= (entry.skipped_total || 0)) return shown;
  const out = {};
  for (const item of await getAll(`/runs/${runId}/captures/${id}/skipped`, { limit: 10000 })) out[item.flow_id] = item.reason;
  return out;
}

export async function captureView(view, id, alive) {
  const [cap, runs] = await Promise.all([get(`/captures/${id}`), get("/runs", { capture: id })]);
  if (!alive()) return;
  const q = query();
  const run = runs.find((r) => r.id === q.get("run")) || runs[0];
  render(view, html`
    <h1>${cap.name}</h1>
    <p class="muted">${cap.format}, ${(cap.size_bytes / 1e6).toFixed(2)} MB, status <span id="capture-status" class="status-${cap.status}">${cap.status}</span>
      ${cap.truth ? ` · ground truth ${JSON.stringify(cap.truth)}` : ""}${cap.error ? html` · <span class="error">${cap.error_code}: ${cap.error}</span>` : ""}</p>
    <section class="card" aria-labelledby="run-title">
      <h2 id="run-title">Run</h2>
      <div class="toolbar"><label>Run <select id="run-select">${runs.map((r) => r.id === run?.id
        ? html`<option value="${r.id}" selected>${r.created_at.slice(0, 19)} · ${r.estimators.length} estimators${r.is_default ? " (default)" : ""}</option>`
        : html`<option value="${r.id}">${r.created_at.slice(0, 19)} · ${r.estimators.length} estimators${r.is_default ? " (default)" : ""}</option>`)}</select></label>
        <a id="compare-link" href="#/compare?runs=${run?.id || ""}">compare estimators on this run</a></div>
      <progress id="run-progress" value="0" max="1"></progress> <span id="run-status" role="status"></span>
    </section>
    <section><h2>Flows</h2><div class="toolbar"><button class="secondary" id="export-flows">Export CSV</button></div><div id="flows"></div></section>`);
  document.getElementById("run-select").addEventListener("change", (e) => { setQuery({ run: e.target.value }); captureView(view, id, alive); });
  document.getElementById("export-flows").addEventListener("click", () => download(`${cap.name}-flows.csv`, toCsv(FLOW_COLUMNS, flows)));
  const link = (r) => (run ? `#/runs/${run.id}/captures/${id}/flows/${r.flow_id}` : null);
  const state = { key: q.get("sort") || "flow_id", desc: q.get("desc") === "1" };
  let flows = [];
  let limits = new Map();
  let shown = "";
  let skipped = {};
  const drawFlows = (s) => {
    const done = !s || s.status === "succeeded" || s.status === "failed";
    for (const f of flows) {
      f.replay = skipped[f.flow_id] ? `not replayed: ${skipped[f.flow_id]}` : !run ? "no run" : done ? (s.status === "failed" ? "failed" : "replayed") : "pending";
      f.limits = limits.has(f.flow_id) ? limitsText(limits.get(f.flow_id)) : f.replay === "replayed" ? "—" : "";
    }
    const key = flows.map((f) => `${f.replay}:${f.limits}`).join("|");
    if (key === shown) return;
    shown = key;
    const box = document.getElementById("flows");
    box.replaceChildren(sortableTable("flows-table", FLOW_COLUMNS, flows, {
      link, sortKey: state.key, desc: state.desc,
      onSort: (st) => { state.key = st.key; state.desc = st.desc; setQuery({ ...(run ? { run: run.id } : {}), sort: st.key, desc: st.desc ? "1" : "0" }); },
    }));
  };
  const refresh = async (s, entry) => {
    if (!flows.length) {
      flows = await getAll(`/captures/${id}/flows`);
      if (!flows.length) return;
    }
    if (entry && entry.skipped_total !== Object.keys(skipped).length) skipped = await skippedFlows(run.id, id, entry);
    if (run && s?.status === "succeeded" && !limits.size) limits = await captureLimits(run.id, id);
    if (alive()) drawFlows(s);
  };
  const last = await follow(run, id, alive, refresh);
  if (!alive()) return;
  const fresh = await get(`/captures/${id}`);
  const status = document.getElementById("capture-status");
  status.textContent = fresh.status;
  status.className = `status-${fresh.status}`;
  await refresh(last?.run, last?.entry);
  if (!flows.length) render(document.getElementById("flows"), html`<p class="muted">${fresh.status === "failed" ? "No flows: the capture could not be ingested." : "No TCP flow carried data."}</p>`);
}

/** Poll the run until it ends, showing its progress and the capture's error; `tick(status, entry)` after each
 * poll with the run's status and the capture's entry in it. Returns the last of both. */
async function follow(run, id, alive, tick) {
  const bar = document.getElementById("run-progress");
  const text = document.getElementById("run-status");
  if (!run) { text.textContent = "no run"; return null; }
  for (;;) {
    const [s, entry] = await Promise.all([get(`/runs/${run.id}`, { limit: 1 }), get(`/runs/${run.id}/captures/${id}`)]);
    if (!alive()) return { run: s, entry };
    await tick(s, entry);
    const { tasks_done: done, tasks_total: total } = s.progress;
    bar.value = total ? done / total : 0;
    const errors = entry.error ? `${entry.error_code}: ${entry.error}` : "";
    render(text, html`<span class="status-${s.status}">${s.status}</span> — ${done}/${total} tasks${errors ? html` · <span class="error">${errors}</span>` : ""}`);
    if (s.status === "succeeded" || s.status === "failed") return { run: s, entry };
    await new Promise((r) => setTimeout(r, 400));
  }
}
