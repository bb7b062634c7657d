"""Per-node passes: expressions, tools and their routing, context_include, sub-graph references,
the repair hook, context_overflow."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.compile.source import Path_
from plait.config.variables import unsafe_variable
from plait.model.nodes import ContextOverflow, LlmCallNode, NodeBase, NodeType, ToolNode, is_graph_file, node_field
from plait.model.tools import ToolChoiceFunction, ToolHandler

CONFIG, PLANNING = Category.CONFIG, Category.PLANNING
EXPRESSION_FIELDS = ("condition_expr", "transform_expr", "while_expr", "code", "until_expr")

SyntaxKind = Literal["expression", "function", "body", "script"]
_EXAMPLES = {
    "condition_expr": "nodes.classify.label",
    "transform_expr": "({text: input.text.trim()})",
    "while_expr": "current.remaining > 0",
    "code": "return {count: input.text.split(' ').length};",
    "until_expr": "input.send_at",
}


@dataclass(frozen=True)
class _Expression:
    """One JavaScript text to syntax-check, and where to report it."""

    text: str
    kind: SyntaxKind
    what: str
    hint: str
    path: Path_ | None
    node_id: str | None = None


def check_expressions(ctx: CheckContext) -> None:
    """Every JavaScript text must be non-empty and parse, as the sandbox will run it:
    `condition_expr`, `transform_expr`, `while_expr` and tool `transform_expr` are expressions,
    CODE `code` is a function body, `migrate_expr` is a function expression."""
    pending: list[_Expression] = []
    for node_id, node in ctx.nodes.items():
        _check_sandbox_timeout(ctx, node_id, node)
        for name in EXPRESSION_FIELDS:
            value = node_field(node, name)
            if not isinstance(value, str):
                continue
            if name == "code" and node_field(node, "language") == "python":
                _check_python(ctx, node_id, value)
                continue
            path = ctx.node_path(node_id, name)
            if not value.strip():
                ctx.report(
                    CONFIG,
                    "empty_expression",
                    f"{name} is empty",
                    node_id=node_id,
                    path=path,
                    hint=f"write a JavaScript expression for {name}",
                )
                continue
            kind: SyntaxKind = "body" if name == "code" else "expression"
            shape = "the body of `function main(input, nodes, current)`" if kind == "body" else "one expression"
            hint = f"{name} is {shape} in strict-mode JavaScript, e.g. `{_EXAMPLES[name]}`"
            pending.append(_Expression(value, kind, name, hint, path, node_id))
        for index, tool in enumerate(node_field(node, "tools", [])):
            if tool.transform_expr is None:
                continue
            path = ctx.node_path(node_id, "tools", index, "transform_expr")
            if not tool.transform_expr.strip():
                ctx.report(
                    CONFIG,
                    "empty_expression",
                    f"transform_expr of tool '{tool.name}' is empty",
                    node_id=node_id,
                    path=path,
                    hint="write a JavaScript expression over the tool arguments",
                )
                continue
            hint = "a tool's transform_expr is one JavaScript expression over `args`, e.g. `({city: args.city})`"
            pending.append(
                _Expression(
                    tool.transform_expr, "expression", f"tool '{tool.name}' transform_expr", hint, path, node_id
                )
            )
        script = node_field(node, "prompt_script", None)
        if script is not None and not isinstance(script, str):
            hint = "a prompt script declares `async function main()` returning the prompt (docs/prompt-scripts.md)"
            path = ctx.node_path(node_id, "prompt_script", "code")
            pending.append(_Expression(script.code, "script", "prompt_script", hint, path, node_id))
    for index, migration in enumerate(ctx.graph.migrations):
        path = ("migrations", index, "migrate_expr")
        if not migration.migrate_expr.strip():
            ctx.report(
                CONFIG,
                "empty_expression",
                f"migrate_expr of the {migration.schema_id} migration is empty",
                path=path,
                hint="write e.g. `old => ({...old})`",
            )
            continue
        hint = "migrate_expr is a JavaScript function of the old value, e.g. `old => ({...old, chapters: old.items})`"
        pending.append(
            _Expression(
                migration.migrate_expr, "function", f"migrate_expr of the {migration.schema_id} migration", hint, path
            )
        )
    if pending:  # QuickJS is loaded only for graphs that have JavaScript
        _check_syntax(ctx, pending)


def _check_python(ctx: CheckContext, node_id: str, code: str) -> None:
    """Python CODE must parse (compiled here, never run: it runs in a child process)."""
    path = ctx.node_path(node_id, "code")
    try:
        compile(code, "<code>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        ctx.report(
            CONFIG,
            "bad_expression",
            f"code does not parse as Python: {getattr(exc, 'msg', None) or exc}{where}",
            node_id=node_id,
            path=path,
            hint="code is a Python program that defines `def main(input, nodes):` and returns the output",
        )
        return
    if "def main" not in code:
        ctx.report(
            CONFIG,
            "bad_expression",
            "Python code defines no main(input, nodes)",
            node_id=node_id,
            path=path,
            hint="define `def main(input, nodes):` and return the node's output from it",
        )


def _check_sandbox_timeout(ctx: CheckContext, node_id: str, node: NodeBase) -> None:
    """A TRANSFORM, CONDITION or JavaScript CODE node's `timeout_s` is its script's time limit in
    the sandbox: finite, positive and within the server's cap (plait.toml `[sandbox] max_timeout_s`).
    (TOOL and Python CODE nodes have caps of their own, checked when a run starts.)"""
    javascript_code = node.type == NodeType.CODE and node_field(node, "language") == "js"
    if (node.type not in (NodeType.TRANSFORM, NodeType.CONDITION) and not javascript_code) or node.timeout_s is None:
        return
    from plait.sandbox.limits import max_timeout_s, timeout_problem

    cap = max_timeout_s()
    problem = timeout_problem(node.timeout_s, cap)
    if problem is not None:
        ctx.report(
            CONFIG,
            "timeout_over_limit",
            problem,
            node_id=node_id,
            path=ctx.node_path(node_id, "timeout_s"),
            hint=f"set timeout_s to at most {cap:g} seconds",
        )


def _check_syntax(ctx: CheckContext, pending: list[_Expression]) -> None:
    from plait.sandbox import JsSyntaxError, SandboxError, check_syntax

    for item in pending:
        try:
            check_syntax(item.text, kind=item.kind)
        except JsSyntaxError as exc:
            where = f" at line {exc.line}, column {exc.column}" if exc.line is not None else ""
            message = f"{item.what}: {exc.message}{where}"
        except SandboxError as exc:
            message = f"{item.what}: cannot be checked: {exc}"
        else:
            continue
        ctx.report(CONFIG, "bad_expression", message, node_id=item.node_id, path=item.path, hint=item.hint)


def check_tools(ctx: CheckContext) -> None:
    """LLM_CALL tools: each has the field its handler needs and no field of another handler, tool
    results are routed to out-edges of the node, and a `tool_choice` function names one of its
    tools (checked only without MCP servers, whose tools are known at run time)."""
    for node_id, node in ctx.nodes.items():
        if not isinstance(node, LlmCallNode):
            continue
        out_ids = [e.id for e in ctx.out_edges[node_id]]
        for index, tool in enumerate(node.tools):
            path = ctx.node_path(node_id, "tools", index)
            needs = {ToolHandler.TRANSFORM_EXPR: "transform_expr", ToolHandler.WORKFLOW_TASK: "graph"}
            required = needs.get(tool.handler)
            if required and getattr(tool, required) is None:
                ctx.report(
                    CONFIG,
                    "tool_without_handler",
                    f"tool '{tool.name}' has handler {tool.handler} but no {required}",
                    node_id=node_id,
                    path=path,
                    hint=f"add `{required}:` to the tool",
                )
            for other, value in needs.items():
                if other is not tool.handler and getattr(tool, value) is not None:
                    ctx.report(
                        CONFIG,
                        "field_not_allowed",
                        f"tool '{tool.name}': {value} is only used by handler {other}",
                        node_id=node_id,
                        path=(*path, value) if path is not None else None,
                        hint=f"remove {value} or change the handler",
                    )
            if tool.output_edge_id is not None:
                _check_out_edge(
                    ctx, node_id, tool.output_edge_id, out_ids, (*(path or ()), "output_edge_id"), f"tool '{tool.name}'"
                )
        for s_index, server in enumerate(node.mcp_servers):
            for tool_name, edge_id in server.output_edge_map.items():
                where = ctx.node_path(node_id, "mcp_servers", s_index, "output_edge_map", tool_name)
                _check_out_edge(ctx, node_id, edge_id, out_ids, where, f"MCP tool '{tool_name}'")
        choice = node.tool_choice
        if isinstance(choice, ToolChoiceFunction) and not node.mcp_servers:
            names = [t.name for t in node.tools]
            if choice.function.name not in names:
                ctx.report(
                    CONFIG,
                    "unknown_tool",
                    f"tool_choice names '{choice.function.name}', which is not a tool of this node",
                    node_id=node_id,
                    path=ctx.node_path(node_id, "tool_choice"),
                    hint=f"tools: {', '.join(names) or '(none)'}",
                )


def check_program_env(ctx: CheckContext) -> None:
    """A TOOL node's `env` never sets a variable that loaders, shells or interpreters read as code
    or options (`LD_PRELOAD`, `BASH_ENV`...): refused whatever the machine's plait.toml allows."""
    for node_id, node in ctx.nodes.items():
        if not isinstance(node, ToolNode):
            continue
        for name in node.env:
            problem = unsafe_variable(name)
            if problem is not None:
                ctx.report(
                    CONFIG,
                    "unsafe_env",
                    f"env sets {problem}",
                    node_id=node_id,
                    path=ctx.node_path(node_id, "env", name),
                    hint=f"remove {name} from env; pass the value as an argument or on stdin instead",
                )


