"""Forks: a deep copy of a graph that remembers where it came
from, a three-way diff against its parent, and a selective merge of the parent's changes.

The three sides of a diff are the parent as it was when forked (`parent_def_ver_at_fork`),
the parent now (its latest version) and the fork now. Items are compared one by one (nodes,
edges, schemas, migrations, by id), field by field inside an item. A merge takes the parent's
current value of each field of the chosen items, and refuses a field the fork changed too
(unless both made the same change): a person's customisation is never overwritten silently.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from plait.compile import compile_data
from plait.compile.dump import graph_to_data
from plait.errors import PlaitError, Refusal
from plait.evolve.save import save_graph
from plait.evolve.value_paths import changed_paths
from plait.model import GraphDef, SourceType
from plait.model.graph import SLUG_RULE, is_graph_slug
from plait.store import Store, StoredGraph, StoreError

SECTIONS = {"node": "nodes", "edge": "edges", "schema": "schemas", "migration": "migrations"}
PROMPT_FIELDS = ("system_prompt", "user_prompt_tpl", "review_prompt", "transform_expr", "condition_expr")


class ForkError(PlaitError):
    """The fork operation is refused; nothing was written. `details` lists e.g. conflicts."""


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of an item as the fork's base, the parent now and the fork now have it. A
    conflict: parent and fork both changed it, to different values."""

    name: str
    base: Any
    parent: Any
    fork: Any

    @property
    def parent_changed(self) -> bool:
        return bool(self.parent != self.base)

    @property
    def fork_changed(self) -> bool:
        return bool(self.fork != self.base)

    @property
    def conflict(self) -> bool:
        return self.parent_changed and self.fork_changed and self.parent != self.fork

    def changes(self) -> list[dict[str, Any]]:
        """Of a field holding an object (a schema, a node's settings), each path whose value
        differs between the sides, with each side's value; empty for a plain value."""
        if not any(isinstance(v, dict) for v in (self.base, self.parent, self.fork)):
            return []
        return changed_paths(self.base, self.parent, self.fork)


@dataclass
class ItemDiff:
    """One node / edge / schema / migration on the three sides."""

    kind: str
    id: str
    parent: str
    """What the parent did since the fork: same | added | removed | changed."""
    fork: str
    """What the fork did since the fork: same | added | removed | changed."""
    fields: list[FieldChange] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.id if self.kind == "node" else f"{self.kind}:{self.id}"


@dataclass
class ForkDiff:
    """A fork compared with its parent, item by item: what a merge can take, and what conflicts."""

    fork: StoredGraph
    base_version: int
    parent_version: int
    items: list[ItemDiff]
    parent: GraphDef
    """The parent now (what a merge takes its changes from)."""

    @property
    def parent_moved(self) -> bool:
        return self.parent_version > self.base_version

    def to_json(self) -> dict[str, Any]:
        """The `plait graphs diff --json` document (also `GET /api/graphs/{id}/diff`)."""
        return {
            "fork": self.fork.slug,
            "fork_version": self.fork.version,
            "parent_at_fork": self.base_version,
            "parent_now": self.parent_version,
            "parent_moved": self.parent_moved,
            "items": [
                {
                    "key": i.key,
                    "kind": i.kind,
                    "id": i.id,
                    "parent": i.parent,
                    "fork": i.fork,
                    "fields": [
                        {
                            "name": f.name,
                            "base": f.base,
                            "parent": f.parent,
                            "fork": f.fork,
                            "conflict": f.conflict,
                            "changes": f.changes(),
                        }
                        for f in i.fields
                    ],
                }
                for i in self.items
            ],
        }


