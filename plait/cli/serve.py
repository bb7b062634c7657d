"""`plait serve` and `plait token create|list|revoke`: the HTTP service and its bearer tokens."""

from __future__ import annotations

import errno
import socket
import sys
from typing import Annotated

import typer

from plait.cli.common import DB_HINT, console, fail, print_json, store_for, when
from plait.cli.help import PlaitTyper
from plait.cli.options import ConfigOption, DbOption, JsonOption, LlmOption, QueueOption
from plait.redact import install_log_redaction

EXIT_STARTUP = 3
"""The server failed while starting (its lifespan, e.g. resuming runs), as uvicorn exits then."""

token_app = PlaitTyper(help="Bearer tokens for the HTTP API (stored hashed).", no_args_is_help=True)

RequireAuthOption = Annotated[bool, typer.Option("--require-auth", help="Ask for a bearer token on loopback too.")]
MaxBodyOption = Annotated[
    int, typer.Option("--max-body", help="Largest request body accepted, in bytes (larger: 413).")
]


def serve_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; beyond loopback a token is always required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on (1-65535).")] = 8765,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    require_auth: RequireAuthOption = False,
    max_body: MaxBodyOption = 10 * 1024 * 1024,
    cors_origin: Annotated[
        list[str],
        typer.Option("--cors-origin", help="A browser origin allowed to call the API and change state (repeatable)."),
    ] = [],  # noqa: B006
    allow_host: Annotated[
        list[str],
        typer.Option(
            "--allow-host",
            help="A Host name this server answers besides loopback names and IP addresses (repeatable; '*': any).",
        ),
    ] = [],  # noqa: B006
    header_timeout: Annotated[
        float, typer.Option("--header-timeout", min=0.1, help="Seconds a request's headers may take to arrive.")
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option("--body-timeout", min=0.1, help="Seconds a request's body may take after its headers.")
    ] = 60.0,
    no_resume: Annotated[
        bool, typer.Option("--no-resume", help="Do not continue the runs a stopped server left unfinished.")
    ] = False,
    no_schedules: Annotated[
        bool, typer.Option("--no-schedules", help="Do not fire cron schedules here (another scheduler does).")
    ] = False,
    queue: QueueOption = None,
) -> None:
    """Serve the REST API, SSE run events and OpenAPI docs (/docs); runs execute in this process."""
    import uvicorn

    from plait.api import ServerConfigError, ServerSettings, create_app
    from plait.api.connections import timed_protocol
    from plait.config import ConfigError, jail_settings
    from plait.engine import eventloop
    from plait.llm.select import LlmConfigError
    from plait.sandbox.confinement import programs_at_start
    from plait.store import StoreError, database_url, redact

    settings = ServerSettings(
        host=host,
        port=port,
        db=db,
        config=config,
        llm=llm,
        require_auth=require_auth,
        max_body_bytes=max_body,
        cors_origins=tuple(cors_origin),
        allowed_hosts=tuple(allow_host),
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        resume_on_start=not no_resume,
        schedules=not no_schedules,
        queue=queue,
    )
    listener = _listen(host, port)
    try:
        try:
            app = create_app(settings)
        except (ServerConfigError, LlmConfigError, ConfigError) as exc:
            fail(str(exc))
        except StoreError as exc:
            fail(str(exc), DB_HINT)
        install_log_redaction()
        auth = "token required" if settings.auth_required else "no token needed on loopback"
        store = redact(database_url(db))
        sys.stderr.write(f"plait: serving http://{host}:{port}/ ({auth}); API docs at /docs; store {store}\n")
        sys.stderr.write(f"plait: TOOL programs and Python CODE: {programs_at_start(jail_settings())}\n")
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level="info",
                timeout_graceful_shutdown=5,
                http=timed_protocol(settings.header_timeout_s, settings.body_timeout_s),  # slow clients let go
                loop=eventloop.loop_name(),  # as every plait command (uvicorn's names are the same)
            )
        )
        server.run(sockets=[listener])
    finally:
        listener.close()
    if not server.started:
        fail("the server stopped while starting (see the log above)", code=EXIT_STARTUP)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here rather than by uvicorn: the port it serves is the one
    asked for, and a port that is taken is an error saying so (before the store is opened)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(
                f"port {port} on {host} is already in use (another `plait serve`, or another program)",
                "stop that program, or pass another port with --port PORT",
            )
        if exc.errno == errno.EACCES:
            fail(f"not allowed to listen on port {port}", "ports below 1024 need privileges: pass --port 8765")
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", "check --host (an address of this machine)")


@token_app.command("create")
def create_token(
    name: Annotated[str, typer.Option("--name", help="What the token is for (unique).")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create a token and print it once (only its hash is stored: copy it now)."""
    with store_for(db) as store:
        info, token = store.tokens.create(name)
    if json_output:
        print_json({"id": info.id, "name": info.name, "created_at": info.created_at, "token": token})
        return
    sys.stdout.write(token + "\n")
    sys.stderr.write(f"created token '{info.name}'; it is shown only now. Send it as `Authorization: Bearer <token>`\n")


@token_app.command("list")
def list_tokens(db: DbOption = None, json_output: JsonOption = False) -> None:
    """The tokens (names and dates; the tokens themselves are not stored)."""
    with store_for(db) as store:
        tokens = store.tokens.list()
    if json_output:
        print_json(
            [{"id": t.id, "name": t.name, "created_at": t.created_at, "last_used_at": t.last_used_at} for t in tokens]
        )
        return
    from rich.table import Table

    table = Table(title="API tokens")
    for column in ("name", "id", "created", "last used"):
        table.add_column(column, no_wrap=True)
    for t in tokens:
        table.add_row(t.name, t.id, when(t.created_at), when(t.last_used_at))
    console().print(table)


@token_app.command("revoke")
def revoke_token(
    name_or_id: Annotated[str, typer.Argument(help="The token's name or id.")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Revoke a token: requests carrying it are refused from now on."""
    with store_for(db) as store:
        info = store.tokens.revoke(name_or_id)
    if json_output:
        print_json({"id": info.id, "name": info.name, "revoked": True})
    else:
        sys.stderr.write(f"revoked token '{info.name}'\n")