def check_repair(ctx: CheckContext) -> None:
    """LLM_CALL, TOOL and CODE nodes may declare `repair`. A TOOL or CODE node's repair model may
    only escalate or give up (there is no prompt or setting to fix), so `min_confidence`, which
    gates fixes, does nothing there: a warning, so that the author does not count on it."""
    for node_id, node in ctx.nodes.items():
        repair = node_field(node, "repair", None)
        if isinstance(node, LlmCallNode) or repair is None or "min_confidence" not in repair.model_fields_set:
            continue
        ctx.report(
            CONFIG,
            "repair_confidence_ignored",
            f"repair.min_confidence does nothing on a {node.type} node: its repair model may only escalate "
            "to a person or give up, never apply a fix",
            node_id=node_id,
            path=ctx.node_path(node_id, "repair", "min_confidence"),
            hint="remove min_confidence from the node's repair (keep model_role, or write `repair: true`)",
            warning=True,
        )


def check_context_overflow(ctx: CheckContext) -> None:
    """`context_overflow: retrieve` acts on a value over the node's prompt budget: without
    `context_max_chars` or `token_budget_input`, no value ever is, so it does nothing (a warning)."""
    for node_id, node in ctx.nodes.items():
        if not isinstance(node, LlmCallNode) or node.context_overflow != ContextOverflow.RETRIEVE:
            continue
        if node.context_max_chars is None and node.token_budget_input is None:
            ctx.report(
                CONFIG,
                "context_overflow_without_budget",
                "context_overflow: retrieve does nothing without a budget: no value is ever over it",
                node_id=node_id,
                path=ctx.node_path(node_id, "context_overflow"),
                hint="set token_budget_input (or context_max_chars) on the node, or remove context_overflow",
                warning=True,
            )


