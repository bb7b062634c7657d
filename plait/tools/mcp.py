"""Connections to MCP servers through the official `mcp` SDK (see docs/tools.md).

A run opens a server the first time one of its nodes needs it and keeps the session for
every later node of the run (`McpSessions`, closed by the engine when the run ends or
pauses). Each session is owned by a task of its own: the SDK's transports are anyio
context managers, which must be left in the task that entered them, while the calls come
from the tasks of the nodes.

Whatever a server does wrong, the node fails, never the engine: a server that cannot be
started, crashes or answers with a protocol error raises `McpFailure` at once (with the
end of what the server wrote on stderr); one that hangs raises it after the server's
`timeout_s`. A broken session is dropped, so a later node of the run starts the server
again. A tool that reports an error of its own (`isError`) is not a failure: the model is
told, as for inline tools, and may correct its call.

A tool result is taken as the server sent it: the SDK's own check of `structuredContent`
against the tool's `outputSchema` runs Python's backtracking `re` on the event loop (a pattern
such as `^(a+)+$` froze the process), so tools are called without it and the engine checks the
result with Plait's own validator, in a thread (`plait.engine.toolbox`). Content other than text
keeps what it says: an embedded resource's text, a resource link's URI, an image's bytes (for a
model that can see them; `McpImage`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from plait.config import McpServerConfig, MissingSecret

T = TypeVar("T")
STDERR_TAIL = 600
"""Characters of a failed server's stderr quoted in the error."""
CLOSE_GRACE_S = 15.0
"""How long closing a session may take before its task is cancelled (the SDK's own shutdown of a
stdio server is bounded: stdin closed, ~2 s to exit, then the process tree is killed)."""


class McpFailure(Exception):
    """An MCP server could not be used (start-up, crash, hang, protocol error): the node fails."""


MAX_IMAGE_BYTES = 5 << 20
"""An image larger than this (decoded) is described to the model, not sent."""
MAX_IMAGES = 4
"""Images of one tool result passed on to the model; the rest are described."""


@dataclass(frozen=True, slots=True)
class McpImage:
    """An image a tool returned: sent to a model that can see images, never stored (its
    description, `label`, is what the node's records keep)."""

    mime_type: str
    data: str
    """Base64, as the server sent it."""
    label: str
    """How the result's text refers to it, e.g. `[image 1: image/png, 2,048 bytes]`."""

    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


@dataclass(frozen=True, slots=True)
class McpToolResult:
    """What an MCP tool call returned; `is_error`: the server reported the call as failed."""

    value: Any
    """The structured result, else the JSON of the text result, else its content as text (each
    resource, link, image or audio part written as a line saying what it is)."""
    is_error: bool
    structured: Any = None
    """`structuredContent` as sent (None when the server sent none)."""
    images: tuple[McpImage, ...] = ()


