"""What every node type shares: the `type` names and the fields of `NodeBase`. The node classes
are `nodes.py` (and `knowledge_nodes.py`, the nodes of knowledge bases)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field

from plait.model.common import Identifier, PlaitModel, Position, Priority
from plait.model.enums import FreezePolicy

INPUT_PATH = re.compile(r"input(\.[A-Za-z_][A-Za-z0-9_]*)+")
"""A dotted path of names into the run input, e.g. `input.answer_schema`: what a node field that
takes a value from the run input (rather than from the graph) is written as."""


class NodeType(StrEnum):
    """The node types; each has its own class below, chosen by a node's `type`."""

    LLM_CALL = "LLM_CALL"
    CONDITION = "CONDITION"
    MERGE = "MERGE"
    TRANSFORM = "TRANSFORM"
    HUMAN_REVIEW = "HUMAN_REVIEW"
    TOOL = "TOOL"
    CODE = "CODE"
    SUBGRAPH = "SUBGRAPH"
    MAP = "MAP"
    LOOP = "LOOP"
    WAIT = "WAIT"
    SKILL = "SKILL"
    PARSE = "PARSE"
    CHUNK = "CHUNK"
    INDEX = "INDEX"
    RETRIEVE = "RETRIEVE"


FreezeSpec = FreezePolicy | dict[str, FreezePolicy]
"""One policy for the whole output, or one per top-level output field."""


class SkillScope(PlaitModel):
    """Set by SKILL expansion on every inlined node (not written by hand): how its names resolve."""

    skill_node_id: str
    prefix: str
    """`__{skill node id}__`: the inlined node ids start with it; its templates use the ids without it."""
    inputs: dict[str, Any] = Field(default_factory=dict)
    """The SKILL node's `inputs` (templates over the parent graph): what `input` means inside the skill."""
    skill: str | None = None
    """The stored skill expanded here, `name@version` (None: a skill file), so a stored graph says
    which version it inlined."""


class NodeBase(PlaitModel):
    """The fields every node type accepts. A field that means nothing for a type is not on its
    class, so writing it is a validation error rather than ignored configuration."""

    id: Identifier
    type: NodeType
    label: str | None = None
    description: str | None = None
    position: Position | None = None
    context_include: list[str] | None = None
    """Upstream node ids (or `input`) whose outputs go into this node's context; default: direct upstream."""
    context_max_chars: Annotated[int, Field(gt=0)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=20)] = 0
    timeout_s: Annotated[float, Field(gt=0)] | None = None
    priority: Priority = 5
    freeze: FreezeSpec | None = None
    skill_scope: SkillScope | None = None
