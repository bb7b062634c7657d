"""The outbox (`outbox`): messages to workers, written in the transaction of what they announce
(`RunRepository.add(announce=...)`), or on their own for a run reopened elsewhere (`announce`).

A relay reads the unsent messages in order, hands each to the broker, then marks the ones the
broker took as sent (`relay`); a relay that dies in between sends a message twice. At least
once, then: a worker receiving a run twice finds it leased, being executed, or finished, and
does nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update

from plait.store.db import is_sqlite, writer
from plait.store.models import OUTBOX

PAGE = 100
KEEP_SENT_S = 24 * 3600.0
"""Sent messages are kept this long (to see what was sent), then removed."""


class OutboxRepository:
    """Writes, relays and prunes outbox messages."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def announce(self, run_id: str, reason: str) -> None:
        """A message about a run that changed in a transaction of its own (resumed, corrected)."""
        with self._writer.begin() as conn:
            conn.execute(insert(OUTBOX).values(run_id=run_id, reason=reason, created_at=time.time()))

    def relay(self, send: Callable[[str, str], None]) -> int:
        """Send the unsent messages in order (`send(run_id, reason)`, which raises when the broker
        cannot take it: the message stays unsent), marking each sent; how many were sent.

        On PostgreSQL the messages are taken under `FOR UPDATE SKIP LOCKED`, so relays in several
        processes send each message once (barring a relay that dies between the send and the
        commit); SQLite has one writer at a time, and is not kept locked while the broker is
        called, so two relays there may both send a message."""
        query = select(OUTBOX.c.id, OUTBOX.c.run_id, OUTBOX.c.reason).where(OUTBOX.c.sent_at.is_(None))
        query = query.order_by(OUTBOX.c.id).limit(PAGE)
        if is_sqlite(self._engine):
            with self._engine.connect() as conn:
                pending = conn.execute(query).all()
            sent, refused = _send(pending, send)  # no write lock held while the broker is called
            with self._writer.begin() as conn:
                _mark_sent(conn, sent)
        else:
            with self._writer.begin() as conn:
                pending = conn.execute(query.with_for_update(skip_locked=True)).all()
                sent, refused = _send(pending, send)
                _mark_sent(conn, sent)
        if refused is not None:  # raised once what was sent before it is marked (committed above)
            raise refused
        return len(sent)

    def unsent(self) -> int:
        with self._engine.connect() as conn:
            return len(conn.execute(select(OUTBOX.c.id).where(OUTBOX.c.sent_at.is_(None)).limit(10_000)).all())

    def prune(self, now: float | None = None) -> None:
        cutoff = (time.time() if now is None else now) - KEEP_SENT_S
        with self._writer.begin() as conn:
            conn.execute(delete(OUTBOX).where(OUTBOX.c.sent_at.is_not(None), OUTBOX.c.sent_at < cutoff))


def _send(pending: Sequence[Any], send: Callable[[str, str], None]) -> tuple[list[int], Exception | None]:
    """Send in order until the broker refuses one: the ids sent, and the refusal (the refused
    message and those after it stay unsent)."""
    sent: list[int] = []
    for message_id, run_id, reason in pending:
        try:
            send(run_id, reason)
        except Exception as exc:  # handed back to the caller once the sent ones are marked
            return sent, exc
        sent.append(message_id)
    return sent, None


def _mark_sent(conn: Any, sent: list[int]) -> None:
    if sent:
        conn.execute(update(OUTBOX).where(OUTBOX.c.id.in_(sent)).values(sent_at=time.time()))
