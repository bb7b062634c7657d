"""`plait replay NODE_RUN_ID`: the recorded request sent again, the new answer next to the stored one."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any

import typer

from plait.cli.common import EXIT_FAILED, console, fail, print_json, resolve_node_run, store_for
from plait.cli.options import ConfigOption, DbOption, JsonOption, LlmOption


def replay_command(
    node_run_id: Annotated[
        str, typer.Argument(help="A node run id, or a unique prefix of one (`plait runs show RUN_ID` lists them).")
    ],
    model: Annotated[
        str | None, typer.Option("--model", help="Send it to this role (of plait.toml) or model instead.")
    ] = None,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    json_output: JsonOption = False,
) -> None:
    """Re-send a model call exactly as recorded, to the model its run used unless --llm or --config
    names another, and diff the new answer against the stored one. A RETRIEVE node run searches
    again at the knowledge base's generation it recorded, and now; no model is called."""
    from plait.cli.drive import provider_from_options
    from plait.engine import eventloop
    from plait.llm.pool import roles_of
    from plait.llm.types import ProviderError
    from plait.runs.replay import ReplayError, replay
    from plait.runs.replay_search import SearchReplayError, is_search, replay_search

    with store_for(db) as store:
        record = store.runs.node_run(resolve_node_run(store, node_run_id))
        if is_search(record):
            try:
                searched = replay_search(store, record)
            except SearchReplayError as exc:
                fail(str(exc), exc.hint)
            if json_output:
                print_json(searched.as_json())
            else:
                _print_search(searched)
            return
        own = store.runs.get(record.run_id).llm if llm is None and config is None else None
    provider = _own_model(own, record.run_id) if own is not None else provider_from_options(llm, config)
    if provider is None:
        from plait.llm.select import NO_PROVIDER_HINT

        fail(f"no model provider to replay with: {NO_PROVIDER_HINT}")
    roles = roles_of(provider)

    async def go() -> Any:
        try:
            return await replay(record, provider, model, roles)
        finally:
            await provider.aclose()

    try:
        result = eventloop.run(go())
    except ReplayError as exc:
        fail(str(exc))
    except ProviderError as exc:
        fail(f"the model call failed: {exc}", code=EXIT_FAILED)
    if json_output:
        print_json(asdict(result))
        return
    _print(result)


def _print(result: Any) -> None:
    from rich.columns import Columns
    from rich.markup import escape
    from rich.panel import Panel

    out = console()
    stored = escape(json.dumps(result.stored, indent=2, ensure_ascii=False))
    new = escape(json.dumps(result.new, indent=2, ensure_ascii=False))
    replayed = f"replayed on {result.provider}/{result.model}"
    out.print(Columns([Panel(stored, title="stored"), Panel(new, title=replayed)]))
    out.print(escape(result.diff) if result.diff else "[green]same answer[/]")
    for problem in result.violations:
        out.print(f"[red]the new answer breaks the recorded schema:[/] {escape(problem)}")
    out.print(f"{result.tokens_input}+{result.tokens_output} tokens, ${result.cost_usd:.6f}; nothing was stored")


def _print_search(result: Any) -> None:
    from rich.markup import escape

    out = console()
    out.print(
        f"searched '{escape(result.knowledge_base)}' for {escape(json.dumps(result.query, ensure_ascii=False))} "
        f"at generation {result.generation} (the base is at {result.current_generation} now)"
    )
    out.print(f"recorded hits: {result.stored}")
    out.print(f"replayed hits: {result.replayed}")
    out.print("[green]the same hits, in the same order[/]" if result.same else "[yellow]the hits differ:[/]")
    for reason in result.explanations:
        out.print(f"  {escape(reason)}")
    if result.current_generation != result.generation:
        changed = ", ".join(result.changed_since) or "none left"
        out.print(f"at generation {result.current_generation}: {result.now}")
        out.print(f"documents changed since: {escape(changed)}")
    out.print("nothing was stored")


def _own_model(selection: Any, run_id: str) -> Any:
    """The provider of the model selection the run recorded: a replay without --llm or --config
    asks the model the call was made to, not whatever this machine would pick by default."""
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import label, provider_for

    try:
        return provider_for(selection)
    except LlmConfigError as exc:
        fail(
            f"run {run_id} ran on {label(selection)}, which cannot be used here: {exc}",
            "pass --llm or --config to replay it on another model",
        )
