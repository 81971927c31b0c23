// Same-origin calls to /api/v1, with the API token (if one is set) as a bearer token.
const BASE = "/api/v1";

// The token lives in sessionStorage: it survives reloads of the tab but not the browser session, and is not
// shared with other tabs or left on disk.
export function token() { return sessionStorage.getItem("ackreplay-token") || ""; }
export function setToken(value) { value ? sessionStorage.setItem("ackreplay-token", value) : sessionStorage.removeItem("ackreplay-token"); }

function headers() { const t = token(); return t ? { Authorization: `Bearer ${t}` } : {}; }

export async function get(path, params = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  const r = await fetch(url, { headers: headers() });
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(body.detail ? `${body.error}: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}` : r.statusText);
  return body;
}

// POST a JSON body; the answer's JSON (an error answer throws with its code and detail, as `get` does).
export async function post(path, body) {
  const r = await fetch(BASE + path, { method: "POST", headers: { ...headers(), "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const answer = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(answer.detail ? `${answer.error}: ${typeof answer.detail === "string" ? answer.detail : JSON.stringify(answer.detail)}` : r.statusText);
  return answer;
}

// Every item of a paginated endpoint ({items, next}), following its `next` links page by page.
export async function getAll(path, params = {}) {
  let page = await get(path, params);
  const items = [...page.items];
  while (page.next) {
    const url = new URL(page.next, location.origin);
    page = await get(url.pathname.slice(BASE.length), Object.fromEntries(url.searchParams));
    items.push(...page.items);
  }
  return items;
}

export async function blob(path, params = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const r = await fetch(url, { headers: headers() });
  if (!r.ok) throw new Error(r.statusText);
  return r.blob();
}

// Upload with progress: XMLHttpRequest reports upload progress, fetch does not.
export function upload(form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", BASE + "/captures");
    for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText || "{}"); } catch { body = { error: "http_" + xhr.status, detail: xhr.statusText }; }
      xhr.status < 300 ? resolve(body) : reject(new Error(`${body.error}: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}`));
    };
    xhr.onerror = () => reject(new Error("network error"));
    xhr.send(form);
  });
}
