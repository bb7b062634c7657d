"""Before each node of a run executes: a slot among the run's `max_concurrent_nodes`, then the
resource gate's decision on it (`plait.engine.resources`), so that resources are decided node by
node, in every run this engine drives: new, resumed, reopened by a correction or taken over.

- A node claimed beyond the run's slots waits its turn (claimed, not executing). WAIT and
  HUMAN_REVIEW take no slot and are not decided: they do no work, they wait. SUBGRAPH, MAP and
  LOOP take a slot of their run but are not decided: their work is child runs, whose nodes
  are decided one by one and hold slots of their own run (a MAP's items are child runs, at most
  its `max_concurrency` at once, each with its own `max_concurrent_nodes`), so no run waits
  for a slot a run below it holds.
- The CPU rule holds only nodes of `CPU_WORK` (CODE, TOOL, PARSE, CHUNK, INDEX, RETRIEVE) of
  runs their caller does not bound (a MAP's items, a batch's records and a worker's runs are
  bounded: the CPU work they add is what their caller chose).
- A node the gate queues gives its slot back while it waits (re-probing every `RECHECK_S`),
  and takes one again before it is decided anew: a queued node never holds a slot another
  needs. Queued for the CPU it waits at least `cpu_queue_min_s` (the machine's breather), then
  starts as soon as the CPU is under the threshold, at the latest after `cpu_queue_max_s`;
  queued for another rule it starts as soon as the rule passes, at the latest after
  `queue_max_s`.
- A pause (or a reject: the run has begun, so it pauses, keeping what it did) raises
  `ResourcesShort`: the engine gives the run up `paused` with the reason, every slot released;
  `plait resume` decides again before each node.
- Degrade sends the run's model calls to `[pool] degrade_to` and the node executes.
Every decision but a plain execute is recorded on the node run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

from plait.engine.llm_condition import asker
from plait.engine.resources import CPU_WORK, RECHECK_S, Probe, Queued, ResourceGate, Subject, Verdict, decide
from plait.errors import PlaitError
from plait.model.nodes import NodeBase, NodeType

WAITING_TYPES = frozenset({NodeType.WAIT, NodeType.HUMAN_REVIEW})
"""Nodes that only wait: no slot, no decision."""
CONTAINER_TYPES = frozenset({NodeType.SUBGRAPH, NodeType.MAP, NodeType.LOOP})
"""Nodes whose work is child runs: a slot, no decision (their child runs' nodes are decided)."""


class ResourcesShort(PlaitError):
    """A node's resource decision paused its run."""

    code = "resources_short"

    def __init__(self, run_id: str, node_id: str, verdict: Verdict):
        super().__init__(
            f"run {run_id} paused before node '{node_id}' for lack of resources: {verdict.reason}",
            f"it is resumable: `plait resume {run_id}` (or POST /api/runs/{run_id}/resume) decides again "
            "and continues once the resource is back",
        )
        self.node_id = node_id
        self.verdict = verdict

    def error(self) -> dict[str, str]:
        """The run's error while it is paused so: what stopped it and how to continue."""
        return {"kind": "resources", "rule": self.verdict.rule, "node_id": self.node_id,
                "message": f"{self.message}; {self.hint}"}  # fmt: skip


Kind = Literal["model", "work", "light"]


def subject_kind(node: NodeBase) -> Kind | None:
    """How the gate decides `node` (`plait.engine.resources.Subject`), or not at all (None)."""
    if node.type in WAITING_TYPES or node.type in CONTAINER_TYPES:
        return None
    if node.type == NodeType.LLM_CALL or asker(node) is not None:
        return "model"
    return "work" if str(node.type) in CPU_WORK else "light"


class NodeGate:
    """One run's slots and the decisions on its nodes (module docstring). `degraded`: the runs
    whose model calls go to `degrade_to` (the runtime's set)."""

    def __init__(self, gate: ResourceGate | None, run_id: str, slots: int, *, bounded: bool, degraded: set[str]):
        self.gate, self.run_id, self.bounded, self.degraded = gate, run_id, bounded, degraded
        self.slots = asyncio.Semaphore(slots)

    async def enter(self, node: NodeBase, node_run_id: str) -> Callable[[], None]:
        """Wait for a slot and the gate's go; the callback that gives them back once the node
        has executed and its result is recorded. Raises `ResourcesShort` for a pause."""
        kind = subject_kind(node)
        slot = node.type not in WAITING_TYPES
        if kind is None or self.gate is None:
            if slot:
                await self.slots.acquire()
            return self._holding(slot, working=False)
        await self._decided(kind, node, node_run_id)
        return self._holding(True, working=kind == "work")

    async def _decided(self, kind: Kind, node: NodeBase, node_run_id: str) -> None:
        """Return once `node` may execute, holding its slot."""
        gate = self.gate
        assert gate is not None
        queued: Queued | None = None
        while True:
            config = gate.config
            waited = gate.clock() - queued.since if queued is not None else 0.0
            if queued is not None and queued.first.rule == "cpu" and waited < config.cpu_queue_min_s:
                await gate.sleep(config.cpu_queue_min_s - waited)  # the breather, whatever the CPU does meanwhile
                continue
            await self.slots.acquire()
            went = False
            try:
                found, seen = await self._verdict(kind, node)
                waited = gate.clock() - queued.since if queued is not None else 0.0
                went = await self._goes(found, queued, seen, waited, node_run_id)
            finally:
                if not went:
                    self.slots.release()  # a queued or paused node holds no slot another node needs
            if went:
                return
            assert found is not None
            if found.action in ("pause", "reject"):
                await self._pause(found, seen, node, node_run_id)
            if queued is None:
                queued = Queued(gate.clock(), await gate.record(self.run_id, found, seen, node_run_id))
            await gate.sleep(RECHECK_S)
            if found.rule != "cpu":
                gate.forget()

    async def _verdict(self, kind: Kind, node: NodeBase) -> tuple[Verdict | None, Probe]:
        """The gate's verdict on `node` now, and the probe it was made on."""
        assert self.gate is not None
        seen = await self.gate.probed()
        busy = self.gate.working if kind == "work" else 0
        return decide(self.gate.config, seen, Subject(kind, node.priority, self.bounded, busy)), seen

    async def _goes(
        self, found: Verdict | None, queued: Queued | None, seen: Probe, waited: float, node_run_id: str
    ) -> bool:
        """Whether the node executes now on `found` (recording why when it is not a plain execute)."""
        gate = self.gate
        assert gate is not None
        if found is None or found.action == "execute":
            if queued is not None:
                ended = Verdict("execute", queued.first.rule, f"started after queueing {waited:.1f} s")
                await gate.record(self.run_id, ended, seen, node_run_id)
            return True
        if found.action == "degrade":
            if self.run_id not in self.degraded:  # one decision per run: its calls stay degraded
                self.degraded.add(self.run_id)
                await gate.record(self.run_id, found, seen, node_run_id)
            return True
        limit = gate.config.cpu_queue_max_s if found.rule == "cpu" else gate.config.queue_max_s
        if found.action == "queue" and queued is not None and waited >= limit:
            reason = f"started after queueing {limit:g} s, the most a node waits: {found.reason}"
            await gate.record(self.run_id, Verdict("execute", found.rule, reason), seen, node_run_id)
            return True
        return False

    async def _pause(self, found: Verdict, seen: Probe, node: NodeBase, node_run_id: str) -> None:
        """Record the pause on the node run and raise it (a reject pauses: the run has begun)."""
        assert self.gate is not None
        if found.action == "reject":
            found = Verdict("pause", found.rule, f"{found.reason} (the run had begun: paused, not rejected)")
        await self.gate.record(self.run_id, Verdict("pause", found.rule, found.reason), seen, node_run_id)
        raise ResourcesShort(self.run_id, node.id, found)

    def _holding(self, slot: bool, *, working: bool) -> Callable[[], None]:
        """The callback giving back what a node holds while it executes (once)."""
        gate = self.gate if working else None
        if gate is not None:
            gate.working += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                if slot:
                    self.slots.release()
                if gate is not None:
                    gate.working -= 1

        return release
