"""Which embedded model an installation has, how its GGUF is put together, and the turns it is
spoken in: a graph's system prompt must reach a model whose GGUF has no chat template."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest
from llm_helpers import needs_local

from plait.config import EMBEDDED_MODEL
from plait.llm import embedded, local
from plait.llm.embedded import CHATML, GEMMA, GEMMA_TURNS, SMOLLM2, EmbeddedModelError, assemble, gemma_turns, turns_of


def test_gemma_turns_open_the_first_user_turn_with_the_system_text() -> None:
    messages = [
        {"role": "system", "content": "Label feedback."},
        {"role": "user", "content": "It crashes."},
        {"role": "assistant", "content": '{"label": "bug"}'},
        {"role": "user", "content": "And now?"},
    ]
    assert gemma_turns(messages) == (
        "<start_of_turn>user\nLabel feedback.\n\nIt crashes.<end_of_turn>\n"
        '<start_of_turn>model\n{"label": "bug"}<end_of_turn>\n'
        "<start_of_turn>user\nAnd now?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert gemma_turns([{"role": "system", "content": "Say hi."}]) == (
        "<start_of_turn>user\nSay hi.<end_of_turn>\n<start_of_turn>model\n"
    )


def test_a_gguf_is_spoken_in_its_own_template_and_a_gemma_without_one_in_gemmas_turns() -> None:
    assert turns_of({"general.architecture": "gemma3"}) == (GEMMA_TURNS, True)
    assert turns_of({"general.architecture": "gemma3", "tokenizer.chat_template": "{{ x }}"}) == (CHATML, False)
    assert turns_of({"general.architecture": "llama"}) == (CHATML, False)  # llama.cpp's own fallback


def test_parts_are_assembled_whole_and_checked(tmp_path: Path) -> None:
    parts = []
    for index, data in enumerate([b"GGUF" + b"a" * 3000, b"b" * 5000, b"c"]):
        parts.append(tmp_path / f"part{index}")
        parts[-1].write_bytes(data)
    whole = b"".join(p.read_bytes() for p in parts)
    target = tmp_path / "models" / "m.gguf"
    assemble(parts, hashlib.sha256(whole).hexdigest(), target)
    assert target.read_bytes() == whole
    assert target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["m.gguf"]  # no temporary file left

    wrong = tmp_path / "models" / "wrong.gguf"
    with pytest.raises(EmbeddedModelError, match=r"do not add up to the published file.*reinstall"):
        assemble(parts, "0" * 64, wrong)
    assert [p.name for p in target.parent.iterdir()] == ["m.gguf"]  # neither the file nor a half of it


def test_a_cache_that_cannot_be_written_says_what_to_set(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(EmbeddedModelError, match="set XDG_CACHE_HOME"):
        assemble([], hashlib.sha256(b"").hexdigest(), blocked / "models" / "m.gguf")


def test_the_models_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert embedded.models_folder() == tmp_path / "plait" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert embedded.models_folder() == tmp_path / "home" / ".cache" / "plait" / "models"


def test_the_first_installed_model_is_the_embedded_one(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def only(*installed: str) -> Any:
        def find_spec(name: str, *args: Any) -> Any:
            if name in (GEMMA.package, SMOLLM2.package) and name not in installed:
                return None
            return real(name, *args)

        return find_spec

    assert GEMMA.name == EMBEDDED_MODEL
    monkeypatch.setattr(importlib.util, "find_spec", only(GEMMA.package, SMOLLM2.package))
    assert embedded.embedded_model() is GEMMA
    monkeypatch.setattr(importlib.util, "find_spec", only(SMOLLM2.package))
    assert embedded.embedded_model() is SMOLLM2
    assert local.model_name() == "smollm2-135m-instruct"
    monkeypatch.setattr(importlib.util, "find_spec", only())
    assert embedded.embedded_model() is None
    assert not local.available()
    with pytest.raises(local.LocalModelMissing, match=r"pip install 'plait\[local\]'"):
        local.model_path()


@needs_local
def test_the_shipped_chunks_add_up_to_the_published_gemma(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not GEMMA.installed():
        pytest.skip("only SmolLM2 is installed here")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = Path(GEMMA.locate())
    assert path.parent == tmp_path / "plait" / "models"
    assert path.stat().st_size > 200_000_000
    assert not [p for p in os.listdir(path.parent) if p.startswith(".")]
    assert GEMMA.locate() == str(path)  # found, not assembled again