def fork_graph(store: Store, ref: str, name: str | None = None, *, display_name: str | None = None) -> StoredGraph:
    """Deep-copy the latest version of `ref` into a new graph (version 1): `system_fork` for a
    system graph, `user` otherwise, remembering the parent and its versions at the fork.

    `name` is the fork's id; without it the id is derived from `display_name` (a free text the
    fork is shown by) or from the parent's id, made unique."""
    parent = store.graphs.live(ref)
    wanted = (_slugify(display_name) if display_name else None) or f"{parent.slug.removeprefix('plait.')}_fork"
    slug = name or free_graph_id(store, wanted)
    # model_copy below does not validate: an id the graph model refuses would be stored and
    # then break every read of the graph list.
    if not is_graph_slug(slug):
        raise ForkError(f"'{slug}' cannot be a graph id", SLUG_RULE, kind=Refusal.INVALID)
    try:
        store.graphs.get(slug)
    except StoreError:
        pass
    else:
        raise ForkError(f"a graph with the id '{slug}' exists already", "choose another id for the fork")
    kind = SourceType.SYSTEM_FORK if parent.source_type == SourceType.SYSTEM else SourceType.USER
    graph = parent.graph.model_copy(
        update={
            "id": slug,
            "name": display_name or f"{parent.graph.name or parent.slug} (fork)",
            "source_type": kind,
            "parent_def_id": parent.graph_id,
            "parent_def_ver_at_fork": parent.version,
            "parent_schema_ver_at_fork": parent.schema_version,
        }
    )
    return save_graph(store, graph, source_type=str(kind)).stored


def _slugify(text: str) -> str | None:
    """`My fork` -> `my_fork`: what a display name becomes as an id (None when nothing is left)."""
    slug = re.sub(r"[^a-z0-9_.-]+", "_", text.strip().lower()).strip("_.-")
    return slug[:120] or None


def free_graph_id(store: Store, wanted: str) -> str:
    """`wanted`, or with `_2`, `_3`, ... the first id no graph has yet."""
    for n in range(1, 1000):
        slug = wanted if n == 1 else f"{wanted}_{n}"
        try:
            store.graphs.get(slug)
        except StoreError:
            return slug
    return f"{wanted}_{uuid.uuid4().hex[:8]}"


def parent_of(store: Store, fork: StoredGraph) -> tuple[StoredGraph, StoredGraph]:
    """(the parent as forked, the parent now)."""
    graph = fork.graph
    if graph.parent_def_id is None or graph.parent_def_ver_at_fork is None:
        raise ForkError(f"graph '{fork.slug}' is not a fork", "`plait graphs fork ID` makes one", kind=Refusal.INVALID)
    base = store.graphs.get(graph.parent_def_id, graph.parent_def_ver_at_fork)
    return base, store.graphs.get(graph.parent_def_id)


def diff_fork(store: Store, ref: str, against: int | None = None) -> ForkDiff:
    """Three-way diff of a fork: parent at fork (or at `against`) / parent now / fork now."""
    fork = store.graphs.live(ref)
    base, now = parent_of(store, fork)
    if against is not None:
        base = store.graphs.get(base.graph_id, against)
    return ForkDiff(fork, base.version, now.version, _items(base.graph, now.graph, fork.graph), now.graph)


def merge_from_parent(store: Store, ref: str, keys: list[str]) -> StoredGraph:
    """Apply the parent's changes to the chosen items (`NODE_ID`, `schema:ID`, `edge:ID`,
    `migration:ID`) as a new version of the fork; refused with the conflicting fields."""
    diff = diff_fork(store, ref)
    by_key = {item.key: item for item in diff.items}
    unchanged = [k for k in keys if k not in by_key and k in _keys(diff.fork.graph, diff.parent)]
    if unchanged:
        raise ForkError(
            f"the parent did not change {', '.join(unchanged)} between version {diff.base_version} (forked) and "
            f"version {diff.parent_version} (now): there is nothing to merge",
            "`plait graphs diff` lists what the parent changed",
            kind=Refusal.CONFLICT,
        )
    unknown = [k for k in keys if k not in by_key]
    if unknown:
        raise ForkError(
            f"nothing named {', '.join(unknown)} in the fork or its parent",
            "name nodes by id, others as schema:ID, edge:ID or migration:ID (`plait graphs diff` lists them)",
            kind=Refusal.NOT_FOUND,
        )
    conflicts = [
        f"{key}.{f.name}: parent {f.parent!r}, fork {f.fork!r}"
        for key in keys
        for f in by_key[key].fields
        if f.conflict
    ]
    if conflicts:
        raise ForkError(
            f"the fork changed the same fields as the parent ({len(conflicts)} conflicts); nothing merged",
            "edit the fork by hand, or re-fork (`plait graphs merge FORK --refork --confirm`, loses your changes)",
            conflicts,
        )
    data = graph_to_data(diff.fork.graph)
    now = graph_to_data(diff.parent)
    for key in keys:
        _apply(data, now, by_key[key])
    return _save_fork(store, diff.fork, data)


