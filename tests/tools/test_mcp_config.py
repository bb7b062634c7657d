"""`[[mcp_servers]]` in plait.toml: the contract shape, its checks, secrets, `plait config check`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plait.config import ConfigError, MissingSecret, load_config
from tests.plait_cli import run_plait

SERVERS = """
[[mcp_servers]]
id = "time"
name = "Time"
transport = "stdio"
command = "python"
args = ["-m", "mcp_server_time"]
url = ""
env = { API_TOKEN = "%secrets.PLAIT_TEST_TIME_TOKEN%" }
capabilities = ["tools"]

[[mcp_servers]]
id = "docs"
transport = "streamable_http"
url = "http://127.0.0.1:8765/mcp?key=%secrets.PLAIT_TEST_DOCS_KEY%"
capabilities = ["tools", "resources", "prompts"]
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plait.toml"
    path.write_text(text)
    return str(path)


def test_the_contract_shape_parses_and_secrets_resolve_from_the_environment(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, SERVERS))
    time, docs = config.mcp_servers
    assert (time.id, time.transport, time.command, time.args) == ("time", "stdio", "python", ("-m", "mcp_server_time"))
    assert time.secrets() == ["PLAIT_TEST_TIME_TOKEN"]
    assert time.resolved_env({"PLAIT_TEST_TIME_TOKEN": "s3cret"}) == {"API_TOKEN": "s3cret"}
    assert docs.resolved_url({"PLAIT_TEST_DOCS_KEY": "k"}) == "http://127.0.0.1:8765/mcp?key=k"
    with pytest.raises(MissingSecret, match="PLAIT_TEST_TIME_TOKEN"):
        time.resolved_env({})


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ('id = "a"\ntransport = "stdio"\n', "stdio needs `command`"),
        ('id = "a"\ntransport = "sse"\n', "sse needs `url`"),
        ('id = "a"\ntransport = "stdio"\ncommand = "x"\nurl = "http://h"\n', "`url` is for sse"),
        ('id = "a"\ntransport = "carrier-pigeon"\ncommand = "x"\n', "transport"),
        ('id = "a"\ntransport = "stdio"\ncommand = "x"\nsecret = "inline"\n', "secret"),
    ],
)
def test_bad_servers_are_refused_with_their_path(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, "[[mcp_servers]]\n" + server))


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    twice = '[[mcp_servers]]\nid = "a"\ntransport = "stdio"\ncommand = "x"\n' * 2
    with pytest.raises(ConfigError, match="MCP server id 'a' is used twice"):
        load_config(write(tmp_path, twice))


def test_config_check_lists_servers_and_which_secrets_are_set_without_values(tmp_path: Path) -> None:
    path = write(tmp_path, SERVERS)
    env = {**os.environ, "PLAIT_TEST_TIME_TOKEN": "do-not-print-me"}
    env.pop("PLAIT_TEST_DOCS_KEY", None)
    command = ["config", "check", "--config", path]
    shown = run_plait(*command, "--json", env=env, timeout=60)
    servers = {s["id"]: s for s in json.loads(shown.stdout)["mcp_servers"]}
    assert servers["time"]["secrets"] == [{"name": "PLAIT_TEST_TIME_TOKEN", "set": True}]
    assert servers["docs"]["secrets"] == [{"name": "PLAIT_TEST_DOCS_KEY", "set": False}]
    human = run_plait(*command, env=env, timeout=60)
    assert "MCP servers" in human.stdout
    assert "not set" in human.stdout
    for output in (shown.stdout, shown.stderr, human.stdout, human.stderr):
        assert "do-not-print-me" not in output
