"""Which expected item goes with which actual item of an array.

Items "match" when the actual one passes against the expected one. A sequence is aligned by a
longest common subsequence of matches (order matters); a set by a maximum matching (order does
not; found exactly, by augmenting paths, in a fixed order, so the same input always gives the
same pairs). The F1 of an array is 2 x pairs / (expected items + actual items).

For the field report, the items left over are paired too, so that a chapter whose `start`
moved is reported as a wrong `start`, not as one chapter missing and one extra: in a sequence,
positionally between two aligned pairs; in a set, closest first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

Pairs = list[tuple[int, int]]


def sequence_pairs(match: Sequence[Sequence[bool]], width: int) -> Pairs:
    """The pairs of a longest common subsequence of matches, in order."""
    n = len(match)
    longest = [[0] * (width + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below, here = match[i], longest[i + 1], longest[i]
        for j in range(width - 1, -1, -1):
            here[j] = below[j + 1] + 1 if row[j] else max(below[j], here[j + 1])
    pairs: Pairs = []
    i = j = 0
    while i < n and j < width:
        if match[i][j] and longest[i][j] == longest[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif longest[i + 1][j] >= longest[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def set_pairs(match: Sequence[Sequence[bool]], width: int) -> Pairs:
    """A maximum matching of expected to actual items, sorted by expected item."""
    options = [[j for j in range(width) if row[j]] for row in match]
    owner = [-1] * width
    partner = [-1] * len(match)
    for start in range(len(match)):
        came_from: dict[int, int] = {}
        queue, end = deque([start]), -1
        while queue and end < 0:
            item = queue.popleft()
            for j in options[item]:
                if j in came_from:
                    continue
                came_from[j] = item
                if owner[j] < 0:
                    end = j
                    break
                queue.append(owner[j])
        while end >= 0:  # flip the augmenting path
            item = came_from[end]
            following = partner[item]
            owner[end], partner[item] = item, end
            end = following
    return sorted((i, j) for i, j in enumerate(partner) if j >= 0)


def fill_sequence(pairs: Pairs, count: int, width: int) -> Pairs:
    """`pairs` with the items between two aligned pairs paired by position."""
    filled: Pairs = []
    last_i = last_j = -1
    for i, j in [*pairs, (count, width)]:
        filled.extend(zip(range(last_i + 1, i), range(last_j + 1, j), strict=False))
        if i < count:
            filled.append((i, j))
        last_i, last_j = i, j
    return filled


def fill_set(pairs: Pairs, closeness: Sequence[Sequence[float]], width: int) -> Pairs:
    """`pairs` with the items left over paired closest first (ties: lower indices first)."""
    free_i = sorted(set(range(len(closeness))) - {i for i, _ in pairs})
    free_j = sorted(set(range(width)) - {j for _, j in pairs})
    ranked = sorted((-closeness[i][j], i, j) for i in free_i for j in free_j)
    taken_i: set[int] = set()
    taken_j: set[int] = set()
    filled = list(pairs)
    for _, i, j in ranked:
        if i not in taken_i and j not in taken_j:
            filled.append((i, j))
            taken_i.add(i)
            taken_j.add(j)
    return sorted(filled)
