"""Comparing texts: normalised equality, word overlap, and meaning by sentence embeddings."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

Similarity = Callable[[str, str], float]
"""How alike two texts are in meaning, as a cosine (1.0: the same)."""

EMBEDDING_CACHE = 4096
"""Texts whose vectors one `embedding_similarity()` keeps: an array's items are compared each with
each, so every text is embedded once, not once per pair."""
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def normalised(text: str) -> str:
    """`text` as compared for a format or pattern: Unicode NFKC, case folded, runs of white space as
    one space, none at either end (so 'ＡＢＣ-１２ ' and 'abc-12' are the same)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def words(text: str) -> list[str]:
    return _WORD.findall(normalised(text))


def word_f1(expected: str, actual: str) -> float:
    """F1 of the two texts' words (counted with repetition): how much of each the other says."""
    want, got = Counter(words(expected)), Counter(words(actual))
    if not want and not got:
        return 1.0
    common = sum((want & got).values())
    return 2 * common / (sum(want.values()) + sum(got.values()))


def embedding_similarity(name: str | None = None) -> Similarity | None:
    """A meaning similarity on a knowledge-base sentence embedder (default: the knowledge bases'
    default), or None when that embedder cannot run here; its vectors are L2-normalised, so the
    cosine is their dot product."""
    from plait.knowledge import embed

    model_name = name or embed.DEFAULT_EMBEDDER
    if not embed.available(model_name):
        return None
    model = embed.embedder(model_name)
    vectors: OrderedDict[str, Any] = OrderedDict()
    lock = threading.Lock()

    def vector(text: str) -> Any:
        with lock:
            if text in vectors:
                vectors.move_to_end(text)
                return vectors[text]
        found = model.embed([text])[0]
        with lock:
            vectors[text] = found
            while len(vectors) > EMBEDDING_CACHE:
                vectors.popitem(last=False)
        return found

    def similarity(a: str, b: str) -> float:
        return float(vector(a) @ vector(b))

    return similarity
