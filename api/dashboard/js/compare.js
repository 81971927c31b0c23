// Compare: which estimator is best by which score, over the chosen runs (default: the latest finished one) —
// a table (median, its bootstrap interval, the flows behind it; composite_error first; one-sided shares not
// ranked; "=" after a rank whose interval overlaps another's) and a heat map of ranks, estimators in rank order,
// as wide as the page; each non-zero "wins" number links down to the flows behind it.
import { get } from "./api.js";
import { plotlyReady } from "./congestion.js";
import { download, html, num, query, render, setQuery, toCsv } from "./util.js";

export async function compareView(view, alive) {
  const runs = await get("/runs");
  if (!alive()) return;
  const q = query();
  const chosen = (q.get("runs") || runs.find((r) => r.status === "succeeded")?.id || "").split(",").filter(Boolean);
  const capNames = (r) => { const n = r.capture_names || [], all = r.captures_total ?? n.length; return all <= 2 ? n.join(", ") : `${n.slice(0, 2).join(", ")} +${all - 2} more`; };
  const option = (r) => { const text = `${capNames(r) || `${r.captures_total ?? r.captures.length} capture(s)`} · ${r.created_at.slice(0, 16).replace("T", " ")} · ${r.status}${r.batch_id ? " · batch" : ""}`;
    return chosen.includes(r.id) ? html`<option value="${r.id}" selected>${text}</option>` : html`<option value="${r.id}">${text}</option>`; };
  render(view, html`<h1>Compare estimators</h1>
    <div class="card"><label>Runs <select id="runs-select" multiple size="${Math.min(6, Math.max(2, runs.length))}">${runs.map(option)}</select></label>
      <label class="inline"><input type="checkbox" id="include-incomparable" ${q.get("incomparable") === "1" ? html`checked` : ""}> also rank flows that are not comparable</label></div>
    <div id="board"></div>`);
  document.getElementById("runs-select").addEventListener("change", (e) => {
    setQuery({ runs: [...e.target.selectedOptions].map((o) => o.value).join(","), incomparable: q.get("incomparable") || "0" });
    compareView(view, alive);
  });
  document.getElementById("include-incomparable").addEventListener("change", (e) => {
    setQuery({ runs: chosen.join(","), incomparable: e.target.checked ? "1" : "0" });
    compareView(view, alive);
  });
  if (!chosen.length) { render(document.getElementById("board"), html`<p class="muted">No finished run yet.</p>`); return; }
  const board = await get("/leaderboard", { runs: chosen.join(","), include_incomparable: q.get("incomparable") === "1" });
  if (!alive()) return;
  const scores = Object.keys(board.scores);
  // estimators in the order of the default ranking (composite_error), unranked last
  const comp = board.scores.composite_error.estimators;
  const names = [...board.estimators].sort((a, b) => (comp[a].rank ?? Infinity) - (comp[b].rank ?? Infinity) || a.localeCompare(b));
  const cell = (s, n) => board.scores[s].estimators[n];
  const BEST = { min: "lowest", max: "highest", zero: "closest to 0", one: "closest to 1" };
  const rows = scores.map((s) => { const sb = board.scores[s];
    return html`<tr class="${sb.ranked ? "" : "unranked"}"><th scope="row" class="text" title="${sb.meaning}">${s}
      <span class="muted">(${sb.ranked ? `best: ${BEST[sb.better]}` : "one-sided: not ranked alone"})</span></th>${names.map((n) => {
    const e = cell(s, n);
    const spread = e.median == null ? "–" : html`${num(e.median, 3)} <span class="muted" title="${Math.round(100 * board.confidence)} % bootstrap interval of the median">(${num(e.ci?.[0], 3)}–${num(e.ci?.[1], 3)})</span> <span class="${e.few ? "few" : "muted"}" title="flows behind it${e.few ? `: under ${board.min_flows}` : ""}">n=${e.flows}${e.few ? "!" : ""}</span>`;
    if (!sb.ranked) return html`<td>${spread}</td>`;
    const wins = e.wins > 0 ? html`<a href="#" class="wins" data-score="${s}" data-estimator="${n}">${e.wins} wins</a>` : html`<span class="muted">0 wins</span>`;
    const tie = e.ties?.length ? html`<span title="interval overlaps ${e.ties.join(", ")}: a tie">=</span>` : "";
    return html`<td class="${e.rank === 1 ? "best" : ""}">${spread} <span class="muted">#${e.rank ?? "–"}</span>${tie} · ${wins}</td>`;
  })}</tr>`; });
  const leftOut = Object.entries(board.left_out || {});
  render(document.getElementById("board"), html`
    ${leftOut.length ? html`<p class="not-reproducible">Left out as not reproducible from their flows' vantage (they depend on the ACKs' timing at the sender):
      ${leftOut.map(([n, c]) => `${n} on ${c} flow(s)`).join(", ")}.</p>` : ""}
    ${board.warning ? html`<p class="warning" role="status">Warning: ${board.warning}.</p>` : ""}
    ${board.incomparable ? html`<p class="muted">${board.incomparable} bulk flow(s) not comparable ${board.include_incomparable ? "ranked as asked" : "left out (too little network-limited time or too few loss events, or application- or receiver-limited)"}.</p>` : ""}
    <p class="muted">${board.flows} bulk flows · median over flows (its ${Math.round(100 * board.confidence)} % bootstrap interval, resampling ${board.resampled}), n = flows behind it (! under ${board.min_flows}), rank (#, by median; = where the intervals overlap: a tie) and the flows on which each estimator was best.
      Ranked by <strong>composite_error</strong> first: per flow (|err| + |ln(ssthresh/ideal)|)/2; over/under shares are one-sided and ranked only together (off_share).</p>
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
  const ranked = scores.filter((s) => board.scores[s].ranked);
  const z = ranked.map((s) => names.map((n) => cell(s, n).rank ?? null));
  const Plotly = await plotlyReady();
  await Plotly.newPlot("heatmap", [{ type: "heatmap", z, x: names, y: ranked, colorscale: [[0, "#1a9850"], [0.5, "#fee08b"], [1, "#d73027"]],
    text: z.map((r) => r.map((v) => (v ? `#${v}` : ""))), texttemplate: "%{text}", hovertemplate: "%{y}<br>%{x}: rank %{z}<extra></extra>" }],
    { title: { text: "Rank by score (1 = best)" }, autosize: true, width: document.getElementById("heatmap").clientWidth || undefined,
      margin: { l: Math.min(220, 0.35 * (document.getElementById("heatmap").clientWidth || 640)), r: 10, t: 60 }, xaxis: { automargin: true, tickangle: -45 } },
    { responsive: true, displaylogo: false });
  document.getElementById("png-heatmap").addEventListener("click", () => Plotly.downloadImage("heatmap", { format: "png", filename: "leaderboard" }));
  document.getElementById("export-board").addEventListener("click", () => {
    const flat = scores.flatMap((s) => names.map((n) => ({ score: s, estimator: n, ...cell(s, n), won_flows: cell(s, n).won_flows.length })));
    const rows2 = flat.map((r) => ({ ...r, ci_low: r.ci?.[0], ci_high: r.ci?.[1], ties: (r.ties || []).join(" ") }));
    download("leaderboard.csv", toCsv(["score", "estimator", "mean", "median", "q1", "q3", "ci_low", "ci_high", "rank", "ties", "wins", "flows"].map((k) => ({ key: k, label: k })), rows2));
  });
}
