// Captures: the list with status, and an upload form (drag and drop, progress, ground truth, tags).
import { get, upload } from "./api.js";
import { html, render, sortableTable } from "./util.js";

export async function capturesView(view, alive) {
  const page = await get("/captures", { limit: 500 });
  if (!alive()) return;
  render(view, html`
    <h1>Captures</h1>
    <section class="card" aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a capture</h2>
      <div id="dropzone">Drop a pcap / pcapng (optionally gzipped) here, or
        <label style="display:inline"><input id="file-input" type="file" aria-label="capture file"></label></div>
      <div class="grid" style="margin-top:.8rem">
        <label>Name <input id="up-name" placeholder="default: file name"></label>
        <label>Tags <input id="up-tags" placeholder="comma-separated"></label>
        <label>Bottleneck (ground truth) <input id="up-bottleneck" placeholder="e.g. 10Mbit"></label>
        <label>Shared by <select id="up-shared"><option value="all">all active bulk flows</option><option value="each">each flow</option></select></label>
        <label>Fixed fair share per flow <input id="up-share" placeholder="e.g. 2.5Mbit"></label>
      </div>
      <div class="toolbar"><button id="up-send" disabled>Upload</button><span id="upload-status" class="muted" role="status"></span></div>
      <progress id="upload-progress" value="0" max="1" hidden></progress>
    </section>
    <section><h2>All captures (${page.total})</h2><div id="captures-list"></div></section>`);
  const cols = [
    { key: "name", label: "name", text: true, fmt: (v) => html`<span class="cell-text">${v}</span>` },
    { key: "status", label: "status", text: true, fmt: (v) => html`<span class="status-${v}">${v}</span>` },
    { key: "size_bytes", label: "size MB", fmt: (v) => (v / 1e6).toFixed(2) },
    { key: "format", label: "format", text: true },
    { key: "tags", label: "tags", text: true, fmt: (v) => html`<span class="cell-text">${shortTags(v || [])}</span>` },
    { key: "created_at", label: "uploaded", text: true, fmt: (v) => String(v).replace("T", " ").slice(0, 19) },
  ];
  document.getElementById("captures-list").append(
    sortableTable("captures-table", cols, page.items, { link: (r) => `#/captures/${r.id}`, sortKey: "created_at", desc: true }));

  const input = document.getElementById("file-input");
  const zone = document.getElementById("dropzone");
  const send = document.getElementById("up-send");
  let file = null;
  const choose = (f) => { file = f; send.disabled = !f; document.getElementById("upload-status").textContent = f ? `${f.name} (${(f.size / 1e6).toFixed(2)} MB)` : ""; };
  input.addEventListener("change", () => choose(input.files[0]));
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => { e.preventDefault(); zone.classList.remove("over"); choose(e.dataTransfer.files[0]); });
  send.addEventListener("click", async () => {
    const form = new FormData();
    form.append("file", file);
    const val = (id) => document.getElementById(id).value.trim();
    if (val("up-name")) form.append("name", val("up-name"));
    if (val("up-tags")) form.append("tags", val("up-tags"));
    const truth = {};
    if (val("up-bottleneck")) Object.assign(truth, { bottleneck: val("up-bottleneck"), shared_by: val("up-shared") });
    if (val("up-share")) truth.fair_share = val("up-share");
    if (Object.keys(truth).length) form.append("truth", JSON.stringify(truth));
    const bar = document.getElementById("upload-progress");
    const status = document.getElementById("upload-status");
    bar.hidden = false; send.disabled = true;
    try {
      const body = await upload(form, (f) => { bar.value = f; status.textContent = `uploading ${(100 * f).toFixed(0)} %`; });
      status.textContent = body.created ? "uploaded" : "already uploaded";
      location.hash = `#/captures/${body.capture.id}`;
    } catch (e) {
      status.textContent = e.message; status.className = "error"; send.disabled = false;
    }
  });
}

// Of a capture's tags (up to 100 of up to 100 characters) the first few and how many more there are; with
// names, shown in cells of bounded width that wrap (class cell-text), so that the other columns stay on screen.
function shortTags(tags, shown = 5) {
  const head = tags.slice(0, shown).join(", ");
  return tags.length > shown ? `${head} +${tags.length - shown} more` : head;
}
