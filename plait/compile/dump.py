"""Write a GraphDef back to YAML: readable (block strings for prompts) and lossless on reload."""

from __future__ import annotations

from typing import Any

import yaml

from plait.model.common import Position
from plait.model.graph import GraphDef


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, so prompts stay readable in exported files."""


_YAML_BREAKS = ("\x85", "\u2028", "\u2029")
"""YAML 1.1 line breaks besides \\n: PyYAML's emitter writes NEL raw outside double quotes, so it reads back
as a space or a newline. Double quotes escape all three (`\\N`, `\\L`, `\\P`)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(c in value for c in _YAML_BREAKS):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value and not any(c in value for c in "\r\t") and value == value.rstrip(" "):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def graph_to_data(graph: GraphDef) -> dict[str, Any]:
    """Plain data in file-format field names (`schema`, not `schema_`); defaults left out, but
    for a node's position and a schema's version, which are always said in full."""
    data = graph.model_dump(mode="json", by_alias=True, exclude_defaults=True, exclude_none=True)
    # `type` has a per-class default, so exclude_defaults drops it; it is the discriminator: put it back.
    # A position keeps both coordinates: an editor reading `{x: 120}` for a node at y 0 drew it nowhere.
    data["nodes"] = [
        {"id": n.id, "type": str(n.type), **d, **_position(n.position)}
        for n, d in zip(graph.nodes, data.get("nodes", []), strict=True)
    ]
    data["edges"] = [_short_edge(e) for e in data.get("edges", [])]
    # A schema's version is what edges and stored outputs are checked against: always written, 1.0.0 too.
    if graph.schemas:
        data["schemas"] = [
            {"id": entry.id, "version": entry.version, **d}
            for entry, d in zip(graph.schemas, data.get("schemas", []), strict=True)
        ]
    return {"plait": graph.plait, **data}


def _position(position: Position | None) -> dict[str, Any]:
    if position is None:
        return {}
    return {"position": {"x": _number(position.x), "y": _number(position.y)}}


def _number(value: float) -> float | int:
    """120, not 120.0: what an editor wrote, as it wrote it."""
    return int(value) if value.is_integer() else value


def _short_edge(edge: dict[str, Any]) -> dict[str, Any]:
    out = {"id": edge.pop("id", None), "source": edge.pop("source_node_id"), "target": edge.pop("target_node_id")}
    return {k: v for k, v in {**out, **edge}.items() if v is not None}


def dump_document(data: dict[str, Any]) -> str:
    """Graph-file data (a skill's document with its `skill:` block, say) as YAML, as `dump_yaml` writes it."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def dump_yaml(graph: GraphDef) -> str:
    """`graph` as graph-file YAML (file field names, defaults left out) that loads back to an equal graph."""
    return yaml.dump(graph_to_data(graph), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
