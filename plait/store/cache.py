"""The model response cache's read side; entries are written with the node run that
produced them, in its commit (`writes.CachePut`), so only validated answers are remembered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, select

from plait.store.db import json_dumps
from plait.store.fastpath import Statements
from plait.store.models import LLM_CACHE


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A remembered model answer: what `provider`'s `model` answered to one request, and the
    node run whose commit stored it."""

    provider: str
    model: str
    response: dict[str, Any]
    node_run_id: str | None
    created_at: float


class CacheRepository:
    """Looks up remembered model answers by request key. It never writes: an answer is stored
    only in the commit of the node run that validated it."""

    def __init__(self, engine: Engine) -> None:
        lookup = select(LLM_CACHE).where(LLM_CACHE.c.key == bindparam("key"))
        self._statements = Statements(engine, {"get": lookup}, frozenset(), json_dumps)

    def get(self, key: str) -> CachedAnswer | None:
        """The answer remembered under `key`, or None."""
        with self._statements.reading() as session:
            rows = session.rows("get", {"key": key})
        if not rows:
            return None
        row = rows[0]
        return CachedAnswer(row.provider, row.model, row.response_json, row.node_run_id, row.created_at)

    def close(self) -> None:
        self._statements.close()
