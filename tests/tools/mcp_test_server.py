"""Plait's own MCP test server (the `mcp` SDK's MCPServer): tools, resources and prompts, plus
tools that misbehave on purpose (crash, hang, error, wrong shape, a catastrophic outputSchema),
and one whose result is more than text (an embedded resource, a resource link, an image).

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
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

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


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
"""A 1x1 PNG, base64."""
CATASTROPHIC = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["v"]}


@app.tool()
def catastrophic(n: int) -> CallToolResult:
    """Structured content that Python's `re` needs 2^n steps to check against the declared outputSchema."""
    return CallToolResult(
        content=[TextContent(type="text", text="see structured")], structured_content={"v": "a" * n + "!"}
    )


@app.tool()
def patterned(v: str) -> CallToolResult:
    """Echoes `v` as structured content checked against the same outputSchema."""
    return CallToolResult(content=[TextContent(type="text", text=v)], structured_content={"v": v})


for _name in ("catastrophic", "patterned"):
    # published as is and never validated by this server (no output model): the client must check it
    _tool = app._tool_manager.get_tool(_name)
    assert _tool is not None
    _tool.fn_metadata.output_schema = CATASTROPHIC


@app.tool()
def rich_content() -> CallToolResult:
    """A result of every kind of content: text, an embedded text resource, a resource link, an image."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="Here is what I found."),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="doc://minutes", mime_type="text/plain", text="The meeting moved to Thursday."
                ),
            ),
            ResourceLink(type="resource_link", uri="doc://agenda", name="agenda", mime_type="text/plain"),
            ImageContent(type="image", data=PIXEL, mime_type="image/png"),
        ]
    )


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
