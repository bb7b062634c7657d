"""Why a run stopped, as its user needs it: the failing node's own error with a hint, or the
reviews that wait for a person.

The run's own error only says "node 'x' failed"; the node's record says why. Every surface
reports a stopped run with these facts (the CLI after `plait run` and in `plait runs show`, the
Python client in its `RunResult`); hints are written in the CLI's words, and a surface rewords
them as it rewords every other hint.
"""

from __future__ import annotations

from typing import Any

from plait.model.output_meta import strip_meta_deep
from plait.store import NodeRunRecord, current_activations

_HINTS = {
    "unmatched": "add a response for node '{node}' to the scripted responses file (responses: - node: {node} ...)",
    "connection": "is the model server running? `plait config check` shows the base_url each role goes to",
    "timeout": "raise the node's timeout_s, or check the provider with `plait config check`",
    "rate_limit": "wait and `plait resume {run}`, or add a failover provider to the role in plait.toml",
    "config": "`plait config check` shows what is missing in plait.toml",
    "provider": "pass --llm local or --llm scripted:FILE, or configure a provider in plait.toml",
    "schema": "the model's answer broke the out-edge schema (see above); "
    "`plait rerun {run} {node}` asks again, `plait override {run} {node} --file F` corrects it",
    "budget": "raise the graph's max_cost_usd, or run it with a cheaper model",
    "expression": "fix the node's expression in the graph file (`plait validate` checks the rest)",
    "mcp": "check the MCP server's entry in the config (--config FILE) and that its command runs",
    "local": "the embedded model failed; `plait config check` shows how it is set up",
    "stream_broken": "the model's answer stream kept breaking off: check the model server, then `plait resume {run}`",
}
_DEFAULT_HINT = "`plait runs show {run}` shows every attempt; `plait rerun {run} {node}` tries the node again"


def node_failure(run_id: str, error: dict[str, Any] | None, nodes: list[NodeRunRecord]) -> dict[str, Any] | None:
    """The failing node's own error (kind, message, details) and a hint; None when no node failed."""
    current = current_activations(nodes)
    failed = current.get((error or {}).get("node_id") or "")
    if failed is None or not failed.error:
        failed = next((n for n in current.values() if n.status == "failed" and n.error), None)
    if failed is None or failed.error is None:
        return None
    cause = dict(failed.error)
    kind = str(cause.get("kind", ""))
    hint = cause.get("hint") or _HINTS.get(kind, _DEFAULT_HINT)
    cause["hint"] = hint.format(node=failed.node_id, run=run_id)
    return {"node_id": failed.node_id, "node_run_id": failed.id, **cause}


def with_cause(run_id: str, error: dict[str, Any] | None, nodes: list[NodeRunRecord]) -> dict[str, Any] | None:
    """The run's error with the failing node's error under `node_error` (for --json)."""
    if error is None:
        return None
    cause = node_failure(run_id, error, nodes)
    return {**error, "node_error": cause} if cause is not None else error


def waiting_reviews(run_id: str, nodes: list[NodeRunRecord]) -> list[dict[str, Any]]:
    """The nodes waiting for a person (HUMAN_REVIEWs, nodes a repair hook escalated, and
    nodes waiting for child runs that wait for one): prompt, value under review, the commands
    that answer."""
    out = []
    for n in current_activations(nodes).values():
        snapshot = n.input_snapshot or {}
        if n.status == "pending" and snapshot.get("waiting_for") and "due_at" not in snapshot:
            children = snapshot["waiting_for"]
            out.append(
                {
                    "node_id": n.node_id,
                    "node_run_id": n.id,
                    "review_prompt": f"waiting for its child runs: {', '.join(children)}",
                    "value": None,
                    "commands": [f"plait runs show {child}" for child in children[:3]],
                }
            )
            continue
        escalated = "escalated" in snapshot  # a node its repair hook handed to a person
        if n.status != "pending" or (snapshot.get("node_type") != "HUMAN_REVIEW" and not escalated):
            continue
        commands = [f"plait review {run_id} {n.node_id} --approve", f"plait review {run_id} {n.node_id} --file F"]
        if escalated and snapshot.get("value") is None:  # a program's or a provider's failure: no value to approve
            commands = commands[1:]
        out.append(
            {
                "node_id": n.node_id,
                "node_run_id": n.id,
                "review_prompt": snapshot.get("review_prompt"),
                "value": strip_meta_deep(snapshot.get("value")),
                "commands": commands,
            }
        )
    return out
