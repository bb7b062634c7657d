"""Context assembly: long texts to the passages most relevant to a question that fit a budget,
shown in their original order with a marker wherever passages were left out.

A text is read as Markdown into sections under their headings and chunked as a knowledge base's
documents are (`chunk.py`, `PASSAGE_TOKENS` word pieces), so a passage never spans two sections
and shows its heading path. Every passage of every text is ranked by the cosine between its
sentence embedding and the question's (`embed.py`); ties, and scores equal to `SCORE_DIGITS`
places, go to the earlier passage, so the same texts and question give the same choice. The
best passages are taken while they fit what is left of the budget, a smaller one after a larger
one that did not; the markers and the blank lines between passages are counted with them. With
no question (a prompt that is nothing but the long value), passages are taken in order.

No store, no event loop: embedding takes ~30 ms a passage of 200 word pieces on two busy cores
(500 passages, 14 s; docs/knowledge.md), so callers run this on a thread. Passage vectors are
kept (`VECTORS`): other questions of the same text embed only the question.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from plait.caches import ByteBoundCache
from plait.knowledge.chunk import DEFAULT_MAX_TOKENS, chunk_sections, embedding_text
from plait.knowledge.embed import DEFAULT_EMBEDDER, embedder
from plait.knowledge.parse import parse_document

PASSAGE_TOKENS = DEFAULT_MAX_TOKENS
SCORE_DIGITS = 5
"""Scores are compared to this many decimal places: onnxruntime's sums may differ in their last
bits between thread counts, and that must not change which passage comes first."""
SEPARATOR = "\n\n"
BY_ORDER = "order"
"""What `Assembly.ranked_by` says when there was no question to rank by."""

VECTORS: ByteBoundCache[Any] = ByteBoundCache("passage vectors", 32 << 20, weigh=lambda vector, _: vector.nbytes)
"""Passage vectors by embedder and text: nodes asking different questions of one long upstream
output (or a run's retries) embed its passages once."""
Cost = tuple[int, int]
"""Characters and tokens (tokens 0 when the budget counts none)."""


def marker(omitted: int) -> str:
    """What stands where `omitted` consecutive passages were left out."""
    return f"…[{omitted} passage{'' if omitted == 1 else 's'} omitted]…"


@dataclass(frozen=True, slots=True)
class Passage:
    position: int
    shown: str
    """The heading path on its own line (when there is one), then the text."""
    chars: int
    """Characters of the text itself (what leaving it out leaves out)."""


@dataclass(frozen=True, slots=True)
class Assembled:
    """What one text becomes: `shown` instead of it."""

    shown: str
    passages: int
    kept: tuple[int, ...]
    omitted_chars: int
    counted: bool
    """False when no passage fit: `shown` is one marker, which goes in whatever the budget has left."""


@dataclass(frozen=True, slots=True)
class Assembly:
    values: list[Assembled]
    ranked_by: str
    """The embedder's name, or `BY_ORDER`."""
    passage_tokens: int = PASSAGE_TOKENS


def passages(text: str) -> list[Passage]:
    """`text` as passages: Markdown sections under their headings, chunked under `PASSAGE_TOKENS`."""
    sections = parse_document(text.encode("utf-8", "replace"), name="value.md", media_type="text/markdown").sections
    return [
        Passage(chunk.position, embedding_text(chunk), len(chunk.text))
        for chunk in chunk_sections(sections, max_tokens=PASSAGE_TOKENS)
    ]


def assemble(
    texts: Sequence[str], question: str, chars: int | None, tokens: int | None, count: Callable[[str], int]
) -> Assembly:
    """`texts` assembled together within `chars` characters and `tokens` tokens by `count` (None:
    no limit of that kind), their passages ranked by relevance to `question`."""
    split = [passages(text) for text in texts]
    ranked_by, order = _ranked(split, question)
    costs = _Costs(count, tokens is not None)
    layouts = [_Layout(costs, [costs.of(p.shown) for p in found]) for found in split]
    left = [chars, tokens]
    for value, position in order:
        change = layouts[value].change(position)
        if all(limit is None or spent <= limit for limit, spent in zip(left, change, strict=True)):
            layouts[value].add(position)
            left = [None if limit is None else limit - spent for limit, spent in zip(left, change, strict=True)]
    rank = {pair: index for index, pair in enumerate(order)}
    while True:  # the counts are each part's: a tokenizer may count the joined text differently
        shown = [layout.text(found) for layout, found in zip(layouts, split, strict=True)]
        over = _over(shown, layouts, chars, tokens, count)
        if not over:
            break
        worst = max((rank[(v, p)], v, p) for v, layout in enumerate(layouts) for p in layout.kept)
        layouts[worst[1]].kept.remove(worst[2])
    values = [
        Assembled(
            text,
            len(found),
            tuple(layout.kept),
            max(0, len(source) - sum(found[p].chars for p in layout.kept)),
            bool(layout.kept) or not found,
        )
        for text, layout, found, source in zip(shown, layouts, split, texts, strict=True)
    ]
    return Assembly(values, ranked_by)


def _ranked(split: list[list[Passage]], question: str) -> tuple[str, list[tuple[int, int]]]:
    """(value, position) of every passage, most relevant first."""
    every = [(value, p.position) for value, found in enumerate(split) for p in found]
    if not question.strip() or not every:
        return BY_ORDER, every
    import numpy as np

    model = embedder(DEFAULT_EMBEDDER)
    shown = [p.shown for found in split for p in found]
    known: list[Any] = [VECTORS.find((model.name, text)) for text in shown]
    missing = [i for i, vector in enumerate(known) if vector is None]
    made = model.embed([question, *(shown[i] for i in missing)])
    for i, vector in zip(missing, made[1:], strict=True):
        known[i] = vector.copy()  # a row of its own: the cache must not hold the whole matrix
        VECTORS.put((model.name, shown[i]), known[i])
    scores = np.stack(known) @ made[0]
    keyed = sorted(zip(every, (round(float(s), SCORE_DIGITS) for s in scores), strict=True), key=lambda x: -x[1])
    return model.name, [pair for pair, _ in keyed]  # sorted() is stable: ties stay in document order


def _over(
    shown: list[str], layouts: list[_Layout], chars: int | None, tokens: int | None, count: Callable[[str], int]
) -> bool:
    counted = [text for text, layout in zip(shown, layouts, strict=True) if layout.kept]
    if chars is not None and sum(map(len, counted)) > chars:
        return True
    return tokens is not None and sum(map(count, counted)) > tokens


class _Costs:
    """What a piece of shown text costs, and the markers and separator, each counted once."""

    def __init__(self, count: Callable[[str], int], tokens: bool):
        self._count, self._tokens = count, tokens
        self._markers: dict[int, Cost] = {}
        self.separator = self.of(SEPARATOR)

    def of(self, text: str) -> Cost:
        return len(text), self._count(text) if self._tokens else 0

    def marker(self, omitted: int) -> Cost:
        if omitted == 0:
            return 0, 0
        if omitted not in self._markers:
            self._markers[omitted] = _plus(self.of(marker(omitted)), self.separator)
        return self._markers[omitted]


@dataclass
class _Layout:
    """The passages of one text kept so far: each kept passage and each run of left-out ones is a
    part, the parts joined by `SEPARATOR`. Nothing kept costs nothing (the marker is not counted)."""

    costs: _Costs
    sizes: list[Cost]
    kept: list[int] = field(default_factory=list)

    def change(self, position: int) -> Cost:
        """What keeping `position` too adds to the cost (negative when its marker cost more)."""
        at = bisect_left(self.kept, position)
        first = self.kept[at - 1] + 1 if at else 0
        last = self.kept[at] - 1 if at < len(self.kept) else len(self.sizes) - 1
        after = _plus(
            self.costs.marker(position - first),
            self.costs.marker(last - position),
            _plus(self.sizes[position], self.costs.separator),
        )
        if not self.kept:  # the first part has no separator before it
            return _minus(after, self.costs.separator)
        return _minus(after, self.costs.marker(last - first + 1))

    def add(self, position: int) -> None:
        insort(self.kept, position)

    def text(self, found: list[Passage]) -> str:
        if not self.kept:
            return marker(len(found)) if found else ""
        parts: list[str] = []
        previous = -1
        for position in self.kept:
            if position > previous + 1:
                parts.append(marker(position - previous - 1))
            parts.append(found[position].shown)
            previous = position
        if previous < len(found) - 1:
            parts.append(marker(len(found) - 1 - previous))
        return SEPARATOR.join(parts)


def _plus(*costs: Cost) -> Cost:
    return sum(c for c, _ in costs), sum(t for _, t in costs)


def _minus(a: Cost, b: Cost) -> Cost:
    return a[0] - b[0], a[1] - b[1]
