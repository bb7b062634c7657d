"""A person's corrections to a run (see docs/corrections.md): override a node's output
with a downstream policy, answer a HUMAN_REVIEW, rerun a node, roll a field back.

Each correction is checked first (the run and node exist, the value passes every out-edge
schema, no frozen field changes) and refused with nothing written when a check fails; then
it commits in one transaction under the run's lease (`plait.store.corrections`). What must
execute afterwards (a RERUN policy, a review answer, a rerun) is queued in the database as
new activations, and `Correction.needs_run` tells the caller to drive the run with
`Engine.run`, exactly as `plait resume` would after a crash.

How a correction reads the run and holds its lease is `_correction_run.py`; this module decides
what each correction changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from plait.engine.ledger import frozen_by_policy
from plait.errors import Refusal
from plait.model.enums import DownstreamPolicy, FreezePolicy, NodeStatus
from plait.model.nodes import NodeType
from plait.model.output_meta import strip_meta, strip_meta_deep
from plait.runs._correction_run import CorrectionError as CorrectionError  # re-exported: the refusal of a correction
from plait.runs._correction_run import HeldRun, Lease, run_output, turns_branch
from plait.runs._retrieve_corrections import checked_hits
from plait.store import NodeRunRecord, Store
from plait.store.corrections import (
    Change,
    CorrectionConflict,
    CorrectionWriter,
    MarkStale,
    Queue,
    Reopen,
    Reread,
    RunOutput,
    SetOverride,
)
from plait.store.ledger import INPUT, WHOLE
from plait.store.writes import Version


@dataclass
class Correction:
    """What a correction changed: nodes marked stale, nodes queued to run, and whether the run
    must now be driven (`Engine.run`) to execute them."""

    run_id: str
    stale: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Under KEEP: the nodes that read the old value and keep what they made from it."""
    resume: bool = False
    """A review was answered, or a failed node was given its output: the run continues."""
    parent: Correction | None = None
    """In a child run: the correction it made to its parent's node (gathered again), if any."""

    @property
    def needs_run(self) -> bool:
        return bool(self.queued) or self.resume


def _part(value: Any, field_name: str | None) -> Any:
    """`value` as a rollback compares it: whole, or the one field it restores."""
    value = strip_meta_deep(value)
    return value.get(field_name) if field_name is not None and isinstance(value, dict) else value


def _read_other(rec: NodeRunRecord, owner_id: str, held: dict[int, Any], value: Any) -> bool:
    """Whether `rec` read `owner_id` at a version whose value (`held`, by version) is not `value`."""
    read = (rec.consumed or {}).get(owner_id)
    return rec.node_id != owner_id and read is not None and held.get(read) != value


