"""The settings in force, and changing them while the server runs: plait.toml with the overlay
the store keeps over it (plait/config/overlay.py; docs/configuration.md, "Settings at run time").

A change is a patch of the overlay made on the revision its maker read: checked as plait.toml
is (the whole configuration validated again, and no role left that `plait config check` could
serve before and cannot now), refused whole when anything is wrong (nothing is recorded, the
revision stays), else recorded as the next revision with who, when, the overlay before and
after, and an optional note. A revert undoes one change's keys and is recorded as a change too.
Processes executing runs take a new revision up without a restart (`plait.runs.settings_in_force`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.config import ConfigError, PlaitConfig, file_data, load_config, register_secrets
from plait.config.overlay import (
    Path,
    SettingsOverlay,
    apply_overlay,
    check_allowed,
    check_caps,
    check_removals,
    differences,
    dotted,
    flatten,
    merge,
    parse_overlay,
    reverted,
    sources,
    touched,
)
from plait.store import Store
from plait.store.settings_changes import SettingsChange, SettingsStale


@dataclass(frozen=True)
class Effective:
    """The settings in force at a revision: plait.toml's configuration (`base`) with the stored
    overlay over it (`config`), and where each shown value came from."""

    config: PlaitConfig
    revision: int
    base: PlaitConfig
    overlay: SettingsOverlay
    sources: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    """Why the stored overlay does not apply to plait.toml any more (then `config` is plait.toml's
    alone, until a change or a revert mends it)."""


@dataclass(frozen=True)
class HistoryEntry:
    """One recorded change, with the keys it changed (`old`/`new`: None where unset, i.e. the
    value of plait.toml)."""

    revision: int
    at: float
    by: str
    note: str | None
    reverts: int | None
    changes: list[dict[str, Any]]


def base_config(config_path: str | None) -> PlaitConfig:
    """plait.toml's configuration (`config_path`, else `$PLAIT_CONFIG`, else `./plait.toml`), or
    the built-in one without a file."""
    return load_config(config_path)


def effective(
    store: Store, config_path: str | None, *, base: PlaitConfig | None = None, with_sources: bool = True
) -> Effective:
    """The settings in force now (`base`: plait.toml's configuration, when the caller holds it)."""
    base = base if base is not None else base_config(config_path)
    newest = store.settings_changes.current()
    revision = newest.revision if newest is not None else 0
    stored = newest.overlay if newest is not None else {}
    try:
        overlay = parse_overlay(stored)
        config = register_secrets(apply_overlay(base, overlay))
        problem = None
    except ConfigError as exc:
        overlay, config = SettingsOverlay(), base
        problem = f"the stored settings (revision {revision}) do not apply to plait.toml any more: {exc}"
    shown = sources(config, overlay, file_data(config_path), _set_at(store)) if with_sources else {}
    return Effective(config, revision, base, overlay, shown, problem)


def change(
    store: Store,
    config_path: str | None,
    patch: dict[str, Any],
    *,
    by: str,
    base_revision: int,
    note: str | None = None,
    base: PlaitConfig | None = None,
) -> Effective:
    """Lay `patch` over the stored overlay and record it as revision `base_revision + 1`.
    Refused, with nothing changed: SettingsRefused (the deployer fixed it), SettingsStale (the
    settings changed since `base_revision`), ConfigError (the result is not valid, naming the key)."""
    base = base if base is not None else base_config(config_path)
    check_allowed(base.settings, touched(patch), base.source)
    check_removals(base, patch)
    newest = store.settings_changes.current()
    revision = newest.revision if newest is not None else 0
    if base_revision != revision:
        raise SettingsStale(
            f"the settings changed since revision {base_revision} (now {revision}): nothing was changed",
            "read the settings again (`plait config show`) and make the change on the newest revision",
        )
    now = effective(store, config_path, base=base, with_sources=False)
    merged = merge(newest.overlay if newest is not None else {}, patch)
    return _record(store, config_path, base, now, merged, by=by, note=note)


def revert(
    store: Store,
    config_path: str | None,
    revision: int,
    *,
    by: str,
    note: str | None = None,
    base: PlaitConfig | None = None,
) -> Effective:
    """Undo change `revision`: the keys it set go back to what they were before it (the others
    stay as they are now), recorded as a new change that names it."""
    base = base if base is not None else base_config(config_path)
    undone = store.settings_changes.get(revision)
    now = effective(store, config_path, base=base, with_sources=False)
    current = now.overlay.data() if now.problem is None else _stored(store)
    overlay = reverted(current, undone.previous, undone.overlay)
    sections = sorted({path[0] for path, _, _ in differences(current, overlay)})
    check_allowed(base.settings, sections, base.source)
    note = note or f"revert of revision {revision}"
    return _record(store, config_path, base, now, overlay, by=by, note=note, reverts=revision)


def history(store: Store, limit: int = 100, offset: int = 0) -> list[HistoryEntry]:
    """The recorded changes, newest first, each with the keys it changed."""
    return [_entry(change) for change in store.settings_changes.history(limit, offset)]


def _record(
    store: Store,
    config_path: str | None,
    base: PlaitConfig,
    now: Effective,
    overlay_data: dict[str, Any],
    *,
    by: str,
    note: str | None,
    reverts: int | None = None,
) -> Effective:
    """Check the whole overlay and record it on `now`'s revision; the settings then in force."""
    overlay = parse_overlay(overlay_data)
    if overlay.data() == now.overlay.data() and now.problem is None:
        raise ConfigError(
            "the change changes nothing: the settings already are so",
            "give a section with a value that differs from the one in force (`plait config show`)",
        )
    check_caps(base, overlay)
    config = apply_overlay(base, overlay)
    _no_new_problems(now.config, config)
    store.settings_changes.record(now.revision, overlay.data(), by=by, note=note, reverts=reverts)
    register_secrets(config)
    return effective(store, config_path, base=base)


def _no_new_problems(before: PlaitConfig, after: PlaitConfig) -> None:
    """Refuse a change that leaves a role `plait config check` would report and did not before."""
    from plait.llm.check import check_config

    known = set(check_config(before).problems)
    new = [problem for problem in check_config(after).problems if problem not in known]
    if new:
        raise ConfigError(
            f"the settings would leave {new[0]}",
            "send a role a target that can be served here, or make its provider usable "
            "(`plait config check` shows why a provider cannot be used)",
            details=new[1:],
        )


def _stored(store: Store) -> dict[str, Any]:
    newest = store.settings_changes.current()
    return newest.overlay if newest is not None else {}


def _set_at(store: Store) -> dict[Path, int]:
    """The revision that last set each key of the overlay in force."""
    set_at: dict[Path, int] = {}
    before: dict[Path, Any] = {}
    for recorded in store.settings_changes.all():
        after = flatten(recorded.overlay)
        for path, value in after.items():
            if before.get(path) != value:
                set_at[path] = recorded.revision
        before = after
    return set_at


def _entry(recorded: SettingsChange) -> HistoryEntry:
    changes = [
        {"key": dotted(path), "old": old, "new": new}
        for path, old, new in differences(recorded.previous, recorded.overlay)
    ]
    return HistoryEntry(recorded.revision, recorded.at, recorded.by, recorded.note, recorded.reverts, changes)
