// Small helpers: the one way markup is built (html`…`, escaping every value), formatting, sortable tables,
// CSV and file downloads, URL state.
export const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

// Markup is only ever written through html`…` and render(): every interpolated value is escaped unless it
// is itself an html`…` fragment (or an array of them), so data (names, tags, error text) can never become
// markup. render() refuses anything that is not a fragment; no view assigns innerHTML itself.
const FRAGMENT = Symbol("html");
const piece = (v) => (v && v[FRAGMENT] !== undefined ? v[FRAGMENT] : Array.isArray(v) ? v.map(piece).join("") : esc(v));
export function html(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => { out += piece(v) + strings[i + 1]; });
  return { [FRAGMENT]: out };
}
export function render(el, fragment) {
  if (!fragment || fragment[FRAGMENT] === undefined) throw new TypeError("render() takes an html`…` fragment");
  el.innerHTML = fragment[FRAGMENT];
}
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
  // text a spreadsheet would run as a formula (= + - @ tab CR first) gets a leading ' (numbers are left alone)
  const cell = (v) => {
    let s = v === null || v === undefined ? "" : String(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns.map((c) => cell(c.label)).join(","), ...rows.map((r) => columns.map((c) => cell(r[c.key])).join(","))].join("\n") + "\n";
}

// A table whose headers sort it; columns: [{key, label, fmt?, text?}] (fmt returns text or an html`…` fragment);
// rows: objects; link(row) → href or null.
export function sortableTable(id, columns, rows, { link = null, sortKey = null, desc = false, onSort = null } = {}) {
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  let state = { key: sortKey, desc };
  const draw = () => {
    const sorted = [...rows];
    if (state.key) sorted.sort((a, b) => {
      const x = a[state.key], y = b[state.key];
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
      return state.desc ? -c : c;
    });
    render(wrap, html`<table id="${id}"><thead><tr>${columns.map((c) => html`<th data-key="${c.key}" class="${c.text ? "text" : ""}" scope="col" aria-sort="${state.key === c.key ? (state.desc ? "descending" : "ascending") : "none"}">${c.label}</th>`)}</tr></thead><tbody>${sorted.map((r) => html`<tr>${columns.map((c, i) => {
      const v = c.fmt ? c.fmt(r[c.key], r) : r[c.key];
      const href = i === 0 && link ? link(r) : null;
      return html`<td class="${c.text ? "text" : ""}">${href ? html`<a href="${href}">${v}</a>` : v}</td>`;
    })}</tr>`)}</tbody></table>`);
    wrap.querySelectorAll("th[data-key]").forEach((th) => th.addEventListener("click", () => {
      const key = th.dataset.key;
      state = { key, desc: state.key === key ? !state.desc : false };
      onSort && onSort(state);
      draw();
    }));
  };
  draw();
  return wrap;
}
