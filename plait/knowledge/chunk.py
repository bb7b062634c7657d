"""Sections to chunks under a token bound, each with a content hash that survives re-ingestion.

A chunk never spans two sections: its heading path is what the embedder reads before its text,
and what a search result shows as its place. Within a section semchunk splits at the most
meaningful boundary that keeps each chunk under the bound (paragraphs, then lines, sentences,
words), and keeps small neighbouring paragraphs together. Tokens are counted with the embedder's
own WordPiece tokenizer when it is installed, so a chunk is never cut short when it is embedded.

The hash covers the heading path and the text, not the position: editing one paragraph changes the
hashes of the chunks that hold it, and re-ingesting the document re-embeds only those.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import cast

from plait.errors import PlaitError, Refusal
from plait.knowledge.parse import Section, missing
from plait.llm.embedding import MODEL_PACKAGE

DEFAULT_MAX_TOKENS = 200
"""The embedder reads at most 256 word pieces: the rest is room for the heading path before the text."""
MIN_MAX_TOKENS = 16
MAX_MAX_TOKENS = 512
HEADING_SEPARATOR = " > "
_LONG_TEXT_CHARS_PER_TOKEN = 6
_COUNTS_KEPT = 4096
_BLANKS = re.compile(r"[ \t]+")
_PRETOKENS = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Chunk:
    position: int
    heading_path: tuple[str, ...]
    text: str
    tokens: int
    content_hash: str


class ChunkSettingsError(PlaitError):
    kind = Refusal.INVALID
    code = "invalid_chunk_settings"


@cache
def token_counter() -> Callable[[str], int]:
    """The embedder's tokenizer, counting word pieces without [CLS] and [SEP]; when the model is
    not installed, the words and punctuation marks BERT's pre-tokenizer would see (a lower bound:
    a rare word is several word pieces)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folder = next(iter(spec.submodule_search_locations or ()), None) if spec else None
    path = Path(folder) / "model" / "tokenizer.json" if folder else None
    if path is None or not path.is_file() or importlib.util.find_spec("tokenizers") is None:
        return approximate_tokens
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()  # the packaged tokenizer cuts at 128 and pads to 128: a count needs neither
    tokenizer.no_padding()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count


def approximate_tokens(text: str) -> int:
    return len(_PRETOKENS.findall(text))


def content_hash(heading_path: Sequence[str], text: str) -> str:
    """sha256 of the heading path and the text with runs of spaces and tabs collapsed: the same
    chunk hashes the same on every machine, however its whitespace came out of the parser."""
    body = _BLANKS.sub(" ", text.strip())
    return hashlib.sha256(f"{HEADING_SEPARATOR.join(heading_path)}\n{body}".encode()).hexdigest()


def embedding_text(chunk: Chunk) -> str:
    """What is embedded: the heading path on its own line, then the text."""
    if not chunk.heading_path:
        return chunk.text
    return f"{HEADING_SEPARATOR.join(chunk.heading_path)}\n{chunk.text}"


def chunk_sections(
    sections: Sequence[Section], *, max_tokens: int = DEFAULT_MAX_TOKENS, counter: Callable[[str], int] | None = None
) -> list[Chunk]:
    """Chunks in document order, each at most `max_tokens` by `counter` (the embedder's tokenizer by
    default); a section without text gives none."""
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or not MIN_MAX_TOKENS <= max_tokens <= MAX_MAX_TOKENS
    ):
        raise ChunkSettingsError(
            f"max_tokens must be a whole number from {MIN_MAX_TOKENS} to {MAX_MAX_TOKENS}, not {max_tokens!r}",
            f"use the default, {DEFAULT_MAX_TOKENS}: the embedder reads at most 256 tokens, heading path included",
        )
    try:
        from semchunk.semchunk import chunk as split
    except ImportError as error:
        raise missing("Chunking a document") from error
    count = counter or token_counter()
    bounded = _bounded_counter(count, max_tokens)
    chunks: list[Chunk] = []
    for section in sections:
        if not section.text.strip():
            continue
        for piece in cast("list[str]", split(section.text, max_tokens, bounded, memoize=False)):
            text = piece.strip()
            if text:
                chunks.append(
                    Chunk(
                        position=len(chunks),
                        heading_path=section.heading_path,
                        text=text,
                        tokens=count(text),
                        content_hash=content_hash(section.heading_path, text),
                    )
                )
    return chunks


def _bounded_counter(count: Callable[[str], int], max_tokens: int) -> Callable[[str], int]:
    """`count`, remembered for one document (semchunk counts the same spans again and again), that
    calls a text over the bound when its beginning already is: a 50 MB section is never tokenized
    whole. Only "over" can be an estimate, so a chunk it accepts is counted exactly."""
    window = max_tokens * _LONG_TEXT_CHARS_PER_TOKEN

    @lru_cache(maxsize=_COUNTS_KEPT)
    def bounded(text: str) -> int:
        if len(text) > window and count(text[:window]) > max_tokens:
            return max_tokens + 1
        return count(text)

    return bounded
