// Hash router: every view's state lives in the URL (#/captures, #/captures/ID, #/runs/R/captures/C/flows/F?est=…,
// #/compare?runs=…), so any view is a shareable link.
import { setToken, token } from "./api.js";
import { capturesView } from "./captures.js";
import { captureView } from "./capture.js";
import { flowView } from "./flow.js";
import { compareView } from "./compare.js";
import { html, render } from "./util.js";

const routes = [
  [/^#\/captures\/([0-9a-f]+)$/, captureView],
  [/^#\/runs\/([0-9a-f]+)\/captures\/([0-9a-f]+)\/flows\/(\d+)$/, flowView],
  [/^#\/compare$/, compareView],
  [/^#\/captures$/, capturesView],
];

let current = 0;

async function route() {
  const [path] = (location.hash || "#/captures").split("?");
  const view = document.getElementById("view");
  const ticket = ++current;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", path.startsWith(a.getAttribute("href")));
  for (const [re, fn] of routes) {
    const m = path.match(re);
    if (m) {
      render(view, html`<p class="muted">Loading…</p>`);
      try { await fn(view, ...m.slice(1), () => ticket === current); }
      catch (e) { if (ticket === current) render(view, html`<p class="error" role="alert">${String(e.message || e)}</p>`); }
      return;
    }
  }
  location.hash = "#/captures";
}

const tokenInput = document.getElementById("token");
tokenInput.value = token();
tokenInput.addEventListener("change", () => { setToken(tokenInput.value.trim()); route(); });
window.addEventListener("hashchange", route);
route();
