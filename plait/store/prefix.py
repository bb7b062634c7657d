"""Ids by unique prefix, as git takes commit ids: a person types `3f9a`, not a whole UUID.

A prefix shorter than `MIN_PREFIX` is never expanded (four hex digits are the shortest that
stay unique among thousands of runs most of the time); a full id is always taken as it is.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Engine, select

from plait.store.errors import NotFoundError, StoreError
from plait.store.models import GRAPH_DEF, GRAPH_RUN, NODE_RUN

MIN_PREFIX = 4
_CANDIDATES = 10
"""An ambiguous prefix lists at most this many candidates (and says when there are more)."""
_ID_CHARS = re.compile(r"[0-9a-fA-F-]+")


class AmbiguousIdError(StoreError):
    """A prefix matches several ids; `candidates` describes each (id first) for the user to choose."""

    def __init__(self, message: str, candidates: list[tuple[str, ...]], more: bool) -> None:
        super().__init__(message)
        self.candidates = candidates
        self.more = more


def resolve_run_id(engine: Engine, ref: str) -> str:
    """The run id that `ref` (a full id or a unique prefix of one) names."""
    query = (
        select(GRAPH_RUN.c.id, GRAPH_DEF.c.slug, GRAPH_RUN.c.status)
        .select_from(GRAPH_RUN.join(GRAPH_DEF, GRAPH_DEF.c.id == GRAPH_RUN.c.prompt_graph_def_id))
        .order_by(GRAPH_RUN.c.created_at.desc())
    )
    return _resolve(engine, ref, query, GRAPH_RUN.c.id, "run", "`plait runs list` shows the run ids")


def resolve_node_run_id(engine: Engine, ref: str) -> str:
    """The node run id that `ref` (a full id or a unique prefix of one) names."""
    query = select(NODE_RUN.c.id, NODE_RUN.c.node_def_id, NODE_RUN.c.prompt_graph_run_id).order_by(
        NODE_RUN.c.created_at.desc()
    )
    hint = "`plait runs show RUN_ID` lists the node run ids of a run"
    return _resolve(engine, ref, query, NODE_RUN.c.id, "node run", hint)


def _resolve(engine: Engine, ref: str, query: Any, column: Any, what: str, hint: str) -> str:
    ref = ref.strip()
    with engine.connect() as conn:
        if conn.execute(select(column).where(column == ref)).first() is not None:
            return ref
        if len(ref) < MIN_PREFIX or not _ID_CHARS.fullmatch(ref):
            short = f" (a prefix needs at least {MIN_PREFIX} characters)" if len(ref) < MIN_PREFIX else ""
            raise NotFoundError(f"no {what} '{ref}' in this database{short}: {hint}")
        rows = conn.execute(query.where(column.like(ref.lower() + "%")).limit(_CANDIDATES + 1)).all()
    if not rows:
        raise NotFoundError(f"no {what} '{ref}' in this database: {hint}")
    if len(rows) > 1:
        shown = [tuple(str(x) for x in row) for row in rows[:_CANDIDATES]]
        raise AmbiguousIdError(
            f"{what} id prefix '{ref}' is ambiguous: it matches {'more than ' if len(rows) > _CANDIDATES else ''}"
            f"{min(len(rows), _CANDIDATES)} {what}s; give more characters",
            shown,
            len(rows) > _CANDIDATES,
        )
    return str(rows[0][0])
