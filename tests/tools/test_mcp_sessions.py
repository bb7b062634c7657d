"""MCP sessions against real servers: Plait's own (stdio and streamable HTTP on loopback) and two
reference servers nobody here wrote, installed from registries: `mcp-server-time` from PyPI (a
test dependency) over stdio, and `@modelcontextprotocol/server-everything` from npm over
streamable HTTP on loopback (SPEC §7)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait.config import McpServerConfig
from plait.testing import skip_or_fail
from plait.tools.mcp import McpFailure, McpSessions

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def own_server(**extra: Any) -> McpServerConfig:
    """Plait's test server over stdio."""
    return McpServerConfig(id="test", transport="stdio", command="python", args=(SERVER,), **extra)


def sessions(*servers: McpServerConfig, environ: dict[str, str] | None = None) -> McpSessions:
    return McpSessions({s.id: s for s in servers}, environ if environ is not None else {})


def test_tools_resources_and_prompts_over_stdio() -> None:
    async def go() -> None:
        mcp = sessions(own_server())
        try:
            names = [t.name for t in await mcp.list_tools("test")]
            assert {"lookup_city", "add", "crash", "hang", "whoami"} <= set(names)
            city = await mcp.call_tool("test", "lookup_city", {"name": "Oslo"})
            assert (city.value, city.is_error) == ({"city": "Oslo", "country": "Norway", "population": 717710}, False)
            total = await mcp.call_tool("test", "add", {"a": 2, "b": 40})
            assert total.value == {"result": 42}  # a tool with an output schema answers structured content
            refused = await mcp.call_tool("test", "refuse", {"reason": "no"})
            assert refused.is_error
            assert "refused: no" in str(refused.value)
            document = await mcp.read_resource("test", "doc://minutes")
            assert document == "Document minutes: the meeting moved to Thursday."
            prompt = await mcp.get_prompt("test", "summarize", {"topic": "tea"})
            assert prompt == [{"role": "user", "content": "Summarize tea for a busy reader."}]
        finally:
            await mcp.aclose()

    asyncio.run(go())


def test_one_process_per_server_per_run_closed_at_the_end() -> None:
    async def go() -> tuple[int, int]:
        mcp = sessions(own_server())
        try:
            first, second = await asyncio.gather(
                mcp.call_tool("test", "whoami", {}), mcp.call_tool("test", "whoami", {})
            )
            return first.value["pid"], second.value["pid"]
        finally:
            await mcp.aclose()

    pid, again = asyncio.run(go())
    assert pid == again  # two nodes asking at once share the one session
    assert not _alive(pid)


def test_secrets_reach_the_server_through_its_environment_only_when_set() -> None:
    config = own_server(env={"PLAIT_TEST_TOKEN": "%secrets.TEST_TOKEN%"})

    async def whoami(environ: dict[str, str]) -> Any:
        mcp = sessions(config, environ=environ)
        try:
            return (await mcp.call_tool("test", "whoami", {})).value
        finally:
            await mcp.aclose()

    assert asyncio.run(whoami({"TEST_TOKEN": "s3cret"}))["token"] == "s3cret"
    with pytest.raises(McpFailure, match="needs the environment variable TEST_TOKEN"):
        asyncio.run(whoami({}))


def test_a_crash_fails_the_call_at_once_with_the_servers_stderr_and_the_next_call_restarts_it() -> None:
    async def go() -> tuple[float, str, int, int]:
        mcp = sessions(own_server(timeout_s=20))
        try:
            before = (await mcp.call_tool("test", "whoami", {})).value["pid"]
            started = time.monotonic()
            with pytest.raises(McpFailure) as failure:
                await mcp.call_tool("test", "crash", {})
            took = time.monotonic() - started
            after = (await mcp.call_tool("test", "whoami", {})).value["pid"]
            return took, str(failure.value), before, after
        finally:
            await mcp.aclose()

    took, message, before, after = asyncio.run(go())
    assert took < 10  # not the 20 s timeout: the closed connection is noticed
    assert "MCP server 'test' failed during tools/call 'crash'" in message
    assert "boom: crashing on purpose" in message
    assert before != after


def test_a_hang_fails_the_call_after_the_servers_timeout() -> None:
    async def go() -> float:
        mcp = sessions(own_server(timeout_s=1.5))
        try:
            await mcp.list_tools("test")  # started (the start-up has its own timeout)
            started = time.monotonic()
            with pytest.raises(McpFailure, match=r"did not answer tools/call 'hang' within 1.5 s"):
                await mcp.call_tool("test", "hang", {})
            return time.monotonic() - started
        finally:
            await mcp.aclose()

    assert 1.4 < asyncio.run(go()) < 8


