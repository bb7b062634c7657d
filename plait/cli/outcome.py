"""What a stopped run needs from its user: why a node failed and what to do, or which review waits.

`plait run` (and every command that drives a run) and `plait runs show` print the same facts:
the run's own error only says "node 'x' failed", the node's record says why.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_VALUE_CHARS = 4000
"""A value under review longer than this is cut in the readable output (`--json` has it whole)."""

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
}
_DEFAULT_HINT = "`plait runs show {run}` shows every attempt; `plait rerun {run} {node}` tries the node again"


def newest(nodes: list[Any]) -> dict[str, Any]:
    """The current activation of each node (older ones are history)."""
    out: dict[str, Any] = {}
    for n in nodes:
        if n.node_id not in out or n.activation > out[n.node_id].activation:
            out[n.node_id] = n
    return out


def node_failure(run_id: str, error: dict[str, Any] | None, nodes: list[Any]) -> dict[str, Any] | None:
    """The failing node's own error (kind, message, details) and a hint; None when no node failed."""
    current = newest(nodes)
    failed = current.get((error or {}).get("node_id") or "")
    if failed is None or not failed.error:
        failed = next((n for n in current.values() if n.status == "failed" and n.error), None)
    if failed is None:
        return None
    cause = dict(failed.error)
    kind = str(cause.get("kind", ""))
    hint = cause.get("hint") or _HINTS.get(kind, _DEFAULT_HINT)
    cause["hint"] = hint.format(node=failed.node_id, run=run_id)
    return {"node_id": failed.node_id, "node_run_id": failed.id, **cause}


def with_cause(run_id: str, error: dict[str, Any] | None, nodes: list[Any]) -> dict[str, Any] | None:
    """The run's error with the failing node's error under `node_error` (for --json)."""
    if error is None:
        return None
    cause = node_failure(run_id, error, nodes)
    return {**error, "node_error": cause} if cause is not None else error


def waiting_reviews(run_id: str, nodes: list[Any]) -> list[dict[str, Any]]:
    """The nodes waiting for a person (HUMAN_REVIEWs, nodes a repair hook escalated, and
    nodes waiting for child runs that wait for one): prompt, value under review, the commands
    that answer."""
    from plait.model.output_meta import strip_meta_deep

    out = []
    for n in newest(nodes).values():
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


def failure_lines(cause: dict[str, Any]) -> list[str]:
    """The failing node's error in full, its details, and the hint, as lines for a terminal."""
    lines = [f"node '{cause['node_id']}' failed ({cause.get('kind') or 'error'}): {cause.get('message', '')}"]
    lines += [f"  {detail}" for detail in cause.get("details") or []]
    lines.append(f"  hint: {cause['hint']}")
    return lines


def review_lines(review: dict[str, Any]) -> list[str]:
    """One waiting review as lines: what to check, the value, how to answer."""
    value = json.dumps(review["value"], ensure_ascii=False, indent=2)
    if len(value) > _VALUE_CHARS:
        value = value[:_VALUE_CHARS] + "\n… (the whole value: `plait runs show RUN_ID --json`)"
    if review["value"] is None and review["review_prompt"].startswith("waiting for its child runs"):
        lines = [f"node '{review['node_id']}' is {review['review_prompt']}"]
        lines += [f"  see one: {command}" for command in review["commands"]]
        return lines
    lines = [f"review '{review['node_id']}' is waiting for a person"]
    if review["review_prompt"]:
        lines.append(f"  prompt: {review['review_prompt']}")
    if len(review["commands"]) == 1:  # an escalated failure: nothing to approve, the output to give
        lines.append(f"  give its output:      {review['commands'][0]}   (F: a JSON or YAML file with the output)")
        return lines
    lines.append("  value under review:")
    lines += [f"    {line}" for line in value.splitlines()]
    approve, correct = review["commands"]
    lines.append(f"  approve it as it is:  {approve}")
    lines.append(f"  or correct it:        {correct}   (F: a JSON or YAML file with the corrected value)")
    return lines


def write_lines(lines: list[str]) -> None:
    """Write `lines` to stderr, one per line."""
    sys.stderr.write("".join(line + "\n" for line in lines))


def report_outcome(store: Any, outcome: Any, json_output: bool, quiet: bool, *, show_output: bool = True) -> None:
    """stdout: the run output (or with --json the summary, its failure's cause and waiting reviews);
    stderr: how the run ended and what to do next."""
    from plait.cli.common import print_json
    from plait.model.enums import RunStatus

    run_id, status = outcome.run_id, outcome.status
    nodes = store.runs.node_runs(run_id) if status in (RunStatus.FAILED, RunStatus.PAUSED) else []
    reviews = waiting_reviews(run_id, nodes) if status == RunStatus.PAUSED else []
    if json_output:
        summary = {"run_id": run_id, "status": str(status), "output": outcome.output}
        summary["error"] = with_cause(run_id, outcome.error, nodes)
        if status == RunStatus.PAUSED:
            summary["waiting"] = reviews
        print_json(summary)
    elif status == RunStatus.COMPLETED and show_output:
        print_json(outcome.output)
    if status == RunStatus.PAUSED:
        write_lines(_paused_lines(run_id, nodes, reviews))
    elif status == RunStatus.FAILED:
        cause = node_failure(run_id, outcome.error, nodes)
        lines = [f"run {run_id} failed: {(outcome.error or {}).get('message', 'a node failed')}"]
        write_lines(lines + (failure_lines(cause) if cause else []))
    elif not quiet:
        sys.stderr.write(f"run {run_id} completed\n")


def _paused_lines(run_id: str, nodes: list[Any], reviews: list[dict[str, Any]]) -> list[str]:
    if not reviews:
        waiting = [n.node_id for n in newest(nodes).values() if n.status == "pending"]
        return [f"run {run_id} paused at {', '.join(waiting) or 'no node'}: `plait resume {run_id}` continues it"]
    lines = [f"run {run_id} paused: waiting for a person at {', '.join(r['node_id'] for r in reviews)}"]
    for review in reviews:
        lines += review_lines(review)
    return lines
