"""A correction inside a child run reaches its parent.

A SUBGRAPH, MAP or LOOP node's output is made of its children's outputs. When a correction
changes a child's output after the node completed, the node's output is gathered again (a
SUBGRAPH takes the child's new output, a MAP replaces that item, a LOOP takes its last
iteration's) and set on the parent node as a correction of its own, with the downstream policy
the child's correction used: the original output stays, the parent's downstream is marked
stale or queued exactly as for a person's override, and a parent that is itself a child passes
it on upward.

While the node is still executing or waiting for its children, nothing is done here: the node
reads its children's outputs itself when it gathers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plait.engine.compiled import load_compiled
from plait.engine.graph_nodes import with_child_run
from plait.model.enums import DownstreamPolicy
from plait.model.nodes import ItemErrors, MapNode, NodeType
from plait.model.output_meta import strip_meta, strip_meta_deep
from plait.store import NodeRunRecord, RunRecord, Store, current_activations

if TYPE_CHECKING:
    from plait.runs.corrections import Correction, Corrections


def regathered(
    store: Store, child: RunRecord, *, newest: NodeRunRecord | None = None, parent: RunRecord | None = None
) -> tuple[str, str, Any] | None:
    """(parent run id, node id, the node's output gathered again with `child`'s current output),
    or None when `child` has no parent node with an output to change (or the value is unchanged).
    A caller that has read them passes the parent node's newest activation (`newest`, when it is
    the child's parent node run) and the parent run, so that many children cost no more reads."""
    if child.parent_run_id is None or child.parent_node_run_id is None:
        return None
    if newest is None or newest.id != child.parent_node_run_id:
        node_run = store.runs.node_run(child.parent_node_run_id)
        newest = current_activations(store.runs.node_runs(child.parent_run_id)).get(node_run.node_id)
    else:
        node_run = newest
    if not node_run.status.has_output or newest is None or newest.id != node_run.id:
        return None  # still gathering, or an older activation: history
    parent = parent if parent is not None and parent.id == child.parent_run_id else store.runs.get(child.parent_run_id)
    node = load_compiled(store, parent.graph_id, parent.graph_version, parent.body).nodes[node_run.node_id]
    gathered = _gathered(node, node_run, child)
    if gathered is None:
        return None
    value, held, given = gathered
    if strip_meta_deep(given) == strip_meta_deep(held):
        return None  # unchanged (the gathered value names its child run; the stored one's meta may differ)
    return parent.id, node_run.node_id, value


def _gathered(node: Any, node_run: NodeRunRecord, child: RunRecord) -> tuple[Any, Any, Any] | None:
    """The node's output gathered again with `child`'s output, the part of the stored output the
    child's stands for, and what the child gives for it: a MAP compares one item, not all of its
    items once per child."""
    if node.type == NodeType.LOOP:
        ran = (node_run.input_snapshot or {}).get("children") or []
        if not ran or ran[-1] != child.id:
            return None  # a LOOP's output is its last iteration's
    if node.type in (NodeType.SUBGRAPH, NodeType.LOOP):
        value = with_child_run(child.output, child.id)
        return value, node_run.effective_output, value
    current = strip_meta(node_run.effective_output)
    assert isinstance(node, MapNode)
    if not isinstance(current, list) or child.child_key is None:
        return None
    failed = set((node_run.input_snapshot or {}).get("failed") or [])
    key = child.child_key
    position = key - sum(1 for i in failed if i < key) if node.on_item_error == ItemErrors.SKIP else key
    if not 0 <= position < len(current):
        return None
    return [*current[:position], child.output, *current[position + 1 :]], current[position], child.output


def child_policy(store: Store, child: RunRecord) -> DownstreamPolicy:
    """The policy of the child's newest override (INVALIDATE after a rerun, which has none)."""
    overridden = [r for r in store.runs.node_runs(child.id) if r.override_at is not None and r.downstream_policy]
    if not overridden:
        return DownstreamPolicy.INVALIDATE
    newest = max(overridden, key=lambda r: r.override_at or 0.0)
    return DownstreamPolicy(newest.downstream_policy or DownstreamPolicy.INVALIDATE)


def reach_parent(
    corrections: Corrections, child_run_id: str, policy: DownstreamPolicy | None = None
) -> Correction | None:
    """Set the parent node's output gathered again after `child_run_id` changed (with `policy`,
    else that of the child's newest override); None when the parent is not affected."""
    store = corrections.store
    child = store.runs.get(child_run_id)
    found = regathered(store, child)
    if found is None:
        return None
    parent_run_id, node_id, value = found
    note = f"gathered again: child run {child.id} was corrected"
    return corrections.override(parent_run_id, node_id, value, policy=policy or child_policy(store, child), note=note)


def settle(store: Store) -> Callable[[RunRecord], str | None]:
    """An engine's `child_settled` hook: after a child run continued on its own ended, pass its
    output on to its parent (`reach_parent`); the parent run to drive next, if that correction
    left work there (a RERUN policy)."""

    def settled(child: RunRecord) -> str | None:
        from plait.runs.corrections import Corrections

        result = reach_parent(Corrections(store), child.id)
        while result is not None and not result.needs_run:
            result = result.parent
        return result.run_id if result is not None else None

    return settled
