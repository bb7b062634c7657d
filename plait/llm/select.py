"""Turn `--llm SPEC` into a provider (SPEC §14): `scripted:FILE`, `local`, or a configured default."""

from __future__ import annotations

from pathlib import Path

from plait.llm.provider import Provider


class LlmConfigError(ValueError):
    """No usable provider; the message says how to configure one."""


def provider_from_spec(spec: str | None) -> Provider | None:
    """The provider SPEC names; None when SPEC is None (a graph without LLM nodes needs none)."""
    if spec is None:
        return None
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
        raise LlmConfigError(
            "the embedded local model is not available in this release yet; "
            "use --llm scripted:FILE (see examples/scripted/)"
        )
    raise LlmConfigError(f"unknown --llm '{spec}': use scripted:FILE or local")


NO_PROVIDER_HINT = "pass --llm scripted:FILE (deterministic responses; see examples/scripted/)"
