"""Exact dense search's vectors in memory: one matrix per knowledge base, scored with one product.

A base's matrix is read whole once; after that it follows the base's generations with only the
chunks each one added and removed (`KnowledgeIndex.vector_rows_changed`), so an ingestion does
not make the next search read every vector again (0.8-1 s at 100k chunks). Rows are appended in
place into spare capacity, and a removed chunk's row is only marked dead, so a small change costs
milliseconds, not a copy of the matrix; once a quarter of the rows are dead they are compacted
away. A matrix handed to a search is never written where that search reads: appends go past its
rows, and dead rows are marked in a new mask.

Matrices are kept most recently used first, within `MATRIX_BYTES` over all bases.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.store.knowledge import KnowledgeBase
    from plait.store.knowledge_index import KnowledgeIndex

MATRIX_BYTES = 512 * 1024 * 1024
"""Vector matrices kept between searches, over all bases."""
SPARE = 0.125
"""Rows allocated beyond those read, for the chunks later generations add (at least 1,024)."""


@dataclass(frozen=True, slots=True)
class Matrix:
    """A base's vectors at one generation: `ids` row for row with `rows` (unit vectors), and
    `alive` marking the rows of chunks still searchable (None: all of them)."""

    generation: int
    ids: Any
    rows: Any
    alive: Any
    # the arrays `ids` and `rows` are the first rows of (spare capacity past them)
    ids_buffer: Any
    rows_buffer: Any

    @property
    def chunks(self) -> int:
        return len(self.ids) if self.alive is None else int(self.alive.sum())

    def scores(self, query: Any) -> Any:
        """Cosine similarity of each row with the unit vector `query`; -inf for dead rows."""
        import numpy as np

        scored = self.rows @ query
        return scored if self.alive is None else np.where(self.alive, scored, -np.inf)


_held: OrderedDict[tuple[int, str], Matrix] = OrderedDict()
_lock = threading.Lock()
_updating = threading.Lock()


def matrix(
    index: KnowledgeIndex, base: KnowledgeBase, generation: int, limit: int, refusal: Callable[[int], Exception]
) -> Matrix:
    """The vectors of the chunks of `base` searchable at `generation`: the matrix held for the
    base, brought up to it with what changed since (a generation older than the one held is
    read whole, and not kept). Past `limit` chunks, `refusal(chunks)` is raised."""
    key = (id(index), base.id)
    current = _get(key)
    if current is not None and current.generation == generation:
        return current
    if current is not None and current.generation < generation:
        with _updating:  # one writer of spare rows at a time, from the matrix held now
            current = _get(key)
            if current is not None and current.generation == generation:
                return current
            if current is not None and current.generation < generation:
                added, removed = index.vector_rows_changed(base.id, current.generation, generation)
                fresh = _changed(current, generation, base.dimensions, added, removed)
                if fresh.chunks > limit:
                    raise refusal(fresh.chunks)
                return _kept(key, fresh)
    rows = index.vector_rows(base.id, generation)
    if len(rows) > limit:
        raise refusal(len(rows))
    ids, vectors = _arrays(rows, base.dimensions)
    return _kept(key, _built(ids, vectors, generation))


def held(index: KnowledgeIndex, kb_id: str) -> Matrix | None:
    """The matrix kept for a base (None: none is)."""
    return _get((id(index), kb_id))


def _get(key: tuple[int, str]) -> Matrix | None:
    with _lock:
        found = _held.get(key)
        if found is not None:
            _held.move_to_end(key)
        return found


def _kept(key: tuple[int, str], fresh: Matrix) -> Matrix:
    """`fresh`, kept for its base unless a newer generation is kept already."""
    with _lock:
        now = _held.get(key)
        if now is None or now.generation < fresh.generation:
            _held[key] = fresh
            _held.move_to_end(key)
        while sum(m.rows_buffer.nbytes for m in _held.values()) > MATRIX_BYTES and len(_held) > 1:
            _held.popitem(last=False)
    return fresh


def _arrays(rows: list[tuple[int, bytes]], dimensions: int) -> tuple[Any, Any]:
    """(chunk ids, vectors as rows) of (chunk id, float32 bytes) rows."""
    import numpy as np

    ids = np.fromiter((chunk_id for chunk_id, _ in rows), dtype=np.int64, count=len(rows))
    return ids, np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(len(rows), dimensions)


def _built(ids: Any, rows: Any, generation: int) -> Matrix:
    """A matrix of these rows in a new buffer, with spare capacity."""
    import numpy as np

    count = len(ids)
    capacity = count + max(1024, int(count * SPARE))
    ids_buffer = np.empty(capacity, dtype=np.int64)
    rows_buffer = np.empty((capacity, rows.shape[1]), dtype=np.float32)
    ids_buffer[:count], rows_buffer[:count] = ids, rows
    return Matrix(generation, ids_buffer[:count], rows_buffer[:count], None, ids_buffer, rows_buffer)


def _changed(
    held: Matrix, generation: int, dimensions: int, added: list[tuple[int, bytes]], removed: list[int]
) -> Matrix:
    """`held` with the rows of `removed` marked dead and those of `added` appended: in place
    when its buffer has room (past every row a search of `held` reads), else in a new buffer,
    which keeps only the living rows."""
    import numpy as np

    count, alive = len(held.ids), held.alive
    if removed:
        gone = np.isin(held.ids, np.asarray(removed, dtype=np.int64))
        alive = ~gone if alive is None else alive & ~gone
    new_ids, new_rows = _arrays(added, dimensions)
    dead = 0 if alive is None else count - int(alive.sum())
    if dead * 4 > count or count + len(added) > len(held.ids_buffer):  # compacted, or no room
        keep = slice(None) if alive is None else alive
        ids = np.concatenate([held.ids[keep], new_ids])
        return _built(ids, np.concatenate([held.rows[keep], new_rows]), generation)
    end = count + len(added)
    held.ids_buffer[count:end], held.rows_buffer[count:end] = new_ids, new_rows
    if alive is not None and added:
        alive = np.concatenate([alive, np.ones(len(added), dtype=bool)])
    return Matrix(generation, held.ids_buffer[:end], held.rows_buffer[:end], alive, held.ids_buffer, held.rows_buffer)
