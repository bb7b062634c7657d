"""Reciprocal-rank fusion: one ranking out of several (vector search, full-text search).

Only ranks count, never the scores behind them, so rankings whose scores have nothing in
common (a cosine, a BM25) combine without calibration: each id earns 1/(k + rank) from every
ranking it appears in. k = 60 is the constant of the method's authors (Cormack, Clarke and
Büttcher, 2009); it keeps one first place from outweighing agreement lower down.
"""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """(id, score) best first; score = sum over rankings of 1/(k + rank), rank starting at 1.

    Equal scores (to 12 places, so that the order of the additions cannot split a tie) go to
    the id with the better best rank, then to the smaller id. An id repeated within one ranking
    counts once, at its first place there.
    """
    if k < 0:
        raise ValueError(f"k must be 0 or more, not {k}")
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda pair: (-round(pair[1], 12), best[pair[0]], pair[0]))
