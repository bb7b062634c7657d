"""Reading a run as people see it: every activation, each one's effective output at the
graph's current schema versions, which activation is current, and the graph's newest version.
`plait runs show` and the HTTP routes that show a run read it here."""

from __future__ import annotations

from dataclasses import dataclass

from plait.evolve.read import Outputs, read_outputs
from plait.model.enums import NodeStatus
from plait.store import NodeRunRecord, RunRecord, Store, current_activations


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as a reader sees it: every activation, each one's effective output (migrated to
    the graph's current schema versions unless read raw), and which activation is current."""

    run: RunRecord
    nodes: list[NodeRunRecord]
    outputs: Outputs
    current: dict[str, NodeRunRecord]
    """Per node id, its newest activation."""
    latest_version: int
    """The graph's newest version (the run stays pinned to `run.graph_version`)."""

    @property
    def stale(self) -> list[str]:
        return [node_id for node_id, n in self.current.items() if n.status == NodeStatus.STALE]

    def is_current(self, record: NodeRunRecord) -> bool:
        return self.current[record.node_id].id == record.id


def read_run(store: Store, run_id: str, *, raw: bool = False) -> RunView:
    """The run `run_id` (NotFoundError) with its node runs. Always readable: an output no
    migration brings to today's schema is given as stored, with its notice (`outputs.outdated`)."""
    run = store.runs.get(run_id)
    nodes = store.runs.node_runs(run_id)
    outputs = read_outputs(store, run, nodes, raw=raw)
    latest = store.graphs.latest_version(run.graph_id)
    return RunView(run, nodes, outputs, current_activations(nodes), latest)
