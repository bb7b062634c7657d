"""`plait config check`: the resolved provider configuration, without secrets (key names, not values;
URL credentials masked: see plait/redact.py); `plait config show`: the settings in force, plait.toml
with the changes made while the server runs over it, and where each value comes from."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from plait.cli.common import EXIT_INVALID, EXIT_OK, console, fail, print_json
from plait.cli.help import PlaitTyper
from plait.cli.options import ConfigOption, DbOption, JsonOption

app = PlaitTyper(help="Model provider configuration (plait.toml).", no_args_is_help=True)


@app.command("check")
def check(config: ConfigOption = None, json_output: JsonOption = False, db: DbOption = None) -> None:
    """Show providers, models and where each role goes, how programs are confined and how knowledge
    bases search in the store; exit 2 when a role cannot be served here."""
    from plait.config import ConfigError, load_config
    from plait.llm.check import ConfigReport, check_config, report_json
    from plait.runs.knowledge import backend
    from plait.sandbox.confinement import program_status
    from plait.store.url import database_url

    try:
        report: ConfigReport = check_config(load_config(config))
    except ConfigError as exc:
        fail(str(exc))
    programs = program_status(report.config.jail, report.config.tools, report.config.code)
    knowledge = backend(database_url(db))
    if json_output:
        ok = report.ok and programs.problem is None
        print_json({**report_json(report), "ok": ok, "programs": programs.json(), "knowledge": knowledge})
    else:
        _print_report(report)
        _print_programs(programs)
        _print_knowledge(knowledge)
    raise typer.Exit(EXIT_OK if report.ok and programs.problem is None else EXIT_INVALID)


StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        "--db",
        help="The store whose settings changes apply (sqlite:///… or postgresql://…); default $PLAIT_DB, else the "
        "store found from here",
    ),
]


@app.command("show")
def show(config: ConfigOption = None, store: StoreOption = None, json_output: JsonOption = False) -> None:
    """The settings in force: plait.toml with the changes made while the server runs (kept in the
    store) over it, and where each value comes from (plait.toml, settings rev N, default)."""
    from plait.cli.common import store_for
    from plait.runs.settings import effective
    from plait.runs.settings_view import settings_view, value_rows

    with store_for(store) as opened:
        found = effective(opened, config)
    if json_output:
        print_json({**settings_view(found), "values": value_rows(found)})
        return
    _print_settings(found, value_rows(found))


def _print_settings(found: Any, rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from plait.cli.common import print_table

    out = console()
    source = found.base.source or "built-in defaults (no plait.toml)"
    out.print(f"config: {escape(source)}; settings revision {found.revision}")
    if found.problem is not None:
        typer.echo(f"plait: {found.problem}", err=True)
    table = Table("key", "value", "from")
    for row in rows:
        value = row["value"]
        shown = ", ".join(str(v) for v in value) if isinstance(value, list) else ("" if value is None else str(value))
        table.add_row(escape(row["key"]), escape(shown), row["from"])
    print_table(table)


def _print_knowledge(knowledge: dict[str, Any]) -> None:
    """How knowledge bases search here, and whether their embedder can run."""
    out = console()
    out.print(f"knowledge bases: keyword search by {knowledge['keyword']}; dense search {knowledge['dense']}")
    if knowledge["embedder_missing"]:
        out.print(f"[red]embedder {knowledge['embedder']}: missing {', '.join(knowledge['embedder_missing'])}[/]")
    else:
        out.print(f"embedder {knowledge['embedder']}: installed")


def _print_programs(programs: Any) -> None:
    """How TOOL programs and Python CODE are confined here: a line nobody can miss when they are
    not (unconfined by choice, or refused for want of a jail)."""
    from rich.markup import escape

    if programs.problem is not None:
        typer.echo(f"plait: {programs.problem}", err=True)
    elif programs.unconfined:
        console().print(f"[bold red]programs: {escape(programs.line)}[/]")
    else:
        console().print(f"programs: {escape(programs.line)}")


def _print_report(report: Any) -> None:
    from rich.table import Table

    from plait.llm.check import mcp_server_json
    from plait.redact import redact_text, redact_url

    out = console()
    out.print(f"config: {report.config.source or 'built-in defaults (no plait.toml): the embedded model'}")
    providers = Table(title="providers")
    for column in ("id", "kind", "endpoint", "api key", "limits", "models", "status"):
        providers.add_column(column)
    for status in report.providers:
        p = status.provider
        limits = ", ".join(
            [f"{p.max_concurrency} at once", *([f"{p.rpm} rpm"] if p.rpm else []), *([f"{p.tpm} tpm"] if p.tpm else [])]
        )
        models = "\n".join(
            f"{m.name} (${m.price_in}/${m.price_out} per 1M"
            + (f", {m.context} ctx" if m.context else "")
            + (f", {'+'.join(m.capabilities)}" if m.capabilities else "")
            + ")"
            for m in p.models
        )
        state = "[green]usable[/]" if status.usable else "[red]" + "; ".join(status.problems) + "[/]"
        endpoint = redact_url(p.base_url) if p.base_url else (p.file or "")
        providers.add_row(p.id, p.kind, endpoint, status.key or "", limits, models, state)
    out.print(providers)
    roles = Table(title="roles")
    for column in ("role", "goes to", "failover order"):
        roles.add_column(column)
    for role in report.roles:
        order = ", ".join(t + ("" if not why else f" [red]({'; '.join(why)})[/]") for t, why in role.targets)
        roles.add_row(role.role, role.resolves_to or "[red]nowhere[/]", order)
    out.print(roles)
    if report.config.mcp_servers:
        servers = Table(title="MCP servers")
        for column in ("id", "transport", "command / url", "capabilities", "secrets"):
            servers.add_column(column)
        for m in report.config.mcp_servers:
            secrets = mcp_server_json(m)["secrets"]
            shown = ", ".join(s["name"] + ("" if s["set"] else " [red](not set)[/]") for s in secrets)
            where = redact_text(" ".join([m.command or "", *m.args]) if m.transport == "stdio" else (m.url or ""))
            servers.add_row(m.id, m.transport, where, ", ".join(m.capabilities), shown)
        out.print(servers)
    for problem in report.problems:
        typer.echo(f"plait: {problem}", err=True)
