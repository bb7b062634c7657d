"""The answer-schema pass: an LLM_CALL's `answer_schema` is a path into the run input that the
graph's `input_schema` allows, to a value that may be a JSON Schema object.

The schema itself comes with each run, so only the path can be checked here; the engine checks
the schema when the node runs (plait/engine/answer_schema.py).
"""

from __future__ import annotations

from typing import Any

from plait.compile.checks.templates import check_ref
from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.compile.schemas import schema_at
from plait.compile.templates import split_path
from plait.model.nodes import ANSWER_SCHEMA_PATH, LlmCallNode

CODE = "answer_schema_path"


def check_answer_schemas(ctx: CheckContext) -> None:
    """Each `answer_schema` is `input.` and a dotted path of names; where the graph declares its
    input, the path is one of its fields (as a template's `input.x` must be), and not a field
    declared with a type other than object."""
    for node_id, node in ctx.nodes.items():
        if not isinstance(node, LlmCallNode) or node.answer_schema is None:
            continue
        path = node.answer_schema
        where = ctx.node_path(node_id, "answer_schema")
        if ANSWER_SCHEMA_PATH.fullmatch(path) is None:
            ctx.report(
                Category.CONFIG,
                CODE,
                f"answer_schema '{path}' is not a path into the run input",
                node_id=node_id,
                path=where,
                hint="write input.<field> (names joined by dots, e.g. input.answer_schema): the run input holds "
                "the JSON Schema there",
            )
            continue
        if node.skill_scope is not None or ctx.graph.input_schema is None:
            continue  # inside a SKILL, `input` is the skill's inputs: checked against the skill's own graph
        segments = split_path(path)
        check_ref(ctx, node, segments, ("answer_schema",), {}, code=CODE)
        _check_declared_type(ctx, node_id, path, schema_at(ctx.graph.input_schema, segments[1:]))


def _check_declared_type(ctx: CheckContext, node_id: str, path: str, declared: Any) -> None:
    """The field `path` names, declared in `input_schema` as something a schema object cannot be."""
    if not isinstance(declared, dict) or "type" not in declared:
        return
    types = declared["type"] if isinstance(declared["type"], list) else [declared["type"]]
    if "object" in types:
        return
    ctx.report(
        Category.CONFIG,
        CODE,
        f"answer_schema '{path}': input_schema declares it as {', '.join(map(str, types))}, not an object",
        node_id=node_id,
        path=ctx.node_path(node_id, "answer_schema"),
        hint="declare that field of input_schema as `type: object` (it holds a JSON Schema), or point "
        "answer_schema at one that is",
    )
