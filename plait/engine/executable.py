"""What an engine refuses to start: a graph it could not execute to the end (a node type not
executed yet, a model role no provider serves, a model lacking a capability a node needs, an MCP
server or a program not configured, `context_overflow: retrieve` without the embedder). Checked
before a run exists, so a refusal leaves nothing."""

from __future__ import annotations

from plait.engine import overflow
from plait.engine.executors import SUPPORTED
from plait.engine.llm_condition import asker
from plait.engine.outcome import EngineError
from plait.engine.program_nodes import refusal
from plait.engine.runtime import Runtime
from plait.engine.state import CompiledRun
from plait.knowledge.embed import INSTALL_HINT
from plait.model.nodes import NodeBase, NodeType, node_field


def refuse_unexecutable(compiled: CompiledRun, runtime: Runtime) -> None:
    """Raise EngineError for what an engine with `runtime` could not execute, in the graph and in its inline bodies
    (a stored graph a node runs is checked when its child starts)."""
    for node in compiled.nodes.values():
        if node_field(node, "body", None) is not None:
            refuse_unexecutable(compiled.body(node.id), runtime)
        if node.type not in SUPPORTED:
            raise EngineError(
                f"node '{node.id}' is a {node.type} node, which this release validates but does "
                f"not execute yet (supported: {', '.join(sorted(SUPPORTED))})"
            )
        if node.type == NodeType.LLM_CALL:
            _check_mcp_servers(node, runtime)
            _check_provider(node, runtime)
            _check_overflow(node)
        call = asker(node)
        if call is not None:
            _check_provider(call, runtime)
        problem = refusal(node, runtime.tools, runtime.code, runtime.jail)
        if problem is not None:
            raise EngineError(problem)


def _check_mcp_servers(node: NodeBase, runtime: Runtime) -> None:
    """Refuse a node that names an MCP server plait.toml does not register."""
    refs = [
        *node_field(node, "mcp_servers", ()),
        *node_field(node, "mcp_resources", ()),
        *([prompt] if (prompt := node_field(node, "mcp_prompt", None)) is not None else []),
    ]
    known = runtime.mcp_servers
    for ref in refs:
        if ref.server_id not in known:
            raise EngineError(
                f"node '{node.id}' uses the MCP server '{ref.server_id}', which is not configured "
                f"(configured: {', '.join(sorted(known)) or 'none'}); give the config file that registers it "
                "with --config FILE (the examples': --config examples/mcp.toml), or register it under "
                "[[mcp_servers]] in plait.toml (see docs/tools.md)"
            )


def _check_overflow(node: NodeBase) -> None:
    """Refuse `context_overflow: retrieve` where its passages cannot be ranked by meaning: ranking
    them by words instead would show the model other passages than on a machine that has the
    embedder, so one graph's prompts would depend on where it runs."""
    lacking = overflow.unavailable() if overflow.retrieves(node) else []
    if lacking:
        raise EngineError(
            f"node '{node.id}' has context_overflow: retrieve, which chunks and ranks a value over its budget "
            f"with the local embedder, and this install lacks {'; '.join(lacking)}",
            f"install it: {INSTALL_HINT}; or set context_overflow: truncate on the node",
            lacking,
        )


def _check_provider(node: NodeBase, runtime: Runtime) -> None:
    """Refuse up front what would fail at the node's first call (no provider, a role nobody
    serves, a model without the tools or MCP capability the node needs)."""
    role = node_field(node, "model_role", None) or "chat"
    needs = frozenset(
        name
        for name, used in (("tools", node_field(node, "tools", ())), ("mcp", node_field(node, "mcp_servers", ())))
        if used
    )
    reason = runtime.unserved(role) or runtime.lacks(role, needs)
    if reason:
        raise EngineError(f"node '{node.id}': {reason}")
