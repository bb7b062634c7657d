"""What a stopped run needs from its user, on a terminal: why a node failed and what to do, or
which review waits (the facts: `plait.runs.stopped`).

`plait run` (and every command that drives a run) and `plait runs show` print the same facts.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from plait.runs.stopped import node_failure, waiting_reviews, with_cause
from plait.store import current_activations

_VALUE_CHARS = 4000
"""A value under review longer than this is cut in the readable output (`--json` has it whole)."""


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
        waiting = [n.node_id for n in current_activations(nodes).values() if n.status == "pending"]
        return [f"run {run_id} paused at {', '.join(waiting) or 'no node'}: `plait resume {run_id}` continues it"]
    lines = [f"run {run_id} paused: waiting for a person at {', '.join(r['node_id'] for r in reviews)}"]
    for review in reviews:
        lines += review_lines(review)
    return lines
