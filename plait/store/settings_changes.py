"""The settings changed while the server runs, one row per change (`plait_settings_change`).

The overlay in force is the newest row's; the revision is the newest row's number (0: never
changed), read in one query on the primary key, so that every process executing runs can ask
for it before its runs and model calls at little cost. A change is written as the revision its
maker read plus one: of two changes made on the same revision, the second is refused
(`SettingsStale`) and nothing of it is kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, insert, select
from sqlalchemy.exc import IntegrityError

from plait.errors import PlaitError, Refusal
from plait.store.db import writer
from plait.store.errors import NotFoundError
from plait.store.models import SETTINGS_CHANGE


class SettingsStale(PlaitError):
    """The settings changed since the revision a change was made on."""

    kind = Refusal.CONFLICT
    code = "settings_stale"


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """One change: the overlay after it and before it, by whom, when, why."""

    revision: int
    at: float
    by: str
    note: str | None
    overlay: dict[str, Any]
    previous: dict[str, Any]
    reverts: int | None


class SettingsChanges:
    """Reads and records the changes of the settings."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def revision(self) -> int:
        """The newest change's revision (0: none yet): one query on the primary key."""
        with self._engine.connect() as conn:
            newest = conn.execute(select(func.max(SETTINGS_CHANGE.c.revision))).scalar_one_or_none()
        return int(newest or 0)

    def current(self) -> SettingsChange | None:
        """The newest change (its overlay is in force), or None when the settings never changed."""
        with self._engine.connect() as conn:
            row = conn.execute(select(SETTINGS_CHANGE).order_by(SETTINGS_CHANGE.c.revision.desc()).limit(1)).first()
        return _change(row) if row is not None else None

    def get(self, revision: int) -> SettingsChange:
        with self._engine.connect() as conn:
            row = conn.execute(select(SETTINGS_CHANGE).where(SETTINGS_CHANGE.c.revision == revision)).first()
        if row is None:
            raise NotFoundError(f"no settings change {revision}", "`plait settings history` lists the changes")
        return _change(row)

    def history(self, limit: int = 100, offset: int = 0) -> list[SettingsChange]:
        """The changes, newest first."""
        query = select(SETTINGS_CHANGE).order_by(SETTINGS_CHANGE.c.revision.desc()).limit(limit).offset(offset)
        with self._engine.connect() as conn:
            return [_change(row) for row in conn.execute(query)]

    def all(self) -> list[SettingsChange]:
        """Every change, oldest first (where each key was last set)."""
        with self._engine.connect() as conn:
            return [_change(row) for row in conn.execute(select(SETTINGS_CHANGE).order_by(SETTINGS_CHANGE.c.revision))]

    def record(
        self,
        base_revision: int,
        overlay: dict[str, Any],
        *,
        by: str,
        note: str | None = None,
        reverts: int | None = None,
    ) -> SettingsChange:
        """Record the overlay made on `base_revision` as revision `base_revision + 1`, the
        overlay in force before it kept beside; SettingsStale when the settings changed since."""
        with self._writer.begin() as conn:
            row = conn.execute(
                select(SETTINGS_CHANGE.c.revision, SETTINGS_CHANGE.c.overlay_json)
                .order_by(SETTINGS_CHANGE.c.revision.desc())
                .limit(1)
            ).first()
            newest = int(row.revision) if row is not None else 0
            if newest != base_revision:
                raise _stale(base_revision, newest)
            change = SettingsChange(
                newest + 1, time.time(), by, note, overlay, dict(row.overlay_json) if row is not None else {}, reverts
            )
            try:
                conn.execute(
                    insert(SETTINGS_CHANGE).values(
                        revision=change.revision,
                        at=change.at,
                        by=by,
                        note=note,
                        overlay_json=overlay,
                        previous_json=change.previous,
                        reverts=reverts,
                    )
                )
            except IntegrityError:  # another process recorded this revision a moment before
                raise _stale(base_revision, base_revision + 1) from None
        return change


def _stale(base: int, newest: int) -> SettingsStale:
    return SettingsStale(
        f"the settings changed since revision {base} (now {newest}): nothing was changed",
        "read the settings again (`plait config show`) and make the change on the newest revision",
    )


def _change(row: Any) -> SettingsChange:
    return SettingsChange(
        revision=int(row.revision),
        at=float(row.at),
        by=str(row.by),
        note=row.note,
        overlay=dict(row.overlay_json or {}),
        previous=dict(row.previous_json or {}),
        reverts=row.reverts,
    )
