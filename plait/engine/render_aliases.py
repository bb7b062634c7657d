"""`<node_id>.output…` in a template the renderer runs: the node's output as a whole.

The other names graphs may use for Plait's (`currentInput`, `nodeOutputs`, `currentNodeId`)
are names a node's view holds (`render.build_view`). This one cannot be: `classify.output`
reads the field `output` of the value named `classify`, and only the names a render is given
say whether `classify` is a node. So where a template reads `.output` (or `["output"]`) of a
bare name it does not set itself, the parsed template asks `output_of` instead, which reads
it as `plait.compile.refs.resolve_ref` does for the checks and the pre-check: a node's output
as a whole, unless that output has a field `output`; anything else's field `output`.
"""

from __future__ import annotations

from typing import Any

from jinja2 import nodes, pass_context
from jinja2.runtime import Context
from jinja2.visitor import NodeTransformer

from plait.compile.refs import NODE_ID_NAME, OUTPUT_STEP, RESERVED_ROOTS, STATE_ALIASES

_OUTPUT_OF = f"{__name__}.output_of"
"""What the parsed template calls: imported by the compiled template itself, so that no name a
render is given (a node's id, a param) can stand in its way."""
_NOT_NODES = frozenset({*RESERVED_ROOTS, *STATE_ALIASES, NODE_ID_NAME, "context"})


def with_output_of(tree: nodes.Template) -> nodes.Template:
    """`tree` with each `<name>.output` / `<name>["output"]` of a bare name it does not set
    itself (a loop variable, a `set`, a macro's parameter) read through `output_of`."""
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    result = _OutputOf(local).visit(tree)
    assert isinstance(result, nodes.Template)
    return result


class _OutputOf(NodeTransformer):
    def __init__(self, local: set[str]) -> None:
        self.local = local

    def visit_Getattr(self, node: nodes.Getattr) -> nodes.Node:
        self.generic_visit(node)
        return self._replaced(node, node.node) if node.attr == OUTPUT_STEP else node

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        self.generic_visit(node)
        if isinstance(node.arg, nodes.Const) and node.arg.value == OUTPUT_STEP:
            return self._replaced(node, node.node)
        return node

    def _replaced(self, node: nodes.Getattr | nodes.Getitem, owner: nodes.Node) -> nodes.Node:
        if node.ctx != "load" or not isinstance(owner, nodes.Name) or owner.ctx != "load":
            return node
        if owner.name in self.local or owner.name in _NOT_NODES:
            return node
        call = nodes.Call(nodes.ImportedName(_OUTPUT_OF), [nodes.Const(owner.name), owner], [], None, None)
        return call.set_lineno(node.lineno)


@pass_context
def output_of(context: Context, name: str, value: Any) -> Any:
    """`<name>.output` where the template reads `value` as `name`: `value` itself when `name`
    is a node's id in this render (not a param) and `value` has no field `output`; else the
    field `output` of `value`, as Jinja reads any other field."""
    params = context.get("params")
    outputs = context.get("nodes")
    is_node = isinstance(outputs, dict) and name in outputs and not (isinstance(params, dict) and name in params)
    if is_node and not (isinstance(value, dict) and OUTPUT_STEP in value):
        return value
    return context.environment.getattr(value, OUTPUT_STEP)
