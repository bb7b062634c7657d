"""Which model a run executes with, remembered on the run (`prompt_graph_run.llm_json`).

A run started with `--llm scripted:F` must be resumed, rerun and reviewed on F, not on whatever
the directory or the server would pick by default. So the selection is stored when the run is
created, and every later execution of the run rebuilds its provider from it; an explicit
`--llm` / `--config` replaces it, and the change is kept in the run's history.

What is stored names a provider, never a secret: `{"llm": "scripted:/abs/file.yaml"}`,
`{"llm": "local"}`, or `{"config": "/abs/plait.toml", "roles": {"chat": ["openai/gpt-4o"]}}`
(roles are provider/model names; keys stay in plait.toml and its environment variables).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plait.llm.provider import Provider
from plait.llm.select import LlmConfigError, provider_from_spec
from plait.store import Store

Selection = dict[str, Any] | None


def describe(spec: str | None, config: str | None) -> Selection:
    """The selection `provider_from_spec(spec, config)` stands for (call it once that succeeded)."""
    if spec is not None:
        kind, _, arg = spec.partition(":")
        if kind == "scripted":
            return {"llm": f"scripted:{Path(arg).resolve()}"}
        return {"llm": kind}  # `local`; any other kind is refused by provider_from_spec
    from plait.config import config_path, load_config

    path = config_path(config)
    if path is not None:
        roles = {role: list(targets) for role, targets in load_config(config).roles.items()}
        return {"config": str(Path(path).resolve()), "roles": roles}
    from plait.llm import local

    return {"llm": "local"} if local.available() else None


def provider_for(selection: Selection) -> Provider | None:
    """The provider a stored selection names (None: none was recorded, the default applies).
    Raises LlmConfigError when it can no longer be built (a file moved, a model uninstalled)."""
    if selection is None:
        return provider_from_spec(None, None)
    if "llm" in selection:
        return provider_from_spec(str(selection["llm"]), None)
    return provider_from_spec(None, str(selection["config"]))


def label(selection: Selection) -> str:
    """The selection in a few words, for `runs show` and `runs diff`."""
    if selection is None:
        return "not recorded"
    if "llm" in selection:
        return str(selection["llm"])
    return f"config {selection.get('config')}"


def chosen(spec: str | None, config: str | None) -> tuple[Provider | None, Selection]:
    """The provider for a new run and the selection to store with it."""
    provider = provider_from_spec(spec, config)
    return provider, describe(spec, config)


def for_run(store: Store, run_id: str, spec: str | None, config: str | None, *, by: str) -> Provider | None:
    """The provider to execute an existing run with: its own selection, unless `spec` or `config`
    is given; then that one, recorded on the run as a change of model (`by`: who changed it)."""
    record = store.runs.get(run_id)
    if spec is None and config is None and record.llm is not None:
        try:
            return provider_for(record.llm)
        except LlmConfigError as exc:
            raise LlmConfigError(
                f"run {run_id} executes on {label(record.llm)}, which cannot be used any more: {exc}; "
                "pass --llm or --config to continue it on another model (the change is recorded)"
            ) from None
    provider, selection = chosen(spec, config)
    store.run_admin.set_llm(run_id, selection, by=by)
    return provider
