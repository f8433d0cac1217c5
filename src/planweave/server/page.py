"""The web page at `/`: one HTML file, its script and its style, all from the package; no build
step, nothing from a CDN.  The page
holds no data: it asks for the token and reads everything through the API, so it is the one
thing served without the token."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import Response

__all__ = ["PAGE_FILES", "page_router"]

# path -> (file in page/, media type)
PAGE_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/page.css": ("page.css", "text/css; charset=utf-8"),
    "/favicon.ico": ("favicon.ico", "image/x-icon"),
}

# Only this origin's own script and style; no inline script, no frames, no forms elsewhere.
_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def page_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)
    folder = files(__package__ or "planweave.server").joinpath("page")
    for path, (name, media_type) in PAGE_FILES.items():
        body = folder.joinpath(*name.split("/")).read_bytes()
        router.add_api_route(path, _serving(body, media_type))
    return router


def _serving(body: bytes, media_type: str) -> Callable[[], Awaitable[Response]]:
    async def serve_file() -> Response:
        return Response(body, media_type=media_type, headers=_HEADERS)

    return serve_file