class Corrections:
    """Corrections on one store: override, review, rerun, rollback. Each is checked first and
    refused with nothing written when a check fails; otherwise it commits in one transaction,
    all of it or nothing. A node's original output is never changed. `by` is recorded as who
    corrected; `wait_s`: how long to wait for a run another correction (or an engine) holds
    before refusing."""

    def __init__(self, store: Store, *, by: str = "user", wait_s: float = 10.0, lease_ttl_s: float = 30.0):
        self.store = store
        self.by = by
        self.wait_s = wait_s
        self.lease_ttl_s = lease_ttl_s
        self._writer = CorrectionWriter(store.db)

    # -- the corrections ---------------------------------------------------------------------------

    def override(
        self,
        run_id: str,
        node_id: str,
        value: Any,
        *,
        policy: DownstreamPolicy = DownstreamPolicy.INVALIDATE,
        note: str | None = None,
    ) -> Correction:
        """Replace a node's effective output; `output_json` stays as the model wrote it. A failed
        node (once its run has ended) becomes `overridden` with the value, and the run continues
        from it.

        On a run an engine is executing, the correction is written at once and the engine takes
        it up at its next commit: nodes that read the old value and are still running finish,
        then are marked stale (INVALIDATE) or run again (RERUN, RERUN_ALL); nodes not started
        yet read the corrected value."""
        for _ in range(3):
            try:
                result = self._override(run_id, node_id, value, policy, note)
            except CorrectionConflict:
                continue  # the run ended (or was corrected) under us: read it again
            return self._reach_parent(result, policy)
        raise CorrectionError(f"run {run_id} kept changing while being corrected", "try again")

    def _override(
        self, run_id: str, node_id: str, value: Any, policy: DownstreamPolicy, note: str | None
    ) -> Correction:
        with self._held(run_id, live_ok=True) as (owner, run):
            rec = run.node(node_id)
            failed = rec.status == NodeStatus.FAILED
            if not (rec.status.has_output or failed):
                raise CorrectionError(
                    f"node '{node_id}' of run {run_id} is {rec.status}: there is no output to override",
                    "it is on a branch the run did not take"
                    if rec.status == NodeStatus.SKIPPED
                    else "a paused HUMAN_REVIEW takes `plait review`; a node that has not ended runs on with its run",
                )
            if failed and owner is None:
                raise CorrectionError(
                    f"node '{node_id}' failed and run {run_id} is still finishing its other nodes",
                    "supply its output once the run has ended (a moment from now)",
                    kind=Refusal.CONFLICT,
                )
            if owner is None and frozen_by_policy(run.compiled.nodes[node_id].freeze, FreezePolicy.ON_CONSUME):
                # the engine may be freezing this very value as a reader commits: wait for the run
                raise CorrectionError(
                    f"node '{node_id}' has fields that freeze when read (freeze: on_consume) and run {run_id} "
                    "is executing; correct it once the run has ended or paused",
                )
            stored = self._checked_value(run, node_id, value, rec.effective_output)
            result = Correction(run_id)
            changes: list[Change] = [
                SetOverride(rec.id, stored, self.by, note, str(policy)),
                self._version(run, node_id, "override", stored, rec.id, note),
            ]
            changes.extend(self._apply_policy(run, node_id, policy, result))
            if owner is None:  # the engine executing the run picks the queued nodes up itself
                changes = [c for c in changes if not isinstance(c, Reopen | Reread)]
                result.queued.clear()
            elif failed or turns_branch(run, node_id, stored):
                # a person supplied what the node could not produce, or chose the other branch: the
                # run goes on from it (the engine settles the branches by the new value)
                changes.append(Reopen())
                result.resume = True
            else:
                changes.append(RunOutput(run_output(run, {node_id: stored})))
            self._apply(run_id, owner, changes, result)
            return result

    def _reach_parent(self, result: Correction, policy: DownstreamPolicy | None) -> Correction:
        """A child's output changed at once (nothing left to run in it): its parent's node is
        gathered again (`plait.runs.children`)."""
        if not result.needs_run:
            from plait.runs.children import reach_parent

            result.parent = reach_parent(self, result.run_id, policy)
        return result

    def review(
        self, run_id: str, node_id: str, value: Any = None, *, approve: bool = False, note: str | None = None
    ) -> Correction:
        """Answer a paused HUMAN_REVIEW, or a node its repair hook escalated to a person: approve
        the value under review, or give a corrected one (`note`: why, kept with the answer and
        in the ledger)."""
        with self._held(run_id) as (owner, run):
            rec = run.node(node_id)
            escalated = "escalated" in (rec.input_snapshot or {})  # a repair hook asked for a person
            if run.compiled.nodes[node_id].type != NodeType.HUMAN_REVIEW and not escalated:
                raise CorrectionError(
                    f"node '{node_id}' is a {run.compiled.nodes[node_id].type} node, not a HUMAN_REVIEW "
                    "(nor a node its repair hook escalated)",
                    kind=Refusal.INVALID,
                )
            if rec.status != NodeStatus.PENDING or rec.input_snapshot is None:
                raise CorrectionError(
                    f"node '{node_id}' of run {run_id} is not waiting for a review (it is {rec.status})",
                    "to change an answered review, use `plait override`",
                )
            reviewed = (rec.input_snapshot or {}).get("value")
            chosen = reviewed if approve else value
            stored = self._checked_value(run, node_id, chosen, None)
            result = Correction(run_id, resume=True)
            note = note or ("approved in review" if approve else "corrected in review")
            status = NodeStatus.COMPLETED if approve else NodeStatus.OVERRIDDEN
            changes: list[Change] = [
                SetOverride(rec.id, stored, self.by, note, str(DownstreamPolicy.INVALIDATE), status=status),
                self._version(run, node_id, "review", stored, rec.id, note),
                Reopen(),
            ]
            self._apply(run_id, owner, changes, result)
            return result

    def rerun(self, run_id: str, node_id: str, *, downstream: bool = False, fresh: bool = True) -> Correction:
        """Run a node again as a new activation (the old one stays as history); with `downstream`
        its whole downstream too, else its direct downstream is marked stale.

        `fresh`: the node's model call is not answered from the response cache (the person asked
        for a new answer); the nodes after it still are, whenever their input is unchanged."""
        with self._held(run_id) as (owner, run):
            self._known(run, node_id)
            self._refuse_frozen(run, node_id, None, "rerun")
            result = Correction(run_id)
            changes: list[Change] = [*self._queue(run, [node_id], result, no_cache=fresh)]
            policy = DownstreamPolicy.RERUN_ALL if downstream else DownstreamPolicy.INVALIDATE
            changes.extend(self._apply_policy(run, node_id, policy, result))
            changes.append(Reopen())
            self._apply(run_id, owner, changes, result)
            return result

    def rollback(
        self, run_id: str, owner_id: str, field_name: str | None, to_version: int, *, cascade: bool = False
    ) -> Correction:
        """Restore a value (or one field of it) **and** its frozen state as of `to_version`; every
        node run that read a newer version is marked stale, or with `cascade` runs again, and
        everything after it (a rerun, not a rollback of each: a dependent may never have run on
        the restored value; where it did, the response cache gives its earlier answer back
        without a model call). Logged as a `rollback` version."""
        with self._held(run_id) as (owner, run):
            if owner_id != INPUT:
                self._known(run, owner_id)
            history = self.store.ledger.history(run_id, owner_id)
            target = next((v for v in history if v.version == to_version), None)
            if target is None:
                have = ", ".join(str(v.version) for v in history) or "none"
                raise CorrectionError(
                    f"{owner_id} of run {run_id} has no version {to_version}",
                    f"its versions: {have}",
                    kind=Refusal.NOT_FOUND,
                )
            current = history[-1]
            if field_name is None:
                value, frozen = target.value, dict(target.frozen)
            else:
                if not isinstance(current.value, dict) or not isinstance(target.value, dict):
                    raise CorrectionError(
                        f"{owner_id} holds no object with fields; roll back the whole value", kind=Refusal.INVALID
                    )
                value = {**current.value, field_name: target.value.get(field_name)}
                if field_name not in target.value:
                    value.pop(field_name)
                frozen = {k: v for k, v in current.frozen.items() if k != field_name}
                if field_name in target.frozen:
                    frozen[field_name] = target.frozen[field_name]
            label = owner_id if field_name is None else f"{owner_id}.{field_name}"
            reason = f"rollback of {label} to version {to_version}"
            version = Version(run_id, owner_id, current.version + 1, "rollback", self.by, frozen, None, value, reason)
            result = Correction(run_id)
            changes: list[Change] = [version]
            if owner_id != INPUT:
                rec = run.node(owner_id)
                changes.insert(0, SetOverride(rec.id, value, self.by, reason, str(DownstreamPolicy.INVALIDATE)))
                changes.append(RunOutput(run_output(run, {owner_id: value})))
            held = {v.version: _part(v.value, field_name) for v in history}  # (one field: what it changes)
            restored = _part(value, field_name)
            # whoever read a value other than the one restored (a reader kept on an older one too)
            readers = [
                r for r in run.newest.values() if r.node_id != owner_id and _read_other(r, owner_id, held, restored)
            ]
            ended = [r for r in readers if r.status != NodeStatus.PENDING]
            if cascade and ended:
                built = [r.node_id for r in ended]
                again = list(dict.fromkeys([*built, *run.compiled.downstream(built)]))
                changes.extend([*self._queue(run, again, result), Reopen()])
            elif ended:
                result.stale.extend(r.node_id for r in ended)
                changes.append(MarkStale([r.id for r in ended]))
            changes.extend(self._reread(run, [r.node_id for r in readers if r not in ended], result))
            self._apply(run_id, owner, changes, result)
        return self._reach_parent(result, DownstreamPolicy.INVALIDATE)

    def _apply(self, run_id: str, owner: str | None, changes: list[Change], result: Correction) -> None:
        """Write `changes`; the run is put back to `pending` only when the correction left it
        something to execute: a run reopened with nothing queued would wait for a drive that
        nobody starts (`needs_run` is what the surfaces drive by)."""
        if not result.needs_run:
            changes = [c for c in changes if not isinstance(c, Reopen)]
        self._writer.apply(run_id, owner, changes)

    # -- checks ------------------------------------------------------------------------------------

    def _known(self, run: HeldRun, node_id: str) -> None:
        if node_id not in run.compiled.nodes:
            run.node(node_id)  # raises with the list of nodes

    def _checked_value(self, run: HeldRun, node_id: str, value: Any, current: Any) -> Any:
        if run.compiled.nodes[node_id].type == NodeType.RETRIEVE:
            value = checked_hits(self.store, node_id, value, strip_meta(current))
        contract = run.compiled.contracts[node_id]
        problems = contract.violations(value)
        if problems:
            raise CorrectionError(
                f"the value for node '{node_id}' does not match its out-edge schemas ({len(problems)} errors)",
                "fix the listed fields; `plait graphs show` prints the schemas",
                problems,
                kind=Refusal.INVALID,
            )
        if current is not None:
            self._refuse_frozen(run, node_id, strip_meta(value), "override")
        return contract.annotate(value)

    def _refuse_frozen(self, run: HeldRun, node_id: str, new: Any, action: str) -> None:
        """A frozen field may not change (`new` None: every frozen field would)."""
        frozen = run.frozen(node_id)
        if not frozen:
            return
        current = strip_meta(run.newest[node_id].effective_output) if node_id in run.newest else None
        for name, entry in frozen.items():
            if new is not None and name != WHOLE:
                if isinstance(new, dict) and isinstance(current, dict) and new.get(name) == current.get(name):
                    continue
            elif new is not None and new == current:
                continue
            label = node_id if name == WHOLE else f"{node_id}.{name}"
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(entry.get("at") or 0)))
            raise CorrectionError(
                f"cannot {action} '{node_id}': field {label} is frozen (freeze: {entry.get('policy')}, "
                f"by {entry.get('by')} at {when})",
                f"roll the field back to a version before the freeze: `plait rollback {run.record.id} {label} "
                "--to-version N` (`plait runs show RUN_ID --ledger` lists the versions)",
            )

    # -- building the changes ----------------------------------------------------------------------

    def _version(
        self, run: HeldRun, owner_id: str, kind: str, value: Any, node_run_id: str, reason: str | None
    ) -> Version:
        return Version(
            run.record.id,
            owner_id,
            run.version(owner_id) + 1,
            kind,
            self.by,
            run.frozen(owner_id),
            node_run_id,
            value,
            reason,
        )

    def _apply_policy(self, run: HeldRun, node_id: str, policy: DownstreamPolicy, result: Correction) -> list[Change]:
        direct = run.readers(node_id)
        if policy == DownstreamPolicy.KEEP:
            done = (NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN)
            result.kept.extend(n for n in direct if n in run.newest and run.newest[n].status in done)
            return []
        if policy == DownstreamPolicy.INVALIDATE:
            return [*self._stale(run, direct, result), *self._reread(run, direct, result)]
        if policy == DownstreamPolicy.RERUN:
            beyond = [n for n in run.compiled.downstream([node_id]) if n not in direct]
            return [
                *self._queue(run, direct, result), *self._reread(run, direct, result),
                *self._stale(run, beyond, result), Reopen(),
            ]  # fmt: skip
        everything = list(dict.fromkeys([*direct, *run.compiled.downstream([node_id])]))
        return [*self._queue(run, everything, result), *self._reread(run, everything, result), Reopen()]

    def _reread(self, run: HeldRun, node_ids: list[str], result: Correction) -> list[Change]:
        """Reviews (and escalated nodes) among `node_ids` waiting for a person: each is opened
        again on the current values, so that nobody approves a value corrected away."""
        changes: list[Change] = []
        for node_id in node_ids:
            rec = run.newest.get(node_id)
            if rec is None or rec.status != NodeStatus.PENDING or rec.input_snapshot is None:
                continue
            changes.append(Reread(rec.id, Queue(node_id, rec.activation + 1)))
            result.queued.append(node_id)
        return [*changes, Reopen()] if changes else []

    def _stale(self, run: HeldRun, node_ids: list[str], result: Correction) -> list[Change]:
        done = (NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN)
        recs = [run.newest[n] for n in node_ids if n in run.newest and run.newest[n].status in done]
        result.stale.extend(r.node_id for r in recs)
        return [MarkStale([r.id for r in recs])] if recs else []

    def _queue(self, run: HeldRun, node_ids: list[str], result: Correction, *, no_cache: bool = False) -> list[Change]:
        """A new activation of every node that has run (one that never ran simply runs; one
        running or waiting is left to the engine executing the run); `no_cache`: not answered
        from the response cache."""
        changes: list[Change] = []
        for node_id in node_ids:
            rec = run.newest.get(node_id)
            if rec is None or not rec.status.ended:
                continue
            changes.append(Queue(node_id, rec.activation + 1, no_cache))
            result.queued.append(node_id)
        return changes

    # -- the run's lease ---------------------------------------------------------------------------

    def _held(self, run_id: str, *, live_ok: bool = False) -> Lease:
        return Lease(self.store, run_id, live_ok=live_ok, wait_s=self.wait_s, lease_ttl_s=self.lease_ttl_s)
