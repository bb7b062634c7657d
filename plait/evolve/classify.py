"""Automatic classification of schema changes and derivation of versions on save.

A save compares the stored registry with the new one: each `SchemaEntry` gets a level (none, patch,
minor, major) with readable findings, a derived version (its old version bumped by that level,
unless the author already wrote a higher one), and a warning when the author's `breaking_change`
flag disagrees. The graph's `schema_version` is bumped by the highest level over all entries.

    change = classify_registry(stored.graph.schemas, new_def.schemas)
    schemas = with_derived_versions(new_def.schemas, change)
    schema_version = derive_schema_version(stored.graph.schema_version, change, declared=new_def.schema_version)
    for line in change.warnings: ...

The walker itself lives in `plait.evolve.schema_diff`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from plait.evolve.schema_diff import Finding, Kind, Level, diff_schemas, references, same
from plait.model.graph import SchemaEntry
from plait.model.semver import semver

DEFAULT_SCHEMA_VERSION = "1.0.0"


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """The classification of one schema change: the highest level over its findings."""

    level: Level
    findings: tuple[Finding, ...]

    @property
    def breaking(self) -> bool:
        return self.level is Level.MAJOR

    def describe(self) -> str:
        """One finding per line, for a CLI or a warning."""
        return "\n".join(str(f) for f in self.findings) if self.findings else "no change"


def classify(old: Any, new: Any) -> SchemaChange:
    """Compare two JSON Schemas; a textual difference that validates the same (reordered enum) is patch."""
    findings = diff_schemas(old, new)
    if not findings and not same(old, new):
        message = "schema text changed without changing what validates (e.g. reordered enum or required)"
        findings.append(Finding(Level.PATCH, "$", Kind.COSMETIC, message))
    return SchemaChange(max_level(f.level for f in findings), tuple(findings))


def max_level(levels: Iterable[Level]) -> Level:
    """The most severe of `levels`; `none` when there are none."""
    return max(levels, default=Level.NONE)


def parse_version(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a semantic version; ValueError with the expected form otherwise."""
    parsed = semver(version)
    if parsed is None:
        raise ValueError(f"'{version}' is not a semantic version; write MAJOR.MINOR.PATCH, e.g. 1.0.0")
    return parsed


def bump(version: str, level: Level) -> str:
    """Semver bump: major → X+1.0.0, minor → x.Y+1.0, patch → x.y.Z+1, none → unchanged."""
    major, minor, patch = parse_version(version)
    if level is Level.MAJOR:
        return f"{major + 1}.0.0"
    if level is Level.MINOR:
        return f"{major}.{minor + 1}.0"
    if level is Level.PATCH:
        return f"{major}.{minor}.{patch + 1}"
    return version


def _at_least(declared: str | None, derived: str) -> str:
    """The author's version wins when it is not lower than the derived one (a deliberate bigger bump)."""
    if declared is not None and parse_version(declared) >= parse_version(derived):
        return declared
    return derived


class EntryStatus(StrEnum):
    """What a save did to one schema id of the registry."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class EntryChange:
    """One schema id across a save: its level for the graph, findings, and the version to store."""

    schema_id: str
    status: EntryStatus
    level: Level
    findings: tuple[Finding, ...]
    old_version: str | None
    """Stored version before the save; None for an added entry."""
    new_version: str | None
    """Version to store: derived, or the author's when higher; None for a removed entry."""
    warnings: tuple[str, ...] = ()
    declared_version: str | None = None
    """The version the author wrote for a kept entry (None for an added or removed one): below
    `new_version` when the store raised it, and from then on `new_version` is the schema's version."""


@dataclass(frozen=True, slots=True)
class RegistryChange:
    """Every schema id of the old and new registries, new order first, then the removed ones."""

    entries: tuple[EntryChange, ...]

    @property
    def level(self) -> Level:
        return max_level(e.level for e in self.entries)

    @property
    def warnings(self) -> list[str]:
        return [w for e in self.entries for w in e.warnings]

    @property
    def changed(self) -> list[EntryChange]:
        """Entries that were added, removed or changed (what a save reports)."""
        return [e for e in self.entries if e.status is not EntryStatus.UNCHANGED]

    def entry(self, schema_id: str) -> EntryChange | None:
        return next((e for e in self.entries if e.schema_id == schema_id), None)

    def versions(self) -> dict[str, str]:
        """Schema id → version to store, for the entries of the new registry."""
        return {e.schema_id: e.new_version for e in self.entries if e.new_version is not None}

    def report(self) -> list[str]:
        """Readable lines: one per added/removed/changed entry, then its findings, indented."""
        lines: list[str] = []
        for e in self.changed:
            versions = " → ".join(v for v in (e.old_version, e.new_version) if v is not None)
            lines.append(f"schema '{e.schema_id}' {e.status} ({e.level}) {versions}")
            lines.extend(f"  {f}" for f in e.findings)
        return lines


