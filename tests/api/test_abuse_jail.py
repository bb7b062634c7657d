"""Graph authors against a real `plait serve` process (SQLite and PostgreSQL): Python CODE and a
TOOL that try to kill the server, read its environment and plait.toml, and rewrite the store.
The server runs in a process of its own, as deployed, so that an attack that kills it shows:
each run ends, the server keeps answering, and nothing of the host comes back through the API.
The jail's own tests are in tests/sandbox/test_jail.py and tests/tools/test_tool_jail.py."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import free_port, wait_for

from plait.store import Store
from plait.testing import wait_until_healthy
from tests.jail_support import require_jail
from tests.plait_cli import start_plait

CANARY = "SECRET-IN-THE-SERVERS-ENVIRONMENT"
CONFIG = """# SECRET-IN-PLAIT-TOML
[tools]
allow = ["wc"]
[code]
python = true
[[providers]]
id = "main"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "PLAIT_TEST_KEY"
models = [{name = "m"}]
[roles]
chat = "main/m"
"""

PYTHON = """
plait: 1
id: {id}
nodes:
  - id: attack
    type: CODE
    language: python
    code: |
{code}
"""

TOOL = """
plait: 1
id: wc_attack
nodes:
  - {id: count, type: TOOL, command: [wc, -l, "{{ input.f }}"]}
"""

ATTACKS = {
    "kill_parent": (
        "import os, signal\ndef main(input, nodes):\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n    return {'alive': True}\n"
    ),
    "kill_server": (
        "import os, signal\ndef main(input, nodes):\n"
        "    os.kill(input['pid'], signal.SIGKILL)\n    return {'alive': True}\n"
    ),
    "environ": "def main(input, nodes):\n    return {'environ': open(f\"/proc/{input['pid']}/environ\").read()}\n",
    "store": (
        "import sqlite3, socket\n"
        "def main(input, nodes):\n"
        "    try:\n"
        "        db = sqlite3.connect(f\"file:{input['db']}?mode=rw\", uri=True)\n"
        "        db.execute(\"update prompt_graph_run set output_json = '{\\\"pwned\\\": true}'\")\n"
        "        db.execute(\"insert into plait_api_token (id, name, token_hash, created_at) \"\n"
        "                   \"values ('x', 'x', 'x', 0)\")\n"
        "        db.commit()\n"
        "    except Exception as exc:\n"
        "        sqlite = type(exc).__name__\n"
        "    else:\n"
        "        sqlite = 'rewrote'\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', 5432), timeout=3).close()\n"
        "        postgres = 'connected'\n"
        "    except OSError as exc:\n"
        "        postgres = type(exc).__name__\n"
        "    return {'sqlite': sqlite, 'postgres': postgres}\n"
    ),
}  # fmt: skip


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    config: Path
    db_url: str

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, timeout=30)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=30)

    def finished(self, run_id: str) -> dict[str, Any]:
        return dict(
            wait_for(
                lambda: (r := self.get(f"/api/runs/{run_id}").json())["status"] in ("completed", "failed") and r,
                timeout=60,
                what=f"run {run_id} to end",
            )
        )


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[Server]:
    require_jail()
    config = tmp_path / "plait.toml"
    config.write_text(CONFIG)
    log = tmp_path / "server.log"
    port = free_port()
    env = {**os.environ, "PLAIT_CANARY": CANARY, "PLAIT_TEST_KEY": "sk-test"}
    with log.open("wb") as out:
        process = start_plait(
            "serve",
            "--db",
            db_url,
            "--port",
            str(port),
            "--config",
            str(config),
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, alive=lambda: process.poll() is None, log=log)
        yield Server(url, process, log, config, db_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def store_graph(server: Server, source: str) -> None:
    response = server.post("/api/graphs", {"source": source})
    assert response.status_code == 201, response.text


def attack(server: Server, graph: str, run_input: dict[str, Any]) -> dict[str, Any]:
    response = server.post("/api/runs", {"graph": graph, "input": run_input})
    assert response.status_code == 202, response.text
    run = server.finished(response.json()["run_id"])
    assert server.process.poll() is None, f"the server died: {server.log.read_text()[-3000:]}"
    assert server.get("/api/health").status_code == 200
    return run


def test_python_and_tools_cannot_reach_the_server_its_files_or_its_store(server: Server, tmp_path: Path) -> None:
    pid = server.process.pid
    started = server.log.read_text()
    assert "TOOL programs and Python CODE: jailed in bubblewrap" in started, started
    for name, code in ATTACKS.items():
        store_graph(server, PYTHON.format(id=name, code="\n".join("      " + line for line in code.splitlines())))
    store_graph(server, TOOL)
    db = server.db_url.removeprefix("sqlite:///") if server.db_url.startswith("sqlite") else "/nowhere"

    first = attack(server, "kill_parent", {})
    assert first["status"] == "completed", first  # the jail's own first process shrugs it off
    assert attack(server, "kill_server", {"pid": pid})["error"]["message"].startswith("node 'attack' failed")
    environ = attack(server, "environ", {"pid": pid})
    assert CANARY not in json.dumps(environ)
    assert environ["status"] == "failed"

    tokens_before = _tokens(server.db_url)
    store = attack(server, "store", {"db": db})
    assert store["output"] == {"sqlite": "OperationalError", "postgres": "ConnectionRefusedError"}, store
    assert server.get(f"/api/runs/{first['id']}").json()["output"] == first["output"]
    assert _tokens(server.db_url) == tokens_before

    for value in (str(server.config), f"/proc/{pid}/environ", f"--files0-from={server.config}"):
        run = attack(server, "wc_attack", {"f": value})
        assert run["status"] == "failed"
        body = server.get(f"/api/runs/{run['id']}").text
        assert CANARY not in body
        assert "sk-test" not in body
        assert "SECRET-IN-PLAIT-TOML" not in body


def _tokens(db_url: str) -> int:
    store = Store(db_url)
    try:
        return len(store.tokens.list())
    finally:
        store.close()
