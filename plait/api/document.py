"""The API's OpenAPI document as a file: what the workbench's TypeScript types are generated
from (`web/openapi.json`, written by `scripts/web_openapi.py`).

Built from a server on a throwaway database with default settings (loopback, no token), so the
document depends only on the code: the same release writes the same bytes on every machine.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path


def openapi_text() -> str:
    """The document, as stable, indented JSON ending in a newline."""
    from plait.api.app import create_app
    from plait.api.settings import ServerSettings
    from plait.evolve.system import open_store

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.yaml"  # a provider that loads no model
        script.write_text("responses: []\n", encoding="utf-8")
        store = open_store(f"sqlite:///{Path(folder) / 'openapi.db'}")
        try:
            document = create_app(ServerSettings(llm=f"scripted:{script}"), store=store).openapi()
        finally:
            store.close()
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