def _check_out_edge(
    ctx: CheckContext, node_id: str, edge_id: str, out_ids: list[str | None], path: object, what: str
) -> None:
    if edge_id in out_ids:
        return
    close = difflib.get_close_matches(edge_id, [i for i in out_ids if i], n=1)
    ctx.report(
        CONFIG,
        "unknown_edge",
        f"{what} routes to '{edge_id}', which is not an out-edge of '{node_id}'",
        node_id=node_id,
        path=path if isinstance(path, tuple) else None,
        hint=f"did you mean '{close[0]}'?" if close else f"out-edges: {', '.join(map(str, out_ids)) or '(none)'}",
    )


def check_context_include(ctx: CheckContext) -> None:
    """Each `context_include` entry is `input` or a node upstream of the one that names it."""
    for node_id, node in ctx.nodes.items():
        for index, name in enumerate(node.context_include or []):
            path = ctx.node_path(node_id, "context_include", index)
            if name == "input":
                continue
            if name not in ctx.nodes and name not in ctx.loaded.invalid_node_ids:  # invalid ones: reported already
                close = difflib.get_close_matches(name, list(ctx.nodes), n=1)
                ctx.report(
                    CONFIG,
                    "bad_template_path",
                    f"context_include names unknown node '{name}'",
                    node_id=node_id,
                    path=path,
                    hint=f"did you mean '{close[0]}'?" if close else "list upstream node ids or `input`",
                )
            elif (
                name not in ctx.topo.cyclic
                and node_id not in ctx.topo.cyclic
                and name not in ctx.broken_edge_ends
                and node_id not in ctx.broken_edge_ends
                and not ctx.topo.is_upstream(name, node_id)
            ):
                ctx.report(
                    PLANNING,
                    "not_upstream",
                    f"context_include names '{name}', which is not upstream",
                    node_id=node_id,
                    path=path,
                    hint=f"only outputs of nodes upstream of '{node_id}' exist when it runs",
                )


def check_graph_files(ctx: CheckContext, base_dir: Path | None) -> None:
    """SUBGRAPH/MAP/LOOP `graph:` values that are file paths must exist (stored ids are checked at run time)."""
    if base_dir is None:
        return
    for node_id, node in ctx.nodes.items():
        ref = node_field(node, "graph", None)
        if isinstance(ref, str) and is_graph_file(ref) and not (base_dir / ref).is_file():
            ctx.report(
                CONFIG,
                "unknown_graph",
                f"graph file '{ref}' does not exist",
                node_id=node_id,
                path=ctx.node_path(node_id, "graph"),
                hint="paths are relative to this graph file",
            )


def node_label(node: NodeBase) -> str:
    """How a node is shown to a person: its label, else its id."""
    return node.label or node.id