class McpSessions:
    """The MCP sessions of one run, keyed by server id. Nodes asking for a server at the same time
    share one start of it; whatever goes wrong with a server raises `McpFailure`; a broken
    session is dropped, so the next call starts the server again. `aclose` closes them all."""

    def __init__(self, servers: Mapping[str, McpServerConfig], environ: Mapping[str, str] | None = None):
        self.servers = servers
        self.environ = environ if environ is not None else os.environ
        self._open: dict[str, _Session] = {}
        self._listings: dict[str, list[Any]] = {}
        self._lock = asyncio.Lock()

    def config(self, server_id: str) -> McpServerConfig:
        """The server's configuration; McpFailure when plait.toml has no such server."""
        try:
            return self.servers[server_id]
        except KeyError:
            known = ", ".join(sorted(self.servers)) or "none"
            raise McpFailure(
                f"there is no MCP server '{server_id}' in plait.toml (configured: {known}); "
                "add it under [[mcp_servers]]"
            ) from None

    async def list_tools(self, server_id: str) -> list[Any]:
        """The server's tools (`mcp.types.Tool`), listed once per run."""
        if server_id not in self._listings:
            listing = await self._use(server_id, "tools/list", lambda client: client.list_tools())
            tools = list(listing.tools)
            while listing.next_cursor:
                listing = await self._use(server_id, "tools/list", _next_page(listing.next_cursor))
                tools.extend(listing.tools)
            self._listings[server_id] = tools
        return self._listings[server_id]

    async def call_tool(self, server_id: str, name: str, arguments: dict[str, Any]) -> McpToolResult:
        """Call one tool of the server, within the server's `timeout_s`."""
        result = await self._use(
            server_id, f"tools/call '{name}'", lambda client: _call_unchecked(client, name, arguments)
        )
        value, images = _tool_value(result)
        return McpToolResult(value, bool(result.is_error), result.structured_content, images)

    async def read_resource(self, server_id: str, uri: str) -> str:
        """The resource's text (binary parts are described, not inlined)."""
        result = await self._use(server_id, f"resources/read '{uri}'", lambda client: client.read_resource(uri))
        return "\n".join(_resource_text(part) for part in result.contents)

    async def get_prompt(self, server_id: str, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
        """The prompt's messages as chat messages."""
        result = await self._use(server_id, f"prompts/get '{name}'", lambda client: client.get_prompt(name, arguments))
        return [{"role": m.role, "content": _prompt_text(server_id, name, m.content)} for m in result.messages]

    async def aclose(self) -> None:
        """Close every open session; errors while closing are ignored."""
        sessions, self._open = list(self._open.values()), {}
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    async def _use(self, server_id: str, what: str, call: Callable[[Any], Awaitable[T]]) -> T:
        config = self.config(server_id)
        session = await self._session(config)
        try:
            return await asyncio.wait_for(call(session.client), config.timeout_s)
        except TimeoutError:
            await self._drop(server_id, session)
            raise McpFailure(
                f"MCP server '{server_id}' did not answer {what} within {config.timeout_s:g} s "
                "(raise `timeout_s` in its [[mcp_servers]] entry if it is only slow)"
            ) from None
        except Exception as exc:
            message = f"MCP server '{server_id}' failed during {what}: {_describe(exc)}{session.stderr()}"
            await self._drop(server_id, session)
            raise McpFailure(message) from None

    async def _session(self, config: McpServerConfig) -> _Session:
        async with self._lock:  # one start per server, however many nodes ask at once
            session = self._open.get(config.id)
            if session is None:
                session = _Session(config, self.environ)
                await session.start()
                self._open[config.id] = session
            return session

    async def _drop(self, server_id: str, session: _Session) -> None:
        if self._open.get(server_id) is session:
            del self._open[server_id]
            self._listings.pop(server_id, None)
        await session.close()


class _Session:
    """One connected server, held open by its own task until `close`."""

    def __init__(self, config: McpServerConfig, environ: Mapping[str, str]):
        self.config = config
        self.environ = environ
        self.client: Any = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._errlog: IO[str] | None = None

    async def start(self) -> None:
        config = self.config
        try:
            transport = self._transport()
        except MissingSecret as exc:
            raise McpFailure(str(exc)) from None
        self._task = asyncio.create_task(self._hold(transport), name=f"mcp:{config.id}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), config.startup_timeout_s)
        except TimeoutError:
            limit = config.startup_timeout_s
            message = f"MCP server '{config.id}' did not finish starting within {limit:g} s{self.stderr()}"
            await self.close()
            raise McpFailure(message) from None
        except Exception as exc:
            where = self._where()
            message = f"could not connect to MCP server '{config.id}' ({where}): {_describe(exc)}{self.stderr()}"
            await self.close()
            raise McpFailure(message) from None

    async def _hold(self, transport: Any) -> None:
        from mcp import Client

        try:
            async with Client(transport, read_timeout_seconds=self.config.timeout_s) as client:
                self.client = client
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # reported to whoever waits for the start
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else McpFailure(str(exc)))
            if not isinstance(exc, Exception):
                raise

    def _transport(self) -> Any:
        config = self.config
        if config.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by close())
            command = sys.executable if config.command in ("python", "python3") else str(config.command)
            params = StdioServerParameters(
                command=command, args=list(config.args), env=config.resolved_env(self.environ) or None
            )
            return stdio_client(params, errlog=self._errlog)
        url = config.resolved_url(self.environ) or ""
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(url)
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(url)

    def _where(self) -> str:
        config = self.config
        if config.transport == "stdio":
            return f"command: {' '.join([str(config.command), *config.args])}"
        return f"{config.transport} {config.url}"

    def stderr(self) -> str:
        """The end of what a stdio server wrote on stderr, as a suffix for an error message."""
        if self._errlog is None:
            return ""
        with contextlib.suppress(ValueError, OSError):
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read().strip()
            if text:
                return f"; the server's stderr ends with: {text[-STDERR_TAIL:]}"
        return ""

    async def close(self) -> None:
        """Let the holding task leave the SDK's context: a stdio server gets its stdin closed, a grace
        period, then is killed (the SDK bounds each step). Cancelling that task instead would cut the
        shutdown short and can leave it stuck, so it is only the last resort."""
        self._closing.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), CLOSE_GRACE_S)
            except BaseException:
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=CLOSE_GRACE_S)  # never wait for ever
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None


