"""The comparison dashboards: a static single-page app served from the API (same origin, same auth).

Nothing is fetched from the network: plotly.js comes from the installed ``plotly`` package.
"""

from __future__ import annotations

from pathlib import Path

import plotly
from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from ackreplay.core.errors import NotFound

router = APIRouter(include_in_schema=False)
ASSETS = Path(__file__).resolve().parents[1] / "dashboard"
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/dashboard/")


@router.get("/dashboard/")
def index() -> FileResponse:
    return FileResponse(ASSETS / "index.html", media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/dashboard/vendor/plotly.min.js")
def plotly_js() -> FileResponse:
    return FileResponse(PLOTLY_JS, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})


@router.get("/dashboard/{path:path}")
def asset(path: str) -> FileResponse:
    try:
        target = (ASSETS / path).resolve()
        found = ASSETS in target.parents and target.is_file() and target.suffix in TYPES
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        found = False
    if not found:
        raise NotFound(f"no dashboard file {path}", code="not_found")
    return FileResponse(target, media_type=TYPES[target.suffix], headers={"Cache-Control": "no-cache"})
