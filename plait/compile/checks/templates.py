"""Template and reference passes: syntax, names, upstream-ness, fields, system-prompt data."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.compile.refs import NODE_ID_NAME, OUTPUT_STEP, STATE_ALIASES, RefError, RefKind, ResolvedRef, resolve_ref
from plait.compile.schemas import PathStatus, declared_fields, lookup_path
from plait.compile.template_types import Segment, TemplateError
from plait.compile.templates import parse_template, split_path
from plait.model.knowledge_nodes import ParseNode, RetrieveNode
from plait.model.nodes import (
    ConditionNode,
    HumanReviewNode,
    LlmCallNode,
    MapNode,
    NodeBase,
    NodeType,
    ParamType,
    SkillNode,
    SubgraphNode,
    ToolNode,
    node_field,
)

CONFIG, PLANNING = Category.CONFIG, Category.PLANNING
META_FIELDS = ("_schema_id", "_schema_version")

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class TemplateField:
    """One string field of a node that is rendered as a template; `system` marks the system prompt."""

    path: FieldPath
    """Path of the field inside the node, e.g. ('user_prompt_tpl',) or ('mcp_resources', 0, 'uri')."""
    text: str
    system: bool = False


def template_fields(node: NodeBase) -> Iterator[TemplateField]:
    """Every string field of a node that is rendered as a template."""
    if isinstance(node, LlmCallNode):
        if node.system_prompt is not None:
            yield TemplateField(("system_prompt",), node.system_prompt, system=True)
        for name in ("user_prompt_tpl", "spj_prompt"):
            value = getattr(node, name)
            if value is not None:
                yield TemplateField((name,), value)
        for i, res in enumerate(node.mcp_resources):
            yield TemplateField(("mcp_resources", i, "uri"), res.uri)
        if node.mcp_prompt is not None:
            for key, arg in node.mcp_prompt.arguments.items():
                yield TemplateField(("mcp_prompt", "arguments", key), arg)
    elif isinstance(node, ConditionNode) and node.condition_llm is not None:
        yield TemplateField(("condition_llm", "prompt"), node.condition_llm.prompt)
        yield TemplateField(("condition_llm", "system_prompt"), node.condition_llm.system_text(), system=True)
    elif isinstance(node, HumanReviewNode) and node.review_prompt is not None:
        yield TemplateField(("review_prompt",), node.review_prompt)
    elif isinstance(node, ToolNode):
        for i, arg in enumerate(node.command):
            yield TemplateField(("command", i), arg)
        for key, value in node.env.items():
            yield TemplateField(("env", key), value)
        if node.stdin is not None:
            yield TemplateField(("stdin",), node.stdin)
        if node.cwd is not None:
            yield TemplateField(("cwd",), node.cwd)
    elif isinstance(node, RetrieveNode):
        yield TemplateField(("knowledge_base",), node.knowledge_base)
        yield TemplateField(("query",), node.query)
    elif isinstance(node, ParseNode):
        yield TemplateField(("document",), node.document)
    if isinstance(node, SubgraphNode | MapNode | SkillNode) or node.type == NodeType.LOOP:
        yield from _strings(node_field(node, "inputs", {}), ("inputs",))


def _strings(value: Any, path: FieldPath) -> Iterator[TemplateField]:
    if isinstance(value, str):
        yield TemplateField(path, value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def check_templates(ctx: CheckContext) -> None:
    """Every template of every node parses, and every reference in it names something the node
    can read when it runs: a param, the input, `current` or an upstream node, and a field the
    schema there declares (where it says). Run data in a system prompt is refused unless the
    node sets `allow_data_in_system_prompt`."""
    for node_id, node in ctx.nodes.items():
        if node.skill_scope is not None:
            continue  # inlined skill nodes were checked against the skill's own graph
        params = {p.name: p for p in node_field(node, "params", [])}
        allow_system_data = bool(node_field(node, "allow_data_in_system_prompt", False))
        for tf in template_fields(node):
            try:
                template = parse_template(tf.text)
            except TemplateError as exc:
                ctx.report(
                    CONFIG,
                    "bad_template",
                    f"{_name(tf.path)}: {exc}",
                    node_id=node_id,
                    path=ctx.node_path(node_id, *tf.path),
                    hint="fix the template; `{{ path }}` or `%path%`",
                )
                continue
            local = child_input_names(node) if tf.path[0] == "inputs" else frozenset()
            for ref in template.refs:
                if str(ref.path[0]) in local:
                    continue  # the item or the loop, given when the child run starts
                resolved = check_ref(ctx, node, ref.path, tf.path, params)
                if tf.system and not allow_system_data and resolved is not None and _is_data(resolved, params):
                    ctx.report(
                        PLANNING,
                        "data_in_system_prompt",
                        f"system_prompt inserts run data '{ref.dotted()}' (prompt-injection risk)",
                        node_id=node_id,
                        path=ctx.node_path(node_id, "system_prompt"),
                        hint="move it to user_prompt_tpl, or set `allow_data_in_system_prompt: true`",
                    )
        for index, param in enumerate(params.values()):
            if param.type is ParamType.REFERENCE and param.reference_node:
                check_ref(ctx, node, _param_path(param.reference_node), ("params", index, "reference_node"), {})
        if isinstance(node, MapNode):
            check_ref(ctx, node, split_path(node.items), ("items",), params)


def child_input_names(node: NodeBase) -> frozenset[str]:
    """The names a MAP's or LOOP's `inputs` templates read besides the node's own: the item and
    its `index`, or `loop` (`iteration`, `previous`)."""
    if isinstance(node, MapNode):
        return frozenset({node.item_name, "index"})
    if node.type == NodeType.LOOP:
        return frozenset({"loop"})
    return frozenset()


def _mcp_context_field(node: NodeBase, path: tuple[Segment, ...]) -> bool:
    """`style` or `context.style`, where an MCP resource of the node is read into the field `style`."""
    fields = {r.field_name for r in node_field(node, "mcp_resources", ()) if r.field_name}
    if not fields:
        return False
    name = path[1] if path[0] == "context" and len(path) > 1 else path[0]
    return name in fields


def _param_path(reference: str) -> tuple[Segment, ...]:
    """`node.field.sub` names a node output; a leading `nodes.`/`input.` is accepted too."""
    return split_path(reference)


def _is_data(ref: ResolvedRef, params: dict[str, Any]) -> bool:
    if ref.kind is RefKind.PARAM:
        return params[str(ref.target)].type is ParamType.REFERENCE
    return ref.kind is not RefKind.NODE_ID


def _name(path: FieldPath) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def check_ref(
    ctx: CheckContext,
    node: NodeBase,
    path: tuple[Segment, ...],
    field: FieldPath,
    params: dict[str, Any],
    code: str = "bad_template_path",
) -> ResolvedRef | None:
    """Check one path a node reads (in a template, or in an expression: `code` names which)."""
    where = ctx.node_path(node.id, *field)
    dotted = ".".join(str(p) for p in path)
    if _mcp_context_field(node, path):
        return None
    try:
        ref = resolve_ref(path, ctx.topo.order, params.keys())
    except RefError as exc:
        message = f"{_name(field)}: '{dotted}': {exc}"
        ctx.report(CONFIG, code, message, node_id=node.id, path=where, hint=_hint(ctx, node, path, params, exc))
        return None
    if ref.kind is RefKind.NODE:
        _check_node_ref(ctx, node, ref, dotted, field, code)
    elif ref.kind is RefKind.INPUT:
        schemas = [ctx.graph.input_schema] if ctx.graph.input_schema else []
        _check_fields(ctx, node, schemas, ref.path, "the run input (input_schema)", field, dotted, code)
    elif ref.kind is RefKind.CURRENT:
        _check_current(ctx, node, ref, field, dotted, code)
    return ref


def _hint(ctx: CheckContext, node: NodeBase, path: tuple[Segment, ...], params: dict[str, Any], exc: RefError) -> str:
    """What to write instead of a path that names nothing, in Plait's spelling."""
    root = str(path[0])
    # for `params.x` / `nodes.x` the unknown name is `x`, not the root
    qualified = (root in ("params", "nodes") or STATE_ALIASES.get(root) == "nodes") and len(path) > 1
    if not qualified and len(path) > 1 and path[1] == OUTPUT_STEP:  # `node.output.x`: not `nodes.output.x`
        upstream = ", ".join(ctx.topo.ancestors(node.id)) or "(none: this node has no upstream node)"
        return (
            f"in <node_id>.{OUTPUT_STEP}.<field>, '{root}' must be the id of an upstream node ({upstream}); "
            "Plait writes it <node_id>.<field>, and current.<field> reads the direct predecessor's output"
        )
    if root == NODE_ID_NAME:
        return f"{NODE_ID_NAME} prints the id '{node.id}'; a field of what the node receives is current.<field>"
    close = difflib.get_close_matches(str(path[1] if qualified else path[0]), exc.suggestions, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    if qualified and root == "params":
        return f"params of this node: {', '.join(params) or '(none)'}"
    if root in STATE_ALIASES:
        plait_name = STATE_ALIASES[root]
        return f"{root} is Plait's {plait_name}: write {plait_name}.<node_id>.<field> (or {root}.<node_id>.<field>)"
    return "paths start with input, current, params, nodes or an upstream node id"


def _check_node_ref(
    ctx: CheckContext, node: NodeBase, ref: ResolvedRef, dotted: str, field: FieldPath, code: str
) -> None:
    target = str(ref.target)
    topo = ctx.topo
    if target == node.id:
        ctx.report(
            PLANNING,
            "not_upstream",
            f"{_name(field)}: '{dotted}' references the node's own output",
            node_id=node.id,
            path=ctx.node_path(node.id, *field),
            hint="reference an upstream node instead",
        )
        return
    if node.id in topo.cyclic or target in topo.cyclic:
        return  # the cycle is reported; upstream-ness is undefined there
    if not topo.is_upstream(target, node.id):
        if node.id in ctx.broken_edge_ends or target in ctx.broken_edge_ends:
            return  # the broken edge is reported; it may be the one that makes target upstream
        ctx.report(
            PLANNING,
            "not_upstream",
            f"{_name(field)}: '{dotted}' references '{target}', which is not upstream of '{node.id}'",
            node_id=node.id,
            path=ctx.node_path(node.id, *field),
            hint=f"add an edge path from '{target}' to '{node.id}', or reference an upstream node",
        )
        return
    path = ref.inside(_declares(ctx.out_schemas(target), OUTPUT_STEP)) if ref.output_alias else ref.path
    _check_output_fields(ctx, node, target, path, field, dotted, code)


def _declares(schemas: list[Any], name: str) -> bool:
    """Whether one of `schemas` declares a top-level field `name`."""
    return any(lookup_path(schema, (name,))[0] is PathStatus.OK for schema in schemas)


def _check_output_fields(
    ctx: CheckContext,
    node: NodeBase,
    target: str,
    path: tuple[Segment, ...],
    field: FieldPath,
    dotted: str,
    code: str,
) -> None:
    if not path or path[0] in META_FIELDS:
        return
    target_node = ctx.nodes.get(target)  # None when it failed validation: check against its edges only
    if target_node is not None and target_node.type == NodeType.MERGE:
        preds = ctx.topo.preds[target]
        if str(path[0]) not in preds:
            ctx.report(
                CONFIG,
                code,
                f"{_name(field)}: '{dotted}': MERGE '{target}' outputs one key per input: " + ", ".join(preds),
                node_id=node.id,
                path=ctx.node_path(node.id, *field),
                hint=f"write {target}.<input node id>.<field>",
            )
            return
        _check_output_fields(ctx, node, str(path[0]), path[1:], field, dotted, code)
        return
    if target_node is not None and target_node.type == NodeType.CONDITION:
        return
    _check_fields(ctx, node, ctx.out_schemas(target), path, f"the output of '{target}'", field, dotted, code)


def _check_current(
    ctx: CheckContext, node: NodeBase, ref: ResolvedRef, field: FieldPath, dotted: str, code: str
) -> None:
    preds = ctx.topo.preds[node.id]
    if not preds:
        schemas = [ctx.graph.input_schema] if ctx.graph.input_schema else []
        _check_fields(ctx, node, schemas, ref.path, "the run input (current of an entry node)", field, dotted, code)
    elif len(preds) == 1:
        _check_output_fields(ctx, node, preds[0], ref.path, field, dotted, code)
    elif ref.path:
        head = str(ref.path[0])
        if head not in preds:
            ctx.report(
                CONFIG,
                code,
                f"{_name(field)}: '{dotted}': with several inputs, current is a map by predecessor id: "
                + ", ".join(preds),
                node_id=node.id,
                path=ctx.node_path(node.id, *field),
                hint=f"write current.{preds[0]}.<field>",
            )
            return
        _check_output_fields(ctx, node, head, ref.path[1:], field, dotted, code)


def _check_fields(
    ctx: CheckContext,
    node: NodeBase,
    schemas: list[Any],
    path: tuple[Segment, ...],
    what: str,
    field: FieldPath,
    dotted: str,
    code: str,
) -> None:
    if not schemas or not path:
        return
    results = [lookup_path(schema, path) for schema in schemas]
    if all(status is PathStatus.MISSING for status, _ in results):
        missing = results[0][1]
        known = sorted({f for s in schemas for f in declared_fields(s)})
        close = difflib.get_close_matches(missing.rsplit(".", 1)[-1], known, n=1)
        ctx.report(
            CONFIG,
            code,
            f"{_name(field)}: '{dotted}': '{missing}' is not a field of {what}",
            node_id=node.id,
            path=ctx.node_path(node.id, *field),
            hint=f"did you mean '{close[0]}'?" if close else f"fields: {', '.join(known) or '(none)'}",
        )