def _next_page(cursor: str) -> Callable[[Any], Awaitable[Any]]:
    return lambda client: client.list_tools(cursor=cursor)


async def _call_unchecked(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    """`tools/call` through the session's public request API, which skips the SDK's check of the
    result against `outputSchema` (Python's `re`, on the event loop); the engine checks it instead."""
    from mcp import types

    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
    return await client.session.send_request(request, types.CallToolResult)


def _tool_value(result: Any) -> tuple[Any, tuple[McpImage, ...]]:
    """The result's value for the model and the node's records, and the images to show a model."""
    images: list[McpImage] = []
    lines = [_part_text(part, images) for part in result.content]
    if result.structured_content is not None:
        return result.structured_content, tuple(images)
    if len(lines) == 1 and getattr(result.content[0], "type", None) == "text":
        try:
            return json.loads(lines[0]), ()
        except ValueError:
            return lines[0], ()
    return "\n".join(lines), tuple(images)


def _part_text(part: Any, images: list[McpImage]) -> str:
    """One content part as text; an image that may be shown to a model is added to `images`."""
    kind = getattr(part, "type", "content")
    if kind == "text":
        return str(part.text)
    if kind == "resource":
        return _resource_text(part.resource, embedded=True)
    if kind == "resource_link":
        notes = [str(n) for n in (part.title or part.name, part.mime_type, part.description) if n]
        return f"[resource link {part.uri}" + (f" ({'; '.join(notes)})" if notes else "") + "]"
    mime = getattr(part, "mime_type", None) or "unknown type"
    data = str(getattr(part, "data", "") or "")
    size = len(data) * 3 // 4
    if kind == "image":
        label = f"[image {len(images) + 1}: {mime}, {size:,} bytes]"
        if len(images) < MAX_IMAGES and size <= MAX_IMAGE_BYTES:
            images.append(McpImage(mime, data, label))
            return label
        return f"[image: {mime}, {size:,} bytes, not shown (over {MAX_IMAGES} images or {MAX_IMAGE_BYTES:,} bytes)]"
    return f"[{kind}: {mime}, {size:,} bytes, not included]"


def _resource_text(part: Any, *, embedded: bool = False) -> str:
    """A resource's text (under a line naming it, for one embedded in a tool result); a binary one described."""
    text = getattr(part, "text", None)
    if text is not None:
        return f"[resource {part.uri}]\n{text}" if embedded else str(text)
    size = len(str(getattr(part, "blob", "") or "")) * 3 // 4
    return f"[binary resource {part.uri} ({part.mime_type or 'unknown type'}, {size:,} bytes) not inlined]"


def _prompt_text(server_id: str, name: str, content: Any) -> str:
    if getattr(content, "type", None) == "text":
        return str(content.text)
    resource = getattr(content, "resource", None)
    if resource is not None:
        return _resource_text(resource)
    raise McpFailure(
        f"MCP prompt '{name}' of server '{server_id}' returned {getattr(content, 'type', 'non-text')} "
        "content, which Plait cannot put in a chat message; use a prompt with text messages"
    )


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    message = str(exc)
    if type(exc).__name__ == "MCPError" and exc.args[1:]:
        message = str(exc.args[1])
    return message or type(exc).__name__
