"""Bearer tokens of the HTTP API (`plait token create|list|revoke`, `plait serve`).

A token is shown once, when created; the store keeps only its SHA-256 digest, so a copy of the
database does not hand out access. Tokens are 256 random bits, which makes a plain (unsalted,
fast) digest enough: there is no dictionary to try. Revoking deletes the row.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from dataclasses import dataclass

from sqlalchemy import Engine, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from plait.store.db import writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.models import API_TOKEN

TOKEN_PREFIX = "plait_"
MAX_NAME = 128
_TOUCH_EVERY_S = 60.0
"""`last_used_at` is written at most this often per token: a busy client must not turn every
request into a write."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What the store knows of a token: never the token itself."""

    id: str
    name: str
    created_at: float
    last_used_at: float | None


def digest(token: str) -> str:
    """The form a token is stored and compared in."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenRepository:
    """Creates, lists, revokes and checks API tokens. A token is returned once, when created;
    the store keeps only its digest, so reading the database does not reveal it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def create(self, name: str) -> tuple[TokenInfo, str]:
        """A new token named `name`: its record and the token itself (shown to nobody again)."""
        name = name.strip()
        if not name or len(name) > MAX_NAME:
            raise StoreError(f"a token name must have 1 to {MAX_NAME} characters; got {len(name)}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        info = TokenInfo(str(uuid.uuid4()), name, time.time(), None)
        row = {"id": info.id, "name": name, "token_hash": digest(token), "created_at": info.created_at}
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(API_TOKEN).values(**row))
        except IntegrityError:
            raise StoreError(
                f"a token named '{name}' exists already: choose another name, or revoke it first "
                f"(`plait token revoke {name}`)"
            ) from None
        return info, token

    def list(self) -> list[TokenInfo]:
        """Every token, oldest first; never the tokens themselves."""
        with self._engine.connect() as conn:
            rows = conn.execute(select(API_TOKEN).order_by(API_TOKEN.c.created_at, API_TOKEN.c.name)).all()
        return [TokenInfo(r.id, r.name, r.created_at, r.last_used_at) for r in rows]

    def count(self) -> int:
        """How many tokens exist (with none, a server that asks for tokens refuses to start)."""
        with self._engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(API_TOKEN)).scalar_one())

    def revoke(self, name_or_id: str) -> TokenInfo:
        """Delete a token by name or id; requests carrying it are refused from now on."""
        match = or_(API_TOKEN.c.name == name_or_id, API_TOKEN.c.id == name_or_id)
        with self._writer.begin() as conn:
            row = conn.execute(select(API_TOKEN).where(match)).first()
            if row is None:
                raise NotFoundError(f"no API token named '{name_or_id}': `plait token list` shows the tokens")
            conn.execute(delete(API_TOKEN).where(API_TOKEN.c.id == row.id))
        return TokenInfo(row.id, row.name, row.created_at, row.last_used_at)

    def verify(self, token: str) -> TokenInfo | None:
        """The token's record when `token` is a live token, else None."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        wanted = digest(token)
        with self._engine.connect() as conn:
            row = conn.execute(select(API_TOKEN).where(API_TOKEN.c.token_hash == wanted)).first()
        if row is None or not hmac.compare_digest(row.token_hash, wanted):
            return None
        now = time.time()
        if row.last_used_at is None or now - row.last_used_at > _TOUCH_EVERY_S:
            with self._writer.begin() as conn:
                conn.execute(update(API_TOKEN).where(API_TOKEN.c.id == row.id).values(last_used_at=now))
        return TokenInfo(row.id, row.name, row.created_at, now)
