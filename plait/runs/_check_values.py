"""How the checks of a run (check.py) compare values: a value a node read against the field
ledger's history since (`Ledger`: has it moved, and was each change excused?), the `current` an
input snapshot recorded against the one in effect, and a value as a message quotes it.

Kept apart from check.py, which walks the run and decides what is a problem: these read values
and versions only, and report nothing themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from plait.engine.state import CompiledRun
from plait.model.enums import DownstreamPolicy
from plait.model.limits import storable
from plait.model.output_meta import strip_meta_deep
from plait.redact import redact_secrets
from plait.store import NodeRunRecord
from plait.store.ledger import FieldVersion

_SHOWN_CHARS = 120
"""A value quoted in a message is cut after this many characters."""


class Ledger:
    """The run's field ledger as the checks read it: each owner's versions, oldest first, and
    the run's node runs by id (whose overrides' policies excuse changes)."""

    def __init__(self, versions: Iterable[FieldVersion], by_id: dict[str, NodeRunRecord]) -> None:
        self.versions = _by_owner(versions)
        self.by_id = by_id

    def moved(self, owner: str, version: int) -> bool:
        """Whether the value of `owner` in effect is not the one its version `version` held (only
        freezes since, or a change and a rollback back to it, leave it as it was)."""
        history = self.versions.get(owner)
        if not history or history[-1].version <= version:
            return False
        read = next((v for v in history if v.version == version), None)
        return read is None or strip_meta_deep(history[-1].value) != strip_meta_deep(read.value)

    def corrected_at(self, node_id: str) -> float | None:
        """When a person last gave the node its value (an override or a rollback of it): changes
        upstream made before then are in that value. A review's answer is not such a value: the
        person approved or edited what the review showed them, which is what it read."""
        given = [v.at for v in self.versions.get(node_id, ()) if v.kind in ("override", "rollback")]
        return max(given) if given else None

    def unexcused(self, owner: str, version: int, corrected_at: float | None) -> FieldVersion | None:
        """The first version of `owner` after `version` that changed its value and left the
        reader out of step: not an override with policy KEEP (which keeps the readers as they
        are), nor a change made before the reader itself was corrected at `corrected_at` (its
        value is then a person's, given with that change in effect). The newest version when the
        one read is not in the ledger."""
        history = self.versions[owner]
        read = next((v for v in history if v.version == version), None)
        if read is None:
            return history[-1]
        before = strip_meta_deep(read.value)
        for later in (v for v in history if v.version > version):
            value = strip_meta_deep(later.value)
            excused = self.kept(later) or (corrected_at is not None and later.at <= corrected_at)
            if value != before and not excused:
                return later
            before = value
        return None

    def kept(self, change: FieldVersion) -> bool:
        """Whether `change` is an override made with policy KEEP: a person's choice to leave the
        nodes that read the value before it as they are. The ledger does not record a version's
        policy; the corrected node run records the one of its newest override, taken here for
        each of its overrides."""
        if change.kind != "override" or change.node_run_id is None:
            return False
        corrected = self.by_id.get(change.node_run_id)
        return corrected is not None and corrected.downstream_policy == DownstreamPolicy.KEEP

    def describe(self, owner: str, change: FieldVersion) -> str:
        head = self.versions[owner][-1]
        text = f"{owner} version {change.version}: {change.kind} by {change.by}"
        return text if head.version == change.version else f"{text}; it is at version {head.version} now"


def _by_owner(versions: Iterable[FieldVersion]) -> dict[str, list[FieldVersion]]:
    """The ledger's versions per owner, oldest first (as `LedgerRepository.history` orders them)."""
    owners: dict[str, list[FieldVersion]] = {}
    for version in versions:
        owners.setdefault(version.owner_id, []).append(version)
    return owners


def topological(compiled: CompiledRun) -> list[str]:
    """The nodes level by level (Kahn's levels: every predecessor comes first)."""
    return [node_id for level in compiled.topology.levels for node_id in level]


def as_recorded(current: Any) -> Any:
    """`current` as an input snapshot keeps it: made storable at the depth it has there (under
    `state`), then with every registered secret masked (`plait.engine.guard` does both)."""
    return redact_secrets(storable({"state": {"current": current}}))["state"]["current"]


def differing_predecessors(recorded: Any, now: Any, predecessors: list[str]) -> list[str]:
    """Which predecessors' values differ between two `current` values (a map by predecessor
    when there are several)."""
    if len(predecessors) > 1 and isinstance(recorded, dict) and isinstance(now, dict):
        return [p for p in predecessors if recorded.get(p) != now.get(p)]
    return predecessors


def names(ids: Iterable[str]) -> str:
    return ", ".join(ids)


def shown(value: Any) -> str:
    """A value as a message quotes it: compact JSON, cut when long."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"
