"""Serving the workbench's files: `/` is the page, `/assets/...` its scripts and styles.

The page routes on the URL's fragment (`/#/runs/ID`), so every deep link loads `/` and the
server needs no fallback route that could shadow an API path. Assets carry a content hash in
their names and may be cached for good; the page itself is never cached, so a new release is
picked up on the next load.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The built bundle: `index.html` and `assets/`."""

_MISSING = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Plait</title></head>
<body><h1>Plait</h1><p>The workbench's files are not in this installation
(<code>plait/web/static/index.html</code> is missing). Build them with
<code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code>, or install a release of Plait.
The HTTP API works without them: <a href="/docs">/docs</a>.</p></body></html>
"""


class _Assets(StaticFiles):
    """Hashed asset files, cached by browsers for a year (a new build has new names)."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return response


def mount(app: FastAPI, static_dir: Path = STATIC_DIR) -> None:
    """Serve the workbench from `static_dir` on `app`: `GET /` and `/assets/...`."""
    index = static_dir / "index.html"

    @app.get("/", include_in_schema=False, response_model=None)
    def page() -> Response:
        if not index.is_file():
            return HTMLResponse(_MISSING, status_code=503, headers={"Cache-Control": "no-store"})
        return FileResponse(index, media_type="text/html", headers={"Cache-Control": "no-cache"})

    if (static_dir / "assets").is_dir():
        app.mount("/assets", _Assets(directory=static_dir / "assets"), name="workbench-assets")
