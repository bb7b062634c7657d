"""A node its repair hook escalated to a person waits for its output, the run paused at it (a
TOOL program that failed, code that threw, a model call its provider never answered, an answer
that failed its checks). The person gives that output with `plait review RUN NODE --file F`, or
with `plait override RUN NODE --file F`, what one reaches for to give a node the output it could
not produce: the node has no output to correct yet, so an override of it is the person's
answer, given as a review's is (the value checked against the node's out-edge schemas, the node
`overridden`, the run continuing from it)."""

from __future__ import annotations

from typing import Any

from plait.model.enums import DownstreamPolicy, NodeStatus
from plait.runs.corrections import Correction, Corrections
from plait.store import NotFoundError, Store, current_activations


def escalated(store: Store, run_id: str, node_id: str) -> bool:
    """Whether `node_id`'s newest activation in run `run_id` waits for a person because its
    repair hook escalated it (False for an unknown run or node: the correction says why)."""
    try:
        records = store.runs.node_runs(run_id)
    except NotFoundError:
        return False
    rec = current_activations(records).get(node_id)
    return rec is not None and rec.status == NodeStatus.PENDING and "escalated" in (rec.input_snapshot or {})


def override(
    corrections: Corrections,
    run_id: str,
    node_id: str,
    value: Any,
    *,
    policy: DownstreamPolicy = DownstreamPolicy.INVALIDATE,
    note: str | None = None,
) -> Correction:
    """`Corrections.override`, except on a node waiting for a person after its repair hook
    escalated it: there the value answers it, as `Corrections.review` does (`policy` does not
    apply: nothing after the node has run yet)."""
    if escalated(corrections.store, run_id, node_id):
        return corrections.review(run_id, node_id, value, note=note or "output given with override")
    return corrections.override(run_id, node_id, value, policy=policy, note=note)
