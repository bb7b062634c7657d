"""Store-wide settings: small string values by key (`plait_setting`)."""

from __future__ import annotations

from sqlalchemy import Engine, select

from plait.store.db import conflict_insert, writer
from plait.store.models import SETTING


class SettingsRepository:
    """Reads and writes store-wide settings; a write replaces the key's value."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def get(self, key: str) -> str | None:
        """The value of `key`, or None when it was never set."""
        with self._engine.connect() as conn:
            value = conn.execute(select(SETTING.c.value).where(SETTING.c.key == key)).scalar_one_or_none()
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        """Set `key` to `value`, replacing any earlier value."""
        stmt = conflict_insert(self._engine)(SETTING).values(key=key, value=value)
        with self._writer.begin() as conn:
            conn.execute(stmt.on_conflict_do_update(index_elements=[SETTING.c.key], set_={"value": value}))

    def setdefault(self, key: str, value: str) -> str:
        """The value of `key`, set to `value` first when it has none: of processes racing to
        set it, the first write wins and every one returns that value."""
        stmt = conflict_insert(self._engine)(SETTING).values(key=key, value=value)
        with self._writer.begin() as conn:
            conn.execute(stmt.on_conflict_do_nothing(index_elements=[SETTING.c.key]))
        stored = self.get(key)
        assert stored is not None, "a key just written is there"
        return stored
