"""Reciprocal-rank fusion: one ranking out of several (vector search, full-text search).

Only ranks count, never the scores behind them, so rankings whose scores have nothing in
common (a cosine, a BM25 on SQLite, a `ts_rank_cd` on PostgreSQL) combine without calibration
and fuse the same on either store: each id earns weight/(k + rank) from every ranking it
appears in. k = 60 is the constant of the method's authors (Cormack, Clarke and Büttcher,
2009) for rankings of equal worth.

Knowledge-base search does not use equal worth: its questions are asked in a user's words, not
the documents', and there full-text search finds the answering passage in its top five half
as often as the embeddings do. Counted equally it pulled the fused ranking below the dense
one (recall@5 0.68 against 0.75 on the knowledge-base benchmark); counted at `KEYWORD_WEIGHT`
with a small `SEARCH_K`, so that first places decide, it adds what only words find (names,
error messages, options) without outvoting meaning. The two constants were chosen on half of
that benchmark's questions and hold on the other half (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60
SEARCH_K = 10
"""k for knowledge-base search: first places count for more than at 60."""
KEYWORD_WEIGHT = 0.3
"""What a keyword ranking counts for in knowledge-base search, a dense ranking counting 1."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """(id, score) best first; score = sum over rankings of weight/(k + rank), rank starting at 1,
    each ranking's weight 1 unless `weights` (one per ranking, none negative) says otherwise.

    Equal scores (to 12 places, so that the order of the additions cannot split a tie) go to
    the id with the better best rank, then to the smaller id. An id repeated within one ranking
    counts once, at its first place there.
    """
    if k < 0:
        raise ValueError(f"k must be 0 or more, not {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings) or any(w < 0 for w in weights):
        raise ValueError(f"give one weight of 0 or more per ranking: {len(rankings)} rankings, weights {weights}")
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda pair: (-round(pair[1], 12), best[pair[0]], pair[0]))
