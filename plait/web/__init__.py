"""The web workbench: the built page `plait serve` serves at `/`.

The page is a static bundle (built from `web/` by Vite, committed under `static/` so that
installing Plait needs no Node.js). It talks to the server only through the public HTTP API,
and learns what it must know at run time from `GET /api/health` (version, whether a token is
needed), so nothing is written into the installed package when a server starts.
"""

from plait.web.serve import STATIC_DIR, mount

__all__ = ["STATIC_DIR", "mount"]
