// Same-origin calls to /api/v1, with the API token (if one is set) as a bearer token.
const BASE = "/api/v1";

export function token() { return localStorage.getItem("ackreplay-token") || ""; }
export function setToken(value) { value ? localStorage.setItem("ackreplay-token", value) : localStorage.removeItem("ackreplay-token"); }

function headers() { const t = token(); return t ? { Authorization: `Bearer ${t}` } : {}; }

export async function get(path, params = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  const r = await fetch(url, { headers: headers() });
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error(body.detail ? `${body.error}: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}` : r.statusText);
  return body;
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
      const body = JSON.parse(xhr.responseText || "{}");
      xhr.status < 300 ? resolve(body) : reject(new Error(`${body.error}: ${body.detail}`));
    };
    xhr.onerror = () => reject(new Error("network error"));
    xhr.send(form);
  });
}
