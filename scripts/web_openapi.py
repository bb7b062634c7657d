"""Write the HTTP API's OpenAPI document to `web/openapi.json`, from which the workbench's
TypeScript types are generated (`npm run types`). Run it after changing a route or a schema:
`tests/web/test_bundle.py` fails while the committed document differs from the server's.

    .venv/bin/python scripts/web_openapi.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from plait.api.document import openapi_text

TARGET = Path(__file__).resolve().parent.parent / "web" / "openapi.json"

if __name__ == "__main__":
    TARGET.write_text(openapi_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {TARGET}\n")