def test_a_server_that_cannot_start_or_is_not_configured_is_a_clear_failure() -> None:
    broken = McpServerConfig(id="broken", transport="stdio", command="python", args=("-c", "import sys; sys.exit(5)"))

    async def go(server_id: str) -> None:
        mcp = sessions(broken)
        try:
            await mcp.list_tools(server_id)
        finally:
            await mcp.aclose()

    with pytest.raises(McpFailure, match=r"could not connect to MCP server 'broken' \(command: python -c"):
        asyncio.run(go("broken"))
    with pytest.raises(McpFailure, match=r"no MCP server 'nope' in plait.toml \(configured: broken\)"):
        asyncio.run(go("nope"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """Plait's test server over streamable HTTP on a loopback port."""
    port = _free_port()
    with _serving([sys.executable, SERVER, "--http", str(port)], port) as url:
        yield url


EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


@pytest.fixture(scope="module")
def everything_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The MCP project's reference server `server-everything`, installed from npm and serving
    streamable HTTP (it listens on `$PORT`; we connect over loopback)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        skip_or_fail(
            "Node.js and npm are not installed here: the npm reference MCP server cannot run",
            in_ci=".ci/run installs nodejs and npm",
        )
    folder = tmp_path_factory.mktemp("server-everything")
    install = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), EVERYTHING]
    installed = subprocess.run(install, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, f"npm install {EVERYTHING} failed: {installed.stderr[-2000:]}"
    entry = folder / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    port = _free_port()
    with _serving([node, str(entry), "streamableHttp"], port, PORT=str(port)) as url:
        yield url


@contextlib.contextmanager
def _serving(command: list[str], port: int, **env: str) -> Iterator[str]:
    """Run an MCP server process until its streamable HTTP endpoint answers; stop it after."""
    process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the MCP server {command[-2:]} did not serve {url} within 30 s")
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_streamable_http_on_loopback(http_server: str) -> None:
    config = McpServerConfig(id="remote", transport="streamable_http", url=http_server)

    async def go() -> tuple[Any, str]:
        mcp = sessions(config)
        try:
            city = await mcp.call_tool("remote", "lookup_city", {"name": "Kyoto"})
            return city.value, await mcp.read_resource("remote", "notes://style")
        finally:
            await mcp.aclose()

    city, style = asyncio.run(go())
    assert city == {"city": "Kyoto", "country": "Japan", "population": 1463723}
    assert style == "Answer in one short sentence."


def test_the_reference_everything_server_from_npm_over_streamable_http(everything_server: str) -> None:
    config = McpServerConfig(id="everything", transport="streamable_http", url=everything_server)

    async def go() -> tuple[list[str], Any, Any]:
        mcp = sessions(config)
        try:
            names = [t.name for t in await mcp.list_tools("everything")]
            total = await mcp.call_tool("everything", "get-sum", {"a": 2, "b": 40})
            echo = await mcp.call_tool("everything", "echo", {"message": "plait"})
            return names, total.value, echo.value
        finally:
            await mcp.aclose()

    names, total, echo = asyncio.run(go())
    assert {"echo", "get-sum"} <= set(names)
    assert total == "The sum of 2 and 40 is 42."
    assert echo == "Echo: plait"


def test_the_reference_time_server_from_pypi_over_stdio() -> None:
    config = McpServerConfig(id="time", transport="stdio", command="python", args=("-m", "mcp_server_time"))

    async def go() -> tuple[list[str], Any]:
        mcp = sessions(config)
        try:
            names = [t.name for t in await mcp.list_tools("time")]
            now = await mcp.call_tool(
                "time",
                "convert_time",
                {
                    "source_timezone": "Europe/Oslo",
                    "time": "09:30",
                    "target_timezone": "Asia/Tokyo",
                },
            )
            return names, now.value
        finally:
            await mcp.aclose()

    names, converted = asyncio.run(go())
    assert {"get_current_time", "convert_time"} <= set(names)
    assert converted["source"]["timezone"] == "Europe/Oslo"
    assert converted["target"]["datetime"][11:16] == "17:30"  # Oslo is 8 hours behind Tokyo in winter…
    assert converted["time_difference"] in ("+8.0h", "+7.0h")  # …and 7 in summer (the date is today's)


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.05)
    return True
