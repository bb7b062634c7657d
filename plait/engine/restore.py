"""Rebuilding a run's state from the store: on resume, and when a correction reopens a node.

The database is the source of truth; these functions read it into `RunState`.
"""

from __future__ import annotations

from plait.engine.state import Phase, RunState
from plait.model.enums import NodeStatus
from plait.store import NodeRunRecord, Store, current_activations


def restore(state: RunState, records: list[NodeRunRecord]) -> None:
    """Rebuild node phases from each node's newest activation (older ones are history)."""
    state.spent_usd += sum(rec.cost_usd for rec in records)  # every activation counts against max_cost_usd
    for node_id, rec in current_activations(records).items():
        if node_id not in state.nodes:
            continue
        node_state = state.nodes[node_id]
        node_state.activation = rec.activation
        if rec.activation > 1 and not rec.status.ended:  # queued again, or interrupted running again
            state.reopened.add(node_id)
        if rec.status.has_output:
            state.complete(node_id, rec.effective_output)  # stale data is still the data; rerun on demand
        elif rec.status == NodeStatus.SKIPPED:
            state.set_phase(node_id, Phase.SKIPPED)
        elif rec.status == NodeStatus.FAILED:
            state.set_phase(node_id, Phase.FAILED)
        elif rec.input_snapshot is not None and "due_at" in rec.input_snapshot and not rec.status.ended:
            # a parked WAIT: executed again, with the time it was given when it was first reached
            state.wait_due[node_id] = float(rec.input_snapshot["due_at"])
        elif rec.input_snapshot is not None and "waiting_for" in rec.input_snapshot and not rec.status.ended:
            pass  # a node waiting for its child runs: executed again, it finds them where they are
        elif rec.status == NodeStatus.PENDING and rec.input_snapshot is not None:
            state.set_phase(node_id, Phase.WAITING)  # a HUMAN_REVIEW parked for a person
        elif rec.status == NodeStatus.PENDING and rec.no_cache:
            state.fresh[node_id] = rec.activation  # an explicit rerun: a fresh answer, not the cache's
        # `running` rows belong to a dead process, `pending` ones without a snapshot were
        # queued by a rerun: the node is claimed (again) and executed


def restore_ledger(state: RunState, store: Store, run_id: str) -> None:
    """Each value's newest ledger version and frozen fields, as the store holds them."""
    for owner, head in store.ledger.heads(run_id).items():
        state.versions[owner], state.frozen[owner] = head.version, head.frozen
