"""Graph structure: adjacency, Kahn levels, cycles, entries/exits, ancestry.

Ancestor sets are Python ints used as bitsets (bit i = node i), so checking
"is X upstream of Y" for every template reference of a 1,000-node graph stays
linear-ish instead of materialising a million-entry set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass
class Topology:
    """The structure of a graph's nodes and edges, worked out once by `build`.

    - `order` is the node ids as given; `preds` and `succs` list each node's neighbours (an edge
      naming an unknown node is left out; a repeated edge counts as often as it is given).
    - `levels` are Kahn levels: a node's predecessors are all in earlier levels. Nodes on a
      cycle or downstream of one are in no level but in `cyclic`.
    - `is_upstream` reads ancestor sets computed by `build`, so it stays cheap for large graphs;
      it is False for a node in `cyclic`.
    Build it with `build` and do not change it: the ancestor sets are not recomputed.
    """

    order: list[str]
    """Node ids in file order."""
    preds: dict[str, list[str]] = field(default_factory=dict)
    succs: dict[str, list[str]] = field(default_factory=dict)
    levels: list[list[str]] = field(default_factory=list)
    """Kahn levels; nodes on or behind a cycle are absent."""
    cyclic: list[str] = field(default_factory=list)
    """Nodes Kahn could not order (on a cycle or downstream of one)."""
    _index: dict[str, int] = field(default_factory=dict)
    _ancestors: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, node_ids: Sequence[str], edges: Iterable[tuple[str, str]]) -> Topology:
        topo = cls(order=list(node_ids))
        topo.preds = {n: [] for n in node_ids}
        topo.succs = {n: [] for n in node_ids}
        topo._index = {n: i for i, n in enumerate(node_ids)}
        for source, target in edges:
            if source in topo.succs and target in topo.preds:
                topo.succs[source].append(target)
                topo.preds[target].append(source)
        topo._kahn()
        return topo

    @property
    def entries(self) -> list[str]:
        return [n for n in self.order if not self.preds[n]]

    @property
    def exits(self) -> list[str]:
        return [n for n in self.order if not self.succs[n]]

    def _kahn(self) -> None:
        indegree = {n: len(p) for n, p in self.preds.items()}
        level = [n for n in self.order if indegree[n] == 0]
        placed = 0
        while level:
            self.levels.append(level)
            placed += len(level)
            following: list[str] = []
            for node in level:
                for succ in self.succs[node]:
                    indegree[succ] -= 1
                    if indegree[succ] == 0:
                        following.append(succ)
            level = following
        if placed < len(self.order):
            done = {n for lvl in self.levels for n in lvl}
            self.cyclic = [n for n in self.order if n not in done]
        self._compute_ancestors()

    def _compute_ancestors(self) -> None:
        for level in self.levels:
            for node in level:
                mask = 0
                for pred in self.preds[node]:
                    mask |= self._ancestors.get(pred, 0) | (1 << self._index[pred])
                self._ancestors[node] = mask

    def is_upstream(self, candidate: str, node: str) -> bool:
        """True when `candidate` is a (transitive) predecessor of `node`."""
        index = self._index.get(candidate)
        return index is not None and bool(self._ancestors.get(node, 0) >> index & 1)

    def ancestors(self, node: str) -> list[str]:
        """Every (transitive) predecessor of `node`, in file order (none for a node in `cyclic`)."""
        mask = self._ancestors.get(node, 0)
        return [n for n in self.order if mask >> self._index[n] & 1] if mask else []

    def descendants(self, node: str) -> set[str]:
        seen: set[str] = set()
        stack = [node]
        while stack:
            for succ in self.succs[stack.pop()]:
                if succ not in seen:
                    seen.add(succ)
                    stack.append(succ)
        return seen

    def find_cycles(self) -> list[list[str]]:
        """One representative cycle per strongly connected component among the cyclic nodes."""
        cyclic = set(self.cyclic)
        cycles: list[list[str]] = []
        covered: set[str] = set()
        for start in self.cyclic:
            if start in covered:
                continue
            path = self._cycle_from(start, cyclic)
            if path:
                covered.update(path)
                cycles.append(path)
        return cycles

    def _cycle_from(self, start: str, allowed: set[str]) -> list[str] | None:
        # iterative DFS that returns the first back-edge cycle reachable from `start`
        on_path: dict[str, int] = {}
        finished: set[str] = set()
        path: list[str] = []
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                on_path[node] = len(path)
                path.append(node)
            succs = [s for s in self.succs[node] if s in allowed]
            if i < len(succs):
                stack.append((node, i + 1))
                nxt = succs[i]
                if nxt in on_path:
                    return path[on_path[nxt] :]
                if nxt not in finished:
                    stack.append((nxt, 0))
            else:
                path.pop()
                del on_path[node]
                finished.add(node)
        return None
