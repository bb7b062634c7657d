"""A chat's memory as a person and the chat use it: facts remembered with where they came from,
recalled by what a question asks (words and meaning, fused by rank, then one hop through the
people, places and things they share), corrected and retracted without losing their history.

A correction stores a new fact that supersedes the old one; so does a new value said for a
single-valued fact (the same subject and predicate: "I moved to Lyon" after "I live in Paris");
a retraction marks one retracted. Either way the old fact is never recalled again, and `history`
still shows it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from plait.errors import PlaitError, Refusal
from plait.store import Store
from plait.store.memory import Fact, NewFact

RECALL_K = 8
HOP_K = 4
"""Facts added by one hop: those sharing a name with the direct hits."""
HOP_MAX_FACTS = 6
"""A name held by more active facts than this ("the person" of a long chat) is too common to say
that the facts sharing it belong together: no hop goes through it."""
MAX_RECALLED_FACTS = 10_000
"""Active facts of a scope recall reads; a scope holding more is recalled from its newest."""
_FUNCTION_WORDS = """a an and are as at be been but by can could did do does for from had has have how i if in into is
it its me my not now of on or our should so than that the their them then there these they this those to us was we were
what when where which who whom whose why will with would you your"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
"""Words the keyword ranking ignores: every fact holds some, so a fact matching only these would
be ranked, and reciprocal-rank fusion weighs a rank, not how good the match was."""


class FactError(PlaitError):
    kind = Refusal.INVALID
    code = "memory"


@dataclass(frozen=True, slots=True)
class Recalled:
    fact: Fact
    score: float
    via: str
    """`search` (it matched the question) or `hop` (it shares a name with a fact that did)."""


def normalised_name(name: str) -> str:
    """A name as it is stored and matched: Unicode-normalised, case-folded, spaces collapsed,
    quotes and trailing punctuation dropped (`"  Lyon. "` and `lyon` are one place)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = re.sub(r"[\"'`\u2018\u2019\u201c\u201d]", "", text)
    return re.sub(r"\s+", " ", text).strip(" .,;:!?")


def new_fact(value: dict[str, Any], *, embed: bool = True) -> NewFact:
    """A fact as a model or a person writes it (subject, predicate, object, text, valid_from, and
    `one_of_many` when the subject may hold several objects for the predicate at once), checked,
    its names normalised, its sentence embedded when the embedder is installed."""
    parts = {key: str(value.get(key) or "").strip() for key in ("subject", "predicate", "object", "text")}
    missing = [key for key in ("subject", "predicate", "object") if not parts[key]]
    if missing:
        raise FactError(f"a fact needs {', '.join(missing)}", "give subject, predicate and object")
    subject, obj = normalised_name(parts["subject"]), normalised_name(parts["object"])
    text = parts["text"] or f"{parts['subject']} {parts['predicate']} {parts['object']}"
    # what is embedded holds the fact's parts too: a question may name the subject the sentence leaves implicit
    meaning = f"{parts['subject']} {parts['predicate']} {parts['object']}. {text}"
    vector, embedder_name = _embedded(meaning) if embed else (None, None)
    names = tuple(dict.fromkeys((subject, obj)))
    single = not value.get("one_of_many")
    return NewFact(subject, normalised_name(parts["predicate"]), obj, text, names, _since(value.get("valid_from")),
                   vector, embedder_name, single_valued=single)  # fmt: skip


def _since(value: Any) -> float | None:
    """`valid_from` as seconds since the epoch: a number as it is, an ISO date or time (a model
    writes `2026-03-03`) read as UTC; anything else ("last week") is not a time it can order by."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    text += "-01-01" if re.fullmatch(r"\d{4}", text) else "-01" if re.fullmatch(r"\d{4}-\d{2}", text) else ""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def remember(store: Store, scope: str, facts: list[dict[str, Any]], *, source: dict[str, Any], by: str) -> list[Fact]:
    """Store facts in `scope` with where they came from (`source`: messages, run, node run); one
    the scope holds already, active, is not stored twice. A new object for a subject and
    predicate the scope holds supersedes the one held, unless the fact says it is one of many."""
    held = {(f.subject, f.predicate, f.object) for f in store.memory.facts(scope)}
    fresh: list[NewFact] = []
    for value in facts:
        fact = new_fact(value)
        if (fact.subject, fact.predicate, fact.object) not in held:
            held.add((fact.subject, fact.predicate, fact.object))
            fresh.append(fact)
    return store.memory.add(scope, fresh, source=source, by=by)


