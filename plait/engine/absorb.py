"""Taking up a correction made while the engine executes the run (docs/corrections.md).

A correction written beside a running engine (`Corrections.override` on a `running` run)
raises the run's count of corrections; the engine reads that count in every commit (`Watch`)
and, when it moved, calls `absorb`: the corrected values replace the ones in memory (nodes
not started yet read them), and every node that read an older version is dealt with by the
policy of the correction: a running one is marked to end `stale` (INVALIDATE) or to run again
(RERUN, RERUN_ALL) when it finishes; a completed one is marked stale or queued at once. Nodes
the correction itself queued (they had completed when it was written) are queued here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from plait.engine.state import Phase, RunState
from plait.model.enums import DownstreamPolicy, NodeStatus
from plait.store import NodeRunRecord, Store, current_activations
from plait.store.writes import Stale

STALE_AFTER, RERUN_AFTER = "stale", "rerun"


@dataclass
class Absorbed:
    """What taking up corrections left for the scheduler: stale marks to commit, nodes to plan again."""

    stale: list[Stale] = field(default_factory=list)
    """Completed node runs that read an old value: marked stale in the next commit."""
    ready: list[str] = field(default_factory=list)
    """Nodes set back to pending (a new activation): the scheduler plans them."""


def absorb(state: RunState, store: Store, run_id: str) -> Absorbed:
    """Bring `state` up to the corrections committed for the run: the new ledger heads and
    corrected outputs replace the ones in memory, and the nodes that read an old value are
    marked by the correction's policy. Reads the store and writes nothing: the returned stale
    marks go in the next commit."""
    newest = current_activations(store.runs.node_runs(run_id))
    heads = store.ledger.heads(run_id)
    corrected = [o for o, head in heads.items() if head.version > state.versions.get(o, 0)]
    done = Absorbed()
    for owner in corrected:
        state.versions[owner], state.frozen[owner] = heads[owner].version, dict(heads[owner].frozen)
        rec = newest.get(owner)
        if owner not in state.nodes or rec is None:
            continue
        if state.nodes[owner].phase == Phase.COMPLETED:
            state.complete(owner, rec.effective_output)
        _apply_policy(
            state,
            owner,
            heads[owner].version,
            DownstreamPolicy(rec.downstream_policy or DownstreamPolicy.INVALIDATE),
            newest,
            done,
        )
    for node_id, rec in newest.items():  # activations the correction queued
        node_state = state.nodes.get(node_id)
        queued = rec.status == NodeStatus.PENDING and rec.input_snapshot is None
        if node_state is None or not queued or rec.activation <= node_state.activation:
            continue
        if node_state.phase in (Phase.COMPLETED, Phase.SKIPPED, Phase.FAILED):
            state.reopen(node_id, rec.activation)
            done.ready.append(node_id)
    return done


def _apply_policy(
    state: RunState,
    owner: str,
    version: int,
    policy: DownstreamPolicy,
    newest: dict[str, NodeRunRecord],
    done: Absorbed,
) -> None:
    """INVALIDATE: direct readers of the old value end stale. RERUN: they run again, and what
    already ran after them ends stale. RERUN_ALL: everything after `owner` that has run or is
    running runs again. A node claimed but not started yet reads the corrected value."""
    if policy == DownstreamPolicy.KEEP:
        return
    direct = [t for t in state.successors(owner) if _read_old(state, newest, t, owner, version)]
    if policy == DownstreamPolicy.INVALIDATE:
        for target in direct:
            _mark(state, newest, target, STALE_AFTER, done)
        return
    if policy == DownstreamPolicy.RERUN_ALL:
        direct_ids = set(state.successors(owner))
        after = [t for t in state.compiled.downstream([owner]) if t not in direct_ids]
        for target in [*direct, *after]:
            _mark(state, newest, target, RERUN_AFTER, done)
        return
    for target in direct:
        _mark(state, newest, target, RERUN_AFTER, done)
    for target in state.compiled.downstream(direct):
        if target not in direct:
            _mark(state, newest, target, STALE_AFTER, done)


def _read_old(state: RunState, newest: dict[str, NodeRunRecord], target: str, owner: str, version: int) -> bool:
    rec = newest.get(target)
    read = state.nodes[target].read or (rec.consumed if rec is not None else None) or {}
    return owner in read and read[owner] < version


def _mark(state: RunState, newest: dict[str, NodeRunRecord], target: str, kind: str, done: Absorbed) -> None:
    """A running node ends `kind` when it finishes; a completed one is marked stale or rerun now."""
    node_state = state.nodes[target]
    rec = newest.get(target)
    if node_state.phase == Phase.RUNNING:
        node_state.after = kind
    elif node_state.phase == Phase.COMPLETED and rec is not None and rec.activation == node_state.activation:
        if rec.status != NodeStatus.COMPLETED:
            return  # overridden or stale already: a person's value, or marked by the correction
        if kind == STALE_AFTER:
            done.stale.append(Stale(rec.run_id, rec.id, target))
        else:
            state.reopen(target)
            done.ready.append(target)
