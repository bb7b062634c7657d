"""The committed workbench is what its sources build: the bundle under `plait/web/static/` is
rebuilt from `web/` (`npm ci && npm run build`, Node from the machine) and compared file by
file, and `web/openapi.json`, which the page's types are generated from, is the server's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from plait.api.document import openapi_text
from plait.testing import skip_or_fail
from tests.web.conftest import ROOT

WEB = ROOT / "web"
STATIC = ROOT / "plait" / "web" / "static"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_openapi_document_of_the_page_is_the_servers() -> None:
    committed = (WEB / "openapi.json").read_text(encoding="utf-8")
    assert committed == openapi_text(), (
        "web/openapi.json differs from the API: run `.venv/bin/python scripts/web_openapi.py`, "
        "then `cd web && npm run build`, and commit both"
    )


def test_the_committed_bundle_is_what_the_sources_build(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        skip_or_fail("npm is missing: the bundle check needs Node.js (apt-get install -y nodejs npm)")
    copy = tmp_path / "web"
    shutil.copytree(WEB, copy, ignore=shutil.ignore_patterns("node_modules", "schema.d.ts"))
    env = {**os.environ, "npm_config_fund": "false", "npm_config_audit": "false"}
    for step in (["ci", "--no-audit", "--no-fund"], ["run", "build"]):
        done = subprocess.run([npm, *step], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"npm {' '.join(step)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    built, committed = _files(tmp_path / "plait" / "web" / "static"), _files(STATIC)
    assert sorted(built) == sorted(committed), "rebuild the bundle: cd web && npm ci && npm run build, and commit it"
    differing = [name for name in built if built[name] != committed[name]]
    assert differing == [], f"these files differ from what web/ builds (rebuild and commit): {differing}"