def correct(store: Store, fact_id: str, changes: dict[str, Any], *, by: str, note: str | None = None) -> Fact:
    """A new fact in place of `fact_id`: its parts with `changes` applied (subject, predicate,
    object, text, valid_from). The old one is superseded, kept, never recalled again."""
    old = store.memory.get(fact_id)
    unknown = set(changes) - {"subject", "predicate", "object", "text", "valid_from"}
    if unknown:
        raise FactError(
            f"a fact has no {', '.join(sorted(unknown))}", "change subject, predicate, object, text or valid_from"
        )
    merged = {"subject": old.subject, "predicate": old.predicate, "object": old.object, "valid_from": old.valid_from}
    merged |= changes
    if "text" not in changes:
        merged["text"] = f"{merged['subject']} {merged['predicate']} {merged['object']}"
    return store.memory.supersede(fact_id, new_fact(merged), by=by, note=note)


def retract(store: Store, fact_id: str, *, by: str, note: str | None = None) -> Fact:
    """Mark a fact wrong, with nothing in its place: never recalled again, kept in its history."""
    return store.memory.retract(fact_id, by=by, note=note)


def recall(store: Store, scope: str, question: str, k: int = RECALL_K, *, then: int = 0) -> list[Recalled]:
    """The active facts of `scope` that answer `question` best: by its words (BM25 over each
    fact's sentence and names) and by meaning (cosine of sentence embeddings), fused by rank;
    then up to `HOP_K` more that share a name with those; then the next `then` by rank, for a
    caller that fills a budget with as many as fit."""
    from plait.knowledge.fusion import KEYWORD_WEIGHT, SEARCH_K, reciprocal_rank_fusion

    facts = store.memory.facts(scope, limit=MAX_RECALLED_FACTS)
    if not facts or not question.strip():
        return []
    by_words, by_meaning = _by_words(facts, question), _by_meaning(facts, question)
    if by_meaning:  # words count less than meaning, as in knowledge-base search (see fusion)
        ranked = reciprocal_rank_fusion([by_words, by_meaning], k=SEARCH_K, weights=[KEYWORD_WEIGHT, 1.0])
    else:
        ranked = reciprocal_rank_fusion([by_words])
    hits = [Recalled(facts[i], score, "search") for i, score in ranked[:k]]
    held = Counter(name for f in facts for name in f.entities)
    names = {name for hit in hits for name in hit.fact.entities if held[name] <= HOP_MAX_FACTS}
    taken = {hit.fact.id for hit in hits}
    hops = [f for f in facts if f.id not in taken and names.intersection(f.entities)]
    hops.sort(key=lambda f: f.created_at, reverse=True)  # the newest first: what is true now
    taken |= {f.id for f in hops[:HOP_K]}
    more = [Recalled(facts[i], score, "search") for i, score in ranked[k:] if facts[i].id not in taken][:then]
    return hits + [Recalled(f, 0.0, "hop") for f in hops[:HOP_K]] + more


def _words(text: str) -> list[str]:
    found = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())
    return [w for w in found if len(w) > 1 and w not in STOPWORDS]


def _by_words(facts: list[Fact], question: str) -> list[int]:
    """Positions in `facts`, by BM25 (k1 1.2, b 0.75) of each fact's sentence and names against
    the question's words."""
    docs = {i: _words(f"{f.text} {f.subject} {f.object}") for i, f in enumerate(facts)}
    asked = set(_words(question))
    frequency = Counter(w for words in docs.values() for w in set(words) if w in asked)
    average = sum(len(words) for words in docs.values()) / len(docs)
    scores: dict[int, float] = {}
    for position, words in docs.items():
        counts = Counter(words)
        score = 0.0
        for word in asked & counts.keys():
            idf = math.log(1 + (len(docs) - frequency[word] + 0.5) / (frequency[word] + 0.5))
            tf = counts[word]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / average))
        if score > 0:
            scores[position] = score
    return sorted(scores, key=lambda i: (-scores[i], i))


def _by_meaning(facts: list[Fact], question: str) -> list[int]:
    """Positions in `facts`, by cosine between each sentence's vector and the question's (none
    when the embedder is not installed, or no fact was embedded by it)."""
    from plait.knowledge.embed import DEFAULT_EMBEDDER, available, embedder

    embedded = [i for i, f in enumerate(facts) if f.vector is not None and f.embedder == DEFAULT_EMBEDDER]
    if not embedded or not available():
        return []
    import numpy as np

    vectors = b"".join(facts[i].vector or b"" for i in embedded)
    matrix = np.frombuffer(vectors, dtype="<f4").reshape(len(embedded), -1)
    scores = matrix @ embedder().embed([question])[0]
    return [embedded[int(i)] for i in np.argsort(-scores, kind="stable")[:50]]


def _embedded(text: str) -> tuple[bytes | None, str | None]:
    from plait.knowledge.embed import DEFAULT_EMBEDDER, available, embedder

    if not available():
        return None, None
    return embedder().embed([text])[0].astype("<f4").tobytes(), DEFAULT_EMBEDDER
