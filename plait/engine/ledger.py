"""The engine's side of the field ledger (docs/corrections.md): what a node read, the
version its result writes, and the freezes its commit applies.

Freezing is decided at commit time only, from the versions the node read when it started:
a node that fails writes nothing, so it freezes nothing (a half-applied freeze, some fields
frozen by a node whose result was never stored, cannot happen). The writes computed here join
the node's result in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from plait.engine.state import RunState
from plait.model.enums import FreezePolicy
from plait.model.nodes import FreezeSpec, NodeBase
from plait.store import NodeRunRecord
from plait.store.ledger import INPUT, WHOLE, FieldVersion
from plait.store.writes import Version

ENGINE = "engine"
"""`by` of the versions the engine writes."""


def frozen_by_policy(spec: FreezeSpec | None, policy: FreezePolicy) -> list[str]:
    """The fields `spec` freezes under `policy` (`*` for the whole value)."""
    if spec is None:
        return []
    if isinstance(spec, dict):
        return [name for name, p in spec.items() if p == policy]
    return [WHOLE] if spec == policy else []


def freeze_spec(state: RunState, owner_id: str) -> FreezeSpec | None:
    """What a version of `owner_id` freezes: the graph's `input_freeze` for the run input, else the node's `freeze`."""
    if owner_id == INPUT:
        return state.compiled.graph.input_freeze
    return state.nodes[owner_id].node.freeze


def reads(state: RunState, node: NodeBase) -> list[str]:
    """Owners a node reads: its active predecessors (or the run input, for an entry node), and
    what its definition names (the compiler's plan: `context_include`, its templates' roots,
    the input for JavaScript nodes): what the ledger records as consumed, what `on_consume` freezes."""
    predecessors = state.active_predecessors(node.id)
    names: list[str] = predecessors if predecessors else [INPUT]
    names.extend(state.compiled.plan.nodes[node.id].reads)
    return list(dict.fromkeys(names))


def consumed(state: RunState, node: NodeBase) -> dict[str, int]:
    """{owner: version} of what the node reads now (owners never written are left out)."""
    return {owner: state.versions[owner] for owner in reads(state, node) if owner in state.versions}


def commit_versions(
    run_id: str, state: RunState, node_id: str, node_run_id: str, read: dict[str, int], *, completed: bool
) -> list[Version]:
    """The ledger writes of a node's commit: its new output version (frozen `on_create` fields),
    then a `freeze` version of every owner it read that freezes `on_consume`. Applied to
    `state` at once (the same commit carries them to the database)."""
    if not completed:
        return []
    writes: list[Version] = []
    node = state.nodes[node_id].node
    on_create = frozen_by_policy(node.freeze, FreezePolicy.ON_CREATE)
    frozen = {name: _freeze_entry(node_id, node_run_id, FreezePolicy.ON_CREATE) for name in on_create}
    version = state.versions.get(node_id, 0) + 1
    writes.append(Version(run_id, node_id, version, "execute", ENGINE, frozen, node_run_id))
    state.versions[node_id], state.frozen[node_id] = version, frozen
    for owner in read:
        fields = frozen_by_policy(freeze_spec(state, owner), FreezePolicy.ON_CONSUME)
        current = state.frozen.get(owner, {})
        new = [name for name in fields if name not in current]
        if not new:
            continue
        now_frozen = {**current, **{name: _freeze_entry(node_id, node_run_id, FreezePolicy.ON_CONSUME) for name in new}}
        version = state.versions.get(owner, 0) + 1
        reason = f"read by {node_id} (freeze: on_consume)"
        writes.append(Version(run_id, owner, version, "freeze", ENGINE, now_frozen, node_run_id, reason=reason))
        state.versions[owner], state.frozen[owner] = version, now_frozen
    return writes


def input_version(run_id: str, state: RunState) -> Version:
    """Version 1 of the run input, frozen where `input_freeze` says `on_create`."""
    fields = frozen_by_policy(state.compiled.graph.input_freeze, FreezePolicy.ON_CREATE)
    frozen = {name: _freeze_entry(INPUT, None, FreezePolicy.ON_CREATE) for name in fields}
    state.versions[INPUT], state.frozen[INPUT] = 1, frozen
    return Version(run_id, INPUT, 1, "input", ENGINE, frozen, value=state.input)


def _freeze_entry(by: str, node_run_id: str | None, policy: FreezePolicy) -> dict[str, Any]:
    return {"by": by, "node_run_id": node_run_id, "at": time.time(), "policy": str(policy)}


def ledger_json(versions: Iterable[FieldVersion], nodes: Iterable[NodeRunRecord]) -> list[dict[str, Any]]:
    """Every version of every value with the node activations that read it (`consumed_by`), as
    `plait runs show --ledger --json` and `GET /api/runs/{id}/ledger` present them."""
    nodes = list(nodes)
    return [
        {
            "owner": v.owner_id,
            "version": v.version,
            "kind": v.kind,
            "value": v.value,
            "frozen": v.frozen,
            "by": v.by,
            "at": v.at,
            "reason": v.reason,
            "node_run_id": v.node_run_id,
            "consumed_by": [
                {"node_id": n.node_id, "activation": n.activation, "node_run_id": n.id}
                for n in nodes
                if (n.consumed or {}).get(v.owner_id) == v.version
            ],
        }
        for v in versions
    ]