def classify_registry(old_entries: Iterable[SchemaEntry], new_entries: Iterable[SchemaEntry]) -> RegistryChange:
    """Classify each schema id: added → minor, removed → major, otherwise the schema comparison
    (raised to the level of the registry entries it refers to with `$ref`)."""
    old_by_id = {e.id: e for e in old_entries}
    new_by_id = {e.id: e for e in new_entries}
    own = {sid: classify(old_by_id[sid].schema_, e.schema_) for sid, e in new_by_id.items() if sid in old_by_id}
    carried = _referred(own, new_by_id, set(old_by_id) - set(new_by_id))
    changes: list[EntryChange] = []
    for schema_id, entry in new_by_id.items():
        previous = old_by_id.get(schema_id)
        if previous is None:
            finding = Finding(Level.MINOR, "$", Kind.SCHEMA_ADDED, f"schema '{schema_id}' added to the registry")
            added = EntryChange(schema_id, EntryStatus.ADDED, Level.MINOR, (finding,), None, entry.version)
            changes.append(added)
        else:
            findings = [*own[schema_id].findings, *carried.get(schema_id, [])]
            changes.append(_compare_entry(previous, entry, findings))
    for schema_id, entry in old_by_id.items():
        if schema_id not in new_by_id:
            message = f"schema '{schema_id}' removed from the registry; edges and stored outputs that use it break"
            finding = Finding(Level.MAJOR, "$", Kind.SCHEMA_REMOVED, message)
            changes.append(EntryChange(schema_id, EntryStatus.REMOVED, Level.MAJOR, (finding,), entry.version, None))
    return RegistryChange(tuple(changes))


def _referred(
    own: dict[str, SchemaChange], new_by_id: dict[str, SchemaEntry], removed: set[str]
) -> dict[str, list[Finding]]:
    """Findings an entry takes from the entries it refers to (`$ref: other_id`), followed to a fixed point:
    a schema that embeds another accepts what that one accepts."""
    levels = {sid: change.level for sid, change in own.items()} | dict.fromkeys(removed, Level.MAJOR)
    refers = {sid: {r.split("#")[0] for r in references(new_by_id[sid].schema_)} & set(levels) - {sid} for sid in own}
    moved = True
    while moved:
        moved = False
        for sid, targets in refers.items():
            highest = max_level([levels[sid], *(levels[t] for t in targets)])
            if highest > levels[sid]:
                levels[sid], moved = highest, True
    return {
        sid: [
            Finding(levels[t], "$", Kind.OTHER, f"refers to schema '{t}', which changed ({levels[t]})")
            for t in sorted(targets)
            if levels[t] > own[sid].level
        ]
        for sid, targets in refers.items()
    }


def _compare_entry(old: SchemaEntry, new: SchemaEntry, schema_findings: list[Finding]) -> EntryChange:
    findings = list(schema_findings)
    if old.description != new.description:
        findings.append(Finding(Level.PATCH, "$", Kind.DESCRIPTION, "entry description changed"))
    level = max_level(f.level for f in findings)
    derived = bump(old.version, level)
    version = _at_least(new.version, derived)
    warnings: list[str] = []
    if version != new.version and parse_version(new.version) > parse_version(old.version):
        warnings.append(
            f"schema '{new.id}': declared version {new.version} is below {derived} required by a {level} change "
            f"from {old.version}; storing {version}"
        )
    flag_contradicted = (new.breaking_change and level < Level.MAJOR) or (
        not new.breaking_change and level is Level.MAJOR
    )
    if level is Level.NONE:  # a flag left over from an earlier version is no disagreement; a new one is
        flag_contradicted = new.breaking_change and not old.breaking_change
    if flag_contradicted:
        warnings.append(_flag_warning(new, level, findings))
    status = EntryStatus.UNCHANGED if level is Level.NONE else EntryStatus.CHANGED
    return EntryChange(new.id, status, level, tuple(findings), old.version, version, tuple(warnings), new.version)


def _flag_warning(entry: SchemaEntry, level: Level, findings: Sequence[Finding]) -> str:
    details = "; ".join(str(f) for f in findings) or "no change"
    if entry.breaking_change:
        return f"schema '{entry.id}': breaking_change is true but the change classifies as {level}: {details}"
    return f"schema '{entry.id}': the change is breaking (major) but breaking_change is false: {details}"


def derive_schema_version(
    previous_schema_version: str | None, change: RegistryChange, *, declared: str | None = None
) -> str:
    """The graph's schema_version: first save keeps `declared` (or 1.0.0); later saves bump by the max level."""
    if previous_schema_version is None:
        return declared or DEFAULT_SCHEMA_VERSION
    return _at_least(declared, bump(previous_schema_version, change.level))


def with_derived_versions(entries: Iterable[SchemaEntry], change: RegistryChange) -> list[SchemaEntry]:
    """Copies of the new entries carrying the versions to store (the input entries are not modified)."""
    versions = change.versions()
    return [
        e if versions.get(e.id, e.version) == e.version else e.model_copy(update={"version": versions[e.id]})
        for e in entries
    ]


__all__ = [
    "DEFAULT_SCHEMA_VERSION",
    "EntryChange",
    "EntryStatus",
    "Finding",
    "Kind",
    "Level",
    "RegistryChange",
    "SchemaChange",
    "bump",
    "classify",
    "classify_registry",
    "derive_schema_version",
    "max_level",
    "parse_version",
    "with_derived_versions",
]
