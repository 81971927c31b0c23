// Small helpers: escaping, formatting, sortable tables, CSV and file downloads, URL state.
export const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
export const num = (x, d = 2, scale = 1) => (x === null || x === undefined || Number.isNaN(x) ? "–" : (x * scale).toFixed(d));
export const mbit = (bps) => num(bps, 3, 1e-6);

export function query() { return new URLSearchParams(location.hash.split("?")[1] || ""); }
export function setQuery(params) {
  const [path] = location.hash.split("?");
  const q = new URLSearchParams(params).toString();
  history.replaceState(null, "", `${path}${q ? "?" + q : ""}`);
}

export function download(name, content, type = "text/csv") {
  const url = URL.createObjectURL(content instanceof Blob ? content : new Blob([content], { type }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function toCsv(columns, rows) {
  const cell = (v) => { const s = v === null || v === undefined ? "" : String(v); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
  return [columns.map((c) => cell(c.label)).join(","), ...rows.map((r) => columns.map((c) => cell(r[c.key])).join(","))].join("\n") + "\n";
}

// A table whose headers sort it; columns: [{key, label, fmt?, text?}]; rows: objects; link(row) → href or null.
export function sortableTable(id, columns, rows, { link = null, sortKey = null, desc = false, onSort = null } = {}) {
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  let state = { key: sortKey, desc };
  const render = () => {
    const sorted = [...rows];
    if (state.key) sorted.sort((a, b) => {
      const x = a[state.key], y = b[state.key];
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
      return state.desc ? -c : c;
    });
    wrap.innerHTML = `<table id="${id}"><thead><tr>${columns.map((c) => `<th data-key="${c.key}" class="${c.text ? "text" : ""}" scope="col"${state.key === c.key ? ` aria-sort="${state.desc ? "descending" : "ascending"}"` : ""}>${esc(c.label)}</th>`).join("")}</tr></thead><tbody>${sorted.map((r) => `<tr>${columns.map((c, i) => {
      const v = c.fmt ? c.fmt(r[c.key], r) : esc(r[c.key]);
      const href = i === 0 && link ? link(r) : null;
      return `<td class="${c.text ? "text" : ""}">${href ? `<a href="${href}">${v}</a>` : v}</td>`;
    }).join("")}</tr>`).join("")}</tbody></table>`;
    wrap.querySelectorAll("th[data-key]").forEach((th) => th.addEventListener("click", () => {
      const key = th.dataset.key;
      state = { key, desc: state.key === key ? !state.desc : false };
      onSort && onSort(state);
      render();
    }));
  };
  render();
  return wrap;
}