def refork(store: Store, ref: str) -> StoredGraph:
    """Replace the fork's content by its parent's latest (a new fork version; customisation lost)."""
    fork = store.graphs.live(ref)
    _, now = parent_of(store, fork)
    data = graph_to_data(now.graph)
    data.update({"id": fork.slug, "name": fork.graph.name})
    data.update(parent_def_ver_at_fork=now.version, parent_schema_ver_at_fork=now.schema_version)
    return _save_fork(store, fork, data)


def _save_fork(store: Store, fork: StoredGraph, data: dict[str, Any]) -> StoredGraph:
    data["source_type"] = fork.source_type
    result = compile_data(data)
    if not result.valid or result.graph is None:
        raise ForkError(
            f"the merged graph '{fork.slug}' would not be valid; nothing saved",
            "merge the items it depends on too (e.g. a node with the schema its edges use)",
            [d.format() for d in result.errors],
            kind=Refusal.INVALID,
        )
    graph = result.graph.model_copy(update={"parent_def_id": fork.graph.parent_def_id})
    if data.get("parent_def_ver_at_fork") is None:
        graph = graph.model_copy(
            update={
                "parent_def_ver_at_fork": fork.graph.parent_def_ver_at_fork,
                "parent_schema_ver_at_fork": fork.graph.parent_schema_ver_at_fork,
            }
        )
    return save_graph(store, graph, source_type=fork.source_type).stored


# -- comparing items -------------------------------------------------------------------------------


def _items(base: GraphDef, parent: GraphDef, fork: GraphDef) -> list[ItemDiff]:
    sides = [_index(graph_to_data(g)) for g in (base, parent, fork)]
    items: list[ItemDiff] = []
    for kind in SECTIONS:
        ids = list(dict.fromkeys(k for side in sides for k in side[kind]))
        for item_id in ids:
            b, p, f = (side[kind].get(item_id) for side in sides)
            item = ItemDiff(kind, item_id, _status(b, p), _status(b, f))
            names = list(dict.fromkeys(k for v in (b, p, f) if v for k in v))
            item.fields = [
                FieldChange(n, _get(b, n), _get(p, n), _get(f, n))
                for n in names
                if not (_get(b, n) == _get(p, n) == _get(f, n))
            ]
            if item.parent != "same" or item.fork != "same":
                items.append(item)
    return items


def _keys(*graphs: GraphDef) -> set[str]:
    """The merge keys of every item of `graphs` (`NODE_ID`, `schema:ID`, `edge:ID`, `migration:ID`)."""
    return {
        item_id if kind == "node" else f"{kind}:{item_id}"
        for graph in graphs
        for kind, items in _index(graph_to_data(graph)).items()
        for item_id in items
    }


def _index(data: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, section in SECTIONS.items():
        out[kind] = {_item_id(kind, entry): entry for entry in data.get(section) or []}
    return out


def _item_id(kind: str, entry: dict[str, Any]) -> str:
    if kind == "edge":
        return str(entry.get("id") or f"{entry.get('source')}->{entry.get('target')}")
    if kind == "migration":
        return f"{entry.get('schema_id')}@{entry.get('from_version')}"
    return str(entry.get("id"))


def _status(base: Any, side: Any) -> str:
    if base is None:
        return "same" if side is None else "added"
    if side is None:
        return "removed"
    return "same" if base == side else "changed"


def _get(entry: dict[str, Any] | None, name: str) -> Any:
    return None if entry is None else entry.get(name)


def _apply(data: dict[str, Any], parent_now: dict[str, Any], item: ItemDiff) -> None:
    """Set the fork's item to the parent's current one (field by field), or remove it."""
    section = SECTIONS[item.kind]
    entries = data.setdefault(section, [])
    mine = next((e for e in entries if _item_id(item.kind, e) == item.id), None)
    theirs = next((e for e in parent_now.get(section) or [] if _item_id(item.kind, e) == item.id), None)
    if theirs is None:
        if mine is not None:
            entries.remove(mine)
        return
    if mine is None:
        entries.append(dict(theirs))
        return
    for change in item.fields:
        if change.parent_changed:
            if change.name in theirs:
                mine[change.name] = theirs[change.name]
            else:
                mine.pop(change.name, None)
