"""What a correction says when it succeeds: the value now in effect, the ledger version it made,
and what happened downstream (marked stale, queued, then how the rerun nodes ended).

stdout carries the value now in effect (with --json, every fact as one object); stderr the
account for a person.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from plait.cli.common import print_json


def overridden(store: Any, result: Any, node_id: str, policy: str) -> dict[str, Any]:
    """The facts of an override: the node's effective value and the ledger version recording it."""
    from plait.model.output_meta import strip_meta_deep
    from plait.store import current_activations as newest

    record = newest(store.runs.node_runs(result.run_id))[node_id]
    value = record.override if record.override is not None else record.output
    history = store.ledger.history(result.run_id, node_id)
    version = history[-1].version if history else None
    line = f"overrode {node_id} of run {result.run_id} (ledger version {version}, policy {policy})"
    return {
        "said": line,
        "node_id": node_id,
        "version": version,
        "policy": policy,
        "effective_output": strip_meta_deep(value),
    }


def rolled_back(store: Any, result: Any, target: str, to_version: int) -> dict[str, Any]:
    """The facts of a rollback: the version restored, the version that records it, the value now."""
    from plait.model.output_meta import strip_meta_deep

    owner = target.partition(".")[0]
    history = store.ledger.history(result.run_id, owner)
    now = history[-1] if history else None
    version = now.version if now is not None else None
    line = f"rolled back {target} of run {result.run_id} to version {to_version} (recorded as version {version})"
    value = strip_meta_deep(now.value) if now is not None else None
    return {"said": line, "target": target, "restored_version": to_version, "version": version, "value": value}


def tell(facts: dict[str, Any], result: Any, json_output: bool, quiet: bool, *, show_value: bool = True) -> None:
    """Print what the correction did. With --json (and no run to drive after it) one object on stdout."""
    shown = {k: v for k, v in facts.items() if k != "said"}
    if json_output:
        print_json(
            {
                "run_id": result.run_id,
                **shown,
                "stale": result.stale,
                "queued": result.queued,
                "kept": getattr(result, "kept", []),
                "parents": [{"run_id": p.run_id, "stale": p.stale, "queued": p.queued} for p in _parents(result)],
            }
        )
        return
    value = shown.get("effective_output", shown.get("value"))
    if facts and show_value:  # (not when the run it drives prints its own JSON document)
        print_json(value)
    if quiet:
        return
    if facts:
        sys.stderr.write(facts["said"] + "\n")
    if result.stale:
        sys.stderr.write(
            f"stale now: {', '.join(result.stale)} (they read the old value)\n"
            f"  hint: `plait rerun {result.run_id} {result.stale[0]}` reruns one; --downstream reruns what follows it\n"
        )
    elif facts and result.resume:  # a failed node given its output
        sys.stderr.write("the run continues from the new value\n")
    elif facts and (kept := getattr(result, "kept", [])):
        sys.stderr.write(
            f"downstream: kept as they are: {', '.join(kept)} (they read the old value)\n"
            f"  hint: `plait rerun {result.run_id} {kept[0]}` brings one up to date; --downstream what follows it too\n"
        )
    elif facts and not result.queued:
        sys.stderr.write("downstream: nothing read the old value; nothing changed\n")
    if result.queued:
        sys.stderr.write(f"rerunning: {', '.join(result.queued)}\n")
    parent = getattr(result, "parent", None)
    while parent is not None:  # a child run's new output, passed on to the node that started it
        stale = f"; stale now: {', '.join(parent.stale)}" if parent.stale else ""
        queued = f"; rerunning: {', '.join(parent.queued)}" if parent.queued else ""
        sys.stderr.write(f"passed on to the parent run {parent.run_id}{stale}{queued}\n")
        parent = parent.parent


def _parents(result: Any) -> list[Any]:
    found, parent = [], getattr(result, "parent", None)
    while parent is not None:
        found.append(parent)
        parent = parent.parent
    return found


@contextmanager
def downstream_report(store: Any, result: Any, quiet: bool) -> Iterator[None]:
    """After the run a correction drove has ended, how each node it ran ended: those queued, and
    those the run's new values reached (the branch a rerun CONDITION now takes, the one it left)."""
    from plait.store import current_activations as newest

    before = {n: rec.id for n, rec in newest(store.runs.node_runs(result.run_id)).items()} if result.queued else {}
    try:
        yield
    except typer.Exit:
        if result.queued and not quiet:
            current = newest(store.runs.node_runs(result.run_id))
            moved = [n for n, rec in current.items() if before.get(n) != rec.id]
            ended = [f"{n} {current[n].status}" for n in dict.fromkeys([*result.queued, *moved]) if n in current]
            sys.stderr.write(f"downstream: {', '.join(ended)}\n")
        raise
