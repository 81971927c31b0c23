"""The API's documentation page (Swagger UI) at ``/docs`` and ``/api/v1/docs``, served from the installed
packages: Swagger UI's files come from ``fastapi-offline``, the page and its start-up script from
``api/apidocs``. Nothing is fetched from another host, so the page works offline and under the
same-origin Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from ackreplay.core.errors import NotFound

router = APIRouter(include_in_schema=False)
PAGE = Path(__file__).resolve().parents[1] / "apidocs"
VENDOR = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS = {
    "swagger-ui-bundle.js": (VENDOR, "text/javascript"),
    "swagger-ui.css": (VENDOR, "text/css"),
    "favicon.png": (VENDOR, "image/png"),
    "init.js": (PAGE, "text/javascript"),
}


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    return docs_asset("favicon.png")


@router.get("/docs")
def docs_redirect() -> RedirectResponse:
    return RedirectResponse("/api/v1/docs")


@router.get("/api/v1/docs")
def docs_page() -> FileResponse:
    return FileResponse(PAGE / "index.html", media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/api/v1/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise NotFound(f"no documentation file {name}", code="not_found")
    folder, media_type = ASSETS[name]
    return FileResponse(folder / name, media_type=media_type, headers={"Cache-Control": "max-age=86400"})
