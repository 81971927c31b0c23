"""How fast is the flow page on a long flow? Time to interactive of the dashboard's congestion graph for a
1 M-ACK flow, in Debian chromium (Playwright), against ``ackreplay serve`` (embedded).

Printed: the graph endpoint's time (first call, which reads the flow's tables, and cached), its payload,
the page's time to interactive (navigation to the graph drawn with its zoom handler bound:
``#congestion[data-ready="1"]``), the time from a brush zoom to the window redrawn at full resolution, and —
the reference, measured in the same browser and run — Plotly drawing the same flow's ACK line alone at full
resolution (what a page without per-pixel downsampling would have to draw, one trace of ten).
Usage: ``python -m bench.flowpage [--segments-m 2]`` (2 M data segments = 1 M ACKs, one flow).
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import time

import httpx
import polars as pl

from bench.scale import cached, capture
from bench.service import served

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def _run_done(base: str, run_id: str) -> None:
    while (status := httpx.get(f"{base}/runs/{run_id}").json()["status"]) not in ("succeeded", "failed"):
        time.sleep(0.5)
    if status != "succeeded":
        raise SystemExit(f"run {run_id} {status}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments-m", type=float, default=2.0, help="million data segments (2 ACK each per unit)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    path = cached(capture(args.segments_m, 1))
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    with served(1) as (base, _):
        t = time.perf_counter()
        with path.open("rb") as fh:
            body = httpx.post(f"{base}/captures", files={"file": (path.name, fh)}, timeout=600).json()
        cid, run_id = body["capture"]["id"], body["run_id"]
        _run_done(base, run_id)
        print(f"{path.name}: uploaded, ingested and replayed in {time.perf_counter() - t:.1f} s")
        flow = max(httpx.get(f"{base}/captures/{cid}/flows").json(), key=lambda f: f["bytes"])
        fid = flow["flow_id"]
        graph = f"{base}/runs/{run_id}/captures/{cid}/flows/{fid}/graph"
        t = time.perf_counter()
        first = httpx.get(graph, params={"px": 1276}, timeout=600)
        cold = time.perf_counter() - t
        warm = []
        for _ in range(5):
            t = time.perf_counter()
            httpx.get(graph, params={"px": 1276}, timeout=600)
            warm.append(time.perf_counter() - t)
        data = first.json()
        print(f"flow {fid}: {flow['acks']:,} ACK rows; graph endpoint {1e3 * cold:.0f} ms first (reads the tables), "
              f"{1e3 * statistics.median(warm):.0f} ms cached; {len(first.content) / 1e3:.0f} kB, "
              f"{data['points']:,} points drawn")
        acks = pl.read_parquet(io.BytesIO(httpx.get(f"{base}/captures/{cid}/flows/{fid}/acks", timeout=600).content),
                               columns=["t_rel", "ack"])
        server = base.removesuffix("/api/v1")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            tti, zoom, ref = [], [], []
            for _ in range(args.repeat):
                page = browser.new_page(viewport={"width": 1366, "height": 900})
                t = time.perf_counter()
                page.goto(f"{server}/dashboard/#/runs/{run_id}/captures/{cid}/flows/{fid}")
                page.wait_for_selector("#congestion[data-ready='1']", timeout=300_000)
                tti.append(time.perf_counter() - t)
                mid = acks.height // 2
                t0, t1 = float(acks["t_rel"][mid]), float(acks["t_rel"][mid + 2000])
                t = time.perf_counter()
                page.evaluate(f"Plotly.relayout('congestion', {{'xaxis.range': [{t0}, {t1}]}})")
                page.wait_for_selector("#congestion[data-full-resolution='true'][data-ready='1']", timeout=300_000)
                zoom.append(time.perf_counter() - t)
                page.close()
                # the reference: the ACK line alone at full resolution, drawn by the same Plotly
                page = browser.new_page(viewport={"width": 1366, "height": 900})
                page.goto(f"{server}/dashboard/#/compare")
                page.wait_for_selector("h1")
                xs, ys = acks["t_rel"].to_list(), acks["ack"].to_list()
                page.evaluate("([x, y]) => { window.__x = x; window.__y = y; }", [xs, ys])
                ref.append(page.evaluate("""async () => { const d = document.createElement('div');
                    d.style.width = '1276px'; d.style.height = '400px'; document.body.append(d);
                    const t = performance.now();
                    await Plotly.newPlot(d, [{x: window.__x, y: window.__y, mode: 'lines'}]);
                    return (performance.now() - t) / 1e3; }"""))
                page.close()
            browser.close()
    m_tti, m_ref = statistics.median(tti), statistics.median(ref)
    print(f"time to interactive (4 panels, every series): {1e3 * m_tti:.0f} ms (median of {args.repeat}; "
          f"{', '.join(f'{1e3 * x:.0f}' for x in tti)})")
    print(f"brush zoom to a 2000-ACK window, redrawn at full resolution: {1e3 * statistics.median(zoom):.0f} ms")
    print(f"reference — Plotly drawing the ACK line alone at full resolution ({acks.height:,} points): "
          f"{1e3 * m_ref:.0f} ms (draw only, data already in the page)")
    print(f"ratio: whole page {m_tti / m_ref:.2f}× the reference's single full-resolution trace")


if __name__ == "__main__":
    main()
