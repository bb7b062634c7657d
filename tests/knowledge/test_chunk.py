"""Chunking sections under a token bound: the bound holds for any text, nothing is lost or
reordered, chunks keep their section's heading path, and hashes change only where the text did."""

from __future__ import annotations

import hashlib
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.errors import Refusal
from plait.knowledge.chunk import (
    DEFAULT_MAX_TOKENS,
    Chunk,
    ChunkSettingsError,
    approximate_tokens,
    chunk_sections,
    content_hash,
    embedding_text,
    token_counter,
)
from plait.knowledge.parse import KnowledgeNotInstalled, Section, parse_document


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


WORDS = st.sampled_from(
    ["the", "cat", "sat", "on", "mat", "unbelievably", "tokenization", "Plait", "42", "3.14", "naïve", "日本語",
     "x" * 150, "co-operate", "e.g.", "(aside)", "end.", "question?", "https://example.invalid/a/b?c=d"]
)  # fmt: skip
SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", "\t", ". ", ", "])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=400).map(lambda pairs: "".join(w + s for w, s in pairs))


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, max_tokens=st.integers(min_value=16, max_value=80))
def test_every_chunk_is_within_the_bound_and_together_they_hold_the_input_in_order(text: str, max_tokens: int) -> None:
    count = token_counter()
    chunks = chunk_sections([Section(("Doc",), text)], max_tokens=max_tokens)
    for chunk in chunks:
        assert chunk.tokens == count(chunk.text) <= max_tokens
        assert chunk.text == chunk.text.strip() != ""
    assert squeezed("".join(chunk.text for chunk in chunks)) == squeezed(text)
    assert [c.position for c in chunks] == list(range(len(chunks)))


def test_the_bound_holds_with_the_approximate_counter_too() -> None:
    text = "\n\n".join(f"Paragraph {n} says something short. " * (n % 7 + 1) for n in range(200))
    chunks = chunk_sections([Section((), text)], max_tokens=30, counter=approximate_tokens)
    assert all(chunk.tokens == approximate_tokens(chunk.text) <= 30 for chunk in chunks)
    assert squeezed("".join(chunk.text for chunk in chunks)) == squeezed(text)


def test_the_embedders_tokenizer_counts_word_pieces_without_special_tokens() -> None:
    count = token_counter()
    assert token_counter() is count
    if count is approximate_tokens:
        pytest.skip("the sentence-embedding model is not installed: the approximation is in use")
    assert count("hello world") == 2
    assert count("unbelievably") > 1  # word pieces, not words
    assert count("word " * 1000) == 1000  # no truncation at the packaged tokenizer's 128


def test_the_approximation_counts_words_and_punctuation() -> None:
    assert approximate_tokens("Hello, world! It's 3.14") == 10  # Hello , world ! It ' s 3 . 14


def test_chunks_keep_their_sections_heading_path_and_never_span_two_sections() -> None:
    sections = [
        Section(("Install",), "Short one."),
        Section(("Install", "On Debian"), "Short two."),
        Section((), "Short three."),
    ]
    chunks = chunk_sections(sections)
    assert [(c.position, c.heading_path, c.text) for c in chunks] == [
        (0, ("Install",), "Short one."),
        (1, ("Install", "On Debian"), "Short two."),
        (2, (), "Short three."),
    ]


def test_small_paragraphs_of_a_section_stay_together_and_a_long_one_is_split() -> None:
    long = " ".join(f"Sentence number {n} is here." for n in range(80))
    chunks = chunk_sections([Section(("A",), f"One.\n\nTwo.\n\n{long}")], max_tokens=64)
    assert chunks[0].text == "One.\n\nTwo."
    assert len(chunks) > 3
    assert all(chunk.tokens <= 64 for chunk in chunks)
    assert chunks[1].text.startswith("Sentence number 0 is here.")


def test_chunking_without_semchunk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("semchunk", "semchunk.semchunk"):  # what the import meets when it is not installed
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(KnowledgeNotInstalled, match="needs the knowledge extra") as refused:
        chunk_sections([Section((), "text")])
    assert refused.value.hint == "pip install 'plait[knowledge]'"


def test_sections_without_text_give_no_chunk() -> None:
    assert chunk_sections([Section(("Empty",), ""), Section(("Blank",), "  \n\n ")]) == []


@pytest.mark.parametrize("bad", [15, 513, 0, -1, True, 100.0])
def test_max_tokens_out_of_range_is_refused(bad: object) -> None:
    with pytest.raises(ChunkSettingsError, match="max_tokens must be a whole number from 16 to 512") as refused:
        chunk_sections([Section((), "text")], max_tokens=bad)  # type: ignore[arg-type]
    assert refused.value.kind is Refusal.INVALID
    assert refused.value.hint


def test_content_hash_is_the_documented_digest() -> None:
    expected = hashlib.sha256(b"Install > On Debian\napt install plait").hexdigest()
    assert content_hash(("Install", "On Debian"), "  apt \t install   plait \n") == expected
    assert content_hash((), "x") == hashlib.sha256(b"\nx").hexdigest()
    # pinned: a change of the formula re-embeds every stored chunk
    assert content_hash(("A",), "b") == "ab9b7a24409e006c096ee24a61d4b572ab40bd83b4e5cba9250f0f88c1f588c3"


def test_embedding_text_puts_the_heading_path_first() -> None:
    with_path = Chunk(0, ("Install", "On Debian"), "apt install plait", 3, "h")
    assert embedding_text(with_path) == "Install > On Debian\napt install plait"
    assert embedding_text(Chunk(0, (), "no heading", 2, "h")) == "no heading"


def long_markdown(edited: bool = False) -> bytes:
    parts = []
    for n in range(60):
        paragraphs = [
            " ".join(f"Section {n} paragraph {p} sentence {s} tells of rivers and hills." for s in range(8))
            for p in range(4)
        ]
        if edited and n == 30:
            paragraphs[1] = paragraphs[1].replace("sentence 2 tells of rivers", "sentence 2 speaks of oceans")
        parts.append(f"## Part {n}\n\n" + "\n\n".join(paragraphs))
    return ("# Atlas\n\n" + "\n\n".join(parts)).encode()


def test_editing_one_sentence_changes_only_the_chunks_that_hold_it() -> None:
    before = chunk_sections(parse_document(long_markdown(), name="atlas.md").sections)
    after = chunk_sections(parse_document(long_markdown(edited=True), name="atlas.md").sections)
    assert len(before) > 100  # several chunks a section: the test is about locality, not one chunk a section
    old, new = [c.content_hash for c in before], [c.content_hash for c in after]
    changed = [c for c in after if c.content_hash not in set(old)]
    assert 1 <= len(changed) <= 2
    assert all(c.heading_path == ("Atlas", "Part 30") for c in changed)
    assert len(set(old) - set(new)) == len(changed)


def test_chunking_is_deterministic() -> None:
    sections = parse_document(long_markdown(), name="atlas.md").sections
    first, second = chunk_sections(sections), chunk_sections(sections)
    assert first == second
    assert len({c.content_hash for c in first}) == len(first)


def test_a_very_long_section_is_chunked_under_the_default_bound() -> None:
    text = "\n\n".join(f"Line {n}: " + "lorem ipsum dolor sit amet " * 30 for n in range(400))
    chunks = chunk_sections([Section(("Big",), text)])
    assert all(chunk.tokens <= DEFAULT_MAX_TOKENS for chunk in chunks)
    assert squeezed("".join(chunk.text for chunk in chunks)) == squeezed(text)
