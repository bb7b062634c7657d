"""`plait run GRAPH --dry-run`: what each node would send, with estimates, and what a run would
fail on before calling a model (exit 2); nothing is stored."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from plait.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    STORED_GRAPH_HINT,
    console,
    fail,
    print_json,
    read_file_option,
    refuse,
    store_for,
)


def dry_run_command(
    ref: str,
    run_input: dict[str, Any],
    provider: Any,
    db: str | None,
    json_output: bool,
    upstream: Path | None,
    config: str | None = None,
    version: int | None = None,
) -> None:
    """`plait run GRAPH --dry-run`: print what each node would send, with its estimates, and store
    nothing. Exits 2 (EXIT_INVALID, as for a run refused before it starts) when the input does not
    match `input_schema` or something would keep the run from running (a problem the dry run
    found, such as a node's pre-check that fails: the run would fail the node with
    `precheck_failed`; an MCP server not configured); else 0."""
    from plait.engine.run_input import input_violations
    from plait.runs.dry_run import dry_run_on

    graph = _graph(ref, db, version)
    missing = _unconfigured_mcp(graph, config)
    problems = input_violations(graph.input_schema, run_input, graph.schemas)
    if problems:
        for line in problems:
            sys.stderr.write(f"  input {line}\n")
        fail("the run input does not match the graph's input_schema", "pass the fields with -i key=v or --input-file")
    from plait.engine import eventloop

    async def go() -> Any:
        try:
            return await dry_run_on(graph, run_input, provider, _upstream(upstream))
        finally:
            if provider is not None:
                await provider.aclose()

    result = eventloop.run(go())
    if json_output:
        print_json(result.as_json())
    else:
        _print(result)
    for problem in [*result.problems, *missing]:
        sys.stderr.write(f"plait: {problem}\n")
    raise typer.Exit(EXIT_INVALID if result.problems or missing else EXIT_OK)


def _unconfigured_mcp(graph: Any, config: str | None) -> list[str]:
    """The MCP servers the graph's nodes name that the configuration does not register (read
    from the config file only: no server is started or connected to)."""
    from plait.config import ConfigError, configured_servers
    from plait.model.nodes import node_field

    try:
        known = {server.id for server in configured_servers(config)}
    except ConfigError as exc:
        fail(str(exc))
    problems = []
    for node in graph.nodes:
        prompt = node_field(node, "mcp_prompt", None)
        refs = [*node_field(node, "mcp_servers", ()), *node_field(node, "mcp_resources", ())]
        refs += [prompt] if prompt is not None else []
        for server_id in dict.fromkeys(ref.server_id for ref in refs if ref.server_id not in known):
            problems.append(
                f"node '{node.id}' uses the MCP server '{server_id}', which is not configured "
                f"(configured: {', '.join(sorted(known)) or 'none'}): pass the config file that registers it with "
                f"--config FILE (the examples' is --config examples/mcp.toml), or add it under [[mcp_servers]] "
                "in plait.toml (docs/tools.md)"
            )
    return problems


def _upstream(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    data = read_file_option(path, "--upstream", "upstream")
    if not isinstance(data, dict):
        fail(f"--upstream {path} must map node ids to their outputs, e.g. {{classify: {{label: bug}}}}")
    return data


def _graph(ref: str, db: str | None, version: int | None = None) -> Any:
    """The graph as a run would execute it (SKILLs expanded; a stored one at `version`, else the
    version it runs by default), without storing anything."""
    from plait.runs.start import looks_like_file

    if Path(ref).is_file():
        from plait.compile import compile_file

        if version is not None:
            fail(f"{ref} is a graph file: --version names a version of a stored graph",
                 "dry-run the stored graph by its id or slug with --version, or the file without it")  # fmt: skip

        from plait.evolve.skill_lookup import skill_source_at

        compiled = compile_file(ref, skills=skill_source_at(db))
        if not compiled.valid or compiled.expanded is None:
            for diagnostic in compiled.errors:
                sys.stderr.write(diagnostic.format() + "\n")
            fail(f"{ref} is not a valid graph ({len(compiled.errors)} errors)", f"run `plait validate {ref}`")
        return compiled.expanded
    from plait.engine.run_input import StartError, stored_graph

    if looks_like_file(ref):
        fail(f"no such graph file: {ref}", "check the path")
    with store_for(db, STORED_GRAPH_HINT) as store:
        try:
            return stored_graph(store, ref, version=version, missing="no graph file or stored graph named",
                                hint=STORED_GRAPH_HINT).graph  # fmt: skip
        except StartError as exc:
            refuse(exc)


def _print(result: Any) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    out = console()
    for node in result.nodes:
        if node.messages is None:
            out.print(f"[dim]{node.node_id} ({node.type}): placeholder output {escape(json.dumps(node.output))}[/]")
            continue
        body = "\n".join(f"[bold]{m['role']}:[/] {escape(str(m['content']))}" for m in node.messages)
        if node.response_format:
            body += f"\n[bold]response_format:[/] {escape(json.dumps(node.response_format, ensure_ascii=False))}"
        estimate = f"~{node.tokens_in} tokens in, ≤{node.tokens_out} out, ~${node.cost_usd:.6f}"
        out.print(Panel(body, title=f"{node.node_id} (LLM_CALL)", subtitle=estimate, expand=False))
    budget = f" (max_cost_usd {result.max_cost_usd})" if result.max_cost_usd is not None else ""
    out.print(f"estimated cost, every node once: ~${result.cost_usd:.6f}{budget}; no model was called")
