"""The graph definition file format (`PromptGraphDef`; described in docs/graph-format.md).

These types describe shape only; meaning (ids resolve, no cycles, templates
reference upstream nodes, ...) is checked by `plait.compile`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, StringConstraints, field_validator

from plait.model.common import (
    IDENT_RE,
    ConditionKey,
    Identifier,
    JsonSchemaDoc,
    NonEmptyStr,
    PlaitModel,
)
from plait.model.enums import FreezePolicy, SourceType
from plait.model.nodes import FreezeSpec, NodeDef
from plait.model.semver import SEMVER_RE, VERSION_PATTERN_RE

_SLUG = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
GraphSlug = Annotated[str, StringConstraints(pattern=_SLUG, max_length=128)]
SLUG_RULE = "use letters, digits, '_', '.' and '-', starting with a letter or digit (at most 128)"
"""What a graph id may be, in words: the hint of every refusal of one."""


def is_graph_slug(value: str) -> bool:
    """Whether `value` may be a graph's id (the rule of `GraphSlug`), for ids given outside a
    graph file (a fork's name, a draft's address)."""
    return len(value) <= 128 and re.fullmatch(_SLUG, value) is not None  # fullmatch: no "id\n"


FORMAT_VERSION: Literal[1] = 1
END = "END"
"""Virtual exit: an edge `target: END` binds the schema of a graph output without adding a node."""


def _check_semver(value: str) -> str:
    if not SEMVER_RE.match(value):
        raise ValueError(f"'{value}' is not a semantic version; write MAJOR.MINOR.PATCH, e.g. 1.0.0")
    return value


class SchemaEntry(PlaitModel):
    """A named JSON Schema that edges bind to; `version` is semver."""

    id: Identifier
    description: str = ""
    version: str = "1.0.0"
    breaking_change: bool = False
    schema_: JsonSchemaDoc = Field(alias="schema", validation_alias=AliasChoices("schema", "schema_"))

    _semver = field_validator("version")(_check_semver)


class SchemaMigration(PlaitModel):
    """Upgrades stored outputs of `schema_id` from `from_version` (wildcards) to `to_version`."""

    schema_id: Identifier
    from_version: str
    to_version: str
    migrate_expr: str

    _semver = field_validator("to_version")(_check_semver)

    @field_validator("from_version")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if not VERSION_PATTERN_RE.match(value):
            raise ValueError(f"'{value}' is not a version pattern; write e.g. 1.x.x, 1.2.x or 1.2.3")
        return value


class EdgeDef(PlaitModel):
    """A data channel between two nodes; `schema_id` is its contract."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    """Optional in files; the loader names unnamed edges `{source}__{target}`."""
    source_node_id: NonEmptyStr = Field(validation_alias=AliasChoices("source_node_id", "source"))
    target_node_id: NonEmptyStr = Field(validation_alias=AliasChoices("target_node_id", "target"))
    condition_key: ConditionKey | None = None
    default: bool = False
    """On an edge leaving a CONDITION: taken when the condition's value is none of its edges' keys
    (without one, such a value fails the node)."""
    schema_id: str | None = None
    label: str | None = None


class GraphDef(PlaitModel):
    """A graph as a file or the store holds it: nodes, edges, schema registry, migrations. A
    valid `GraphDef` has the right shape (an unknown field is an error); that it can run (ids
    resolve, no cycles, templates name upstream nodes) is checked by `plait.compile`."""

    plait: Literal[1] = FORMAT_VERSION
    id: GraphSlug
    name: str | None = None
    description: str | None = None
    source_type: SourceType = SourceType.USER
    input_schema: JsonSchemaDoc | None = None
    input_freeze: FreezeSpec | None = None
    """Freeze policy for run input fields; user input is typically frozen on create."""
    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    schemas: list[SchemaEntry] = Field(
        default_factory=list, validation_alias=AliasChoices("schemas", "schema_registry")
    )
    migrations: list[SchemaMigration] = Field(default_factory=list)
    nodes: list[NodeDef] = Field(default_factory=list)
    edges: list[EdgeDef] = Field(default_factory=list)

    # Managed by the store; accepted in files so that exports round-trip.
    version: Annotated[int, Field(ge=1)] | None = None
    schema_version: str | None = None
    created_at: int | None = None
    updated_at: int | None = None
    parent_def_id: str | None = None
    parent_def_ver_at_fork: int | None = None
    parent_schema_ver_at_fork: str | None = None

    @field_validator("schema_version")
    @classmethod
    def _schema_semver(cls, value: str | None) -> str | None:
        return None if value is None else _check_semver(value)

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def node(self, node_id: str) -> Any:
        """The node with id `node_id`; KeyError when the graph has none."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def schema_entry(self, schema_id: str) -> SchemaEntry | None:
        """The registry entry `schema_id`, or None."""
        return next((s for s in self.schemas if s.id == schema_id), None)


__all__ = [
    "IDENT_RE",
    "EdgeDef",
    "FreezePolicy",
    "GraphDef",
    "SchemaEntry",
    "SchemaMigration",
]
