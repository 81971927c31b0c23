// Compare: which estimator is best by which score, over the chosen runs (default: the latest finished one) —
// a table and a heat map of ranks; each "wins" number links down to the flows behind it.
import { get } from "./api.js";
import { download, html, num, query, render, setQuery, toCsv } from "./util.js";

export async function compareView(view, alive) {
  const runs = await get("/runs");
  if (!alive()) return;
  const q = query();
  const chosen = (q.get("runs") || runs.find((r) => r.status === "succeeded")?.id || "").split(",").filter(Boolean);
  const option = (r) => { const text = `${r.created_at.slice(0, 19)} · ${r.captures.length} capture(s) · ${r.status}${r.batch_id ? " · batch" : ""}`;
    return chosen.includes(r.id) ? html`<option value="${r.id}" selected>${text}</option>` : html`<option value="${r.id}">${text}</option>`; };
  render(view, html`<h1>Compare estimators</h1>
    <div class="card"><label>Runs <select id="runs-select" multiple size="${Math.min(6, Math.max(2, runs.length))}">${runs.map(option)}</select></label></div>
    <div id="board"></div>`);
  document.getElementById("runs-select").addEventListener("change", (e) => {
    setQuery({ runs: [...e.target.selectedOptions].map((o) => o.value).join(",") });
    compareView(view, alive);
  });
  if (!chosen.length) { render(document.getElementById("board"), html`<p class="muted">No finished run yet.</p>`); return; }
  const board = await get("/leaderboard", { runs: chosen.join(",") });
  if (!alive()) return;
  const scores = Object.keys(board.scores);
  const names = board.estimators;
  const cell = (s, n) => board.scores[s].estimators[n];
  const rows = scores.map((s) => html`<tr><th scope="row" class="text">${s} <span class="muted">(${board.scores[s].better})</span></th>${names.map((n) => {
    const e = cell(s, n);
    return html`<td class="${e.rank === 1 ? "best" : ""}">${num(e.mean, 3)} <span class="muted">#${e.rank ?? "–"}</span> ·
      <a href="#" class="wins" data-score="${s}" data-estimator="${n}">${e.wins} wins</a></td>`;
  })}</tr>`);
  render(document.getElementById("board"), html`
    <p class="muted">${board.flows} bulk flows · mean over flows, rank (#), and the flows on which each estimator was best</p>
    <div class="toolbar"><button class="secondary" id="export-board">Export CSV</button><button class="secondary" id="png-heatmap">PNG</button></div>
    <div class="table-wrap"><table id="leaderboard"><thead><tr><th class="text" scope="col">score</th>${names.map((n) => html`<th scope="col">${n}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>
    <div id="won-flows" class="card" hidden></div>
    <div id="heatmap" class="plot" role="img" aria-label="rank of each estimator by score"></div>`);
  document.querySelectorAll("a.wins").forEach((a) => a.addEventListener("click", (ev) => {
    ev.preventDefault();
    const flows = cell(a.dataset.score, a.dataset.estimator).won_flows;
    const box = document.getElementById("won-flows");
    box.hidden = false;
    render(box, html`<h2>${a.dataset.estimator} was best by ${a.dataset.score} on ${flows.length} flow(s)</h2><ul>${flows.map((f) =>
      html`<li><a class="flow-link" href="#/runs/${f.run_id}/captures/${f.capture_id}/flows/${f.flow_id}">capture ${f.capture_id.slice(0, 8)} · flow ${f.flow_id}</a></li>`)}</ul>`);
  }));
  const z = scores.map((s) => names.map((n) => cell(s, n).rank ?? null));
  await Plotly.newPlot("heatmap", [{ type: "heatmap", z, x: names, y: scores, colorscale: [[0, "#1a9850"], [0.5, "#fee08b"], [1, "#d73027"]],
    text: z.map((r) => r.map((v) => (v ? `#${v}` : ""))), texttemplate: "%{text}", hovertemplate: "%{y}<br>%{x}: rank %{z}<extra></extra>" }],
    { title: { text: "Rank by score (1 = best)" }, margin: { l: 220, t: 60 } }, { responsive: true, displaylogo: false });
  document.getElementById("png-heatmap").addEventListener("click", () => Plotly.downloadImage("heatmap", { format: "png", filename: "leaderboard" }));
  document.getElementById("export-board").addEventListener("click", () => {
    const flat = scores.flatMap((s) => names.map((n) => ({ score: s, estimator: n, ...cell(s, n), won_flows: cell(s, n).won_flows.length })));
    download("leaderboard.csv", toCsv(["score", "estimator", "mean", "rank", "wins", "flows"].map((k) => ({ key: k, label: k })), flat));
  });
}
