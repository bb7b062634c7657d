"""Plait's own MCP test server (the `mcp` SDK's MCPServer): tools, resources and prompts, plus
tools that misbehave on purpose (crash, hang, error, wrong shape).

    python tests/tools/mcp_test_server.py              # stdio
    python tests/tools/mcp_test_server.py --http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("plait-test")

CITIES = {"oslo": ("Norway", 717_710), "lyon": ("France", 522_250), "kyoto": ("Japan", 1_463_723)}


@app.tool()
def lookup_city(name: str) -> dict[str, Any]:
    """Country and population of a city."""
    country, population = CITIES.get(name.lower(), ("unknown", 0))
    return {"city": name, "country": country, "population": population}


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers (a tool with an output schema: its result is structured)."""
    return a + b


@app.tool()
def misshapen_city(name: str) -> dict[str, Any]:
    """Answers in a shape no city schema accepts."""
    return {"town": name}


@app.tool()
def refuse(reason: str) -> str:
    """Always reports an error of its own (isError)."""
    raise ToolError(f"refused: {reason}")


@app.tool()
def crash() -> str:
    """Kills the server process mid-call."""
    print("boom: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@app.tool()
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "unreachable"


@app.tool()
def whoami() -> dict[str, Any]:
    """The server's pid (one process per session) and the token it was started with."""
    return {"pid": os.getpid(), "token": os.environ.get("PLAIT_TEST_TOKEN")}


@app.resource("doc://{name}")
def doc(name: str) -> str:
    return f"Document {name}: the meeting moved to Thursday."


@app.resource("notes://style")
def style() -> str:
    return "Answer in one short sentence."


@app.prompt()
def summarize(topic: str) -> str:
    """A user message asking for a summary of `topic`."""
    return f"Summarize {topic} for a busy reader."


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
