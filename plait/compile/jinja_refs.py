"""References in templates that need a real Jinja parse: walk the AST for static paths.

Imported only when a template uses more than `{{ path | filter }}`, so that
plain prompts never pay for importing Jinja.
"""

from __future__ import annotations

from jinja2 import TemplateSyntaxError, nodes

from plait.compile.template_types import Segment, TemplateError, TemplateRef, environment


def jinja_refs(source: str) -> list[TemplateRef]:
    """References of a template that uses real Jinja syntax (loops, conditionals, filter arguments)."""
    env = environment()
    try:
        tree = env.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error: {exc.message}", exc.lineno) from None
    for flt in tree.find_all(nodes.Filter):
        if flt.name not in env.filters:
            raise TemplateError(f"unknown filter '{flt.name}'", flt.lineno)
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    refs: list[TemplateRef] = []
    _collect(tree, local, refs)
    return refs


def _collect(node: nodes.Node, local: set[str], refs: list[TemplateRef]) -> None:
    if isinstance(node, nodes.Getattr | nodes.Getitem | nodes.Name):
        chain = _chain(node)
        if chain is not None:
            base, path = chain
            if base.ctx == "load" and base.name not in local:
                refs.append(TemplateRef((base.name, *path), "jinja"))
            _collect_dynamic_indexes(node, local, refs)
            return
    for child in node.iter_child_nodes():
        _collect(child, local, refs)


def _chain(node: nodes.Node) -> tuple[nodes.Name, list[Segment]] | None:
    """Unwind `a.b[0]` into (Name a, ['b', 0]); the path stops at the first dynamic index."""
    path: list[Segment] = []
    while True:
        if isinstance(node, nodes.Name):
            return node, path[::-1]
        if isinstance(node, nodes.Getattr):
            path.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem):
            arg = node.arg
            if isinstance(arg, nodes.Const) and isinstance(arg.value, str | int):
                path.append(arg.value)
            else:
                path.clear()  # dynamic index: only the part before it is a static path
            node = node.node
        else:
            return None


def _collect_dynamic_indexes(node: nodes.Node, local: set[str], refs: list[TemplateRef]) -> None:
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        if isinstance(node, nodes.Getitem) and not isinstance(node.arg, nodes.Const):
            _collect(node.arg, local, refs)
        node = node.node


def printed_paths(source: str) -> list[tuple[Segment, ...]]:
    """The static paths a template prints unconditionally, without a `default`: outside `if`,
    `for` and macros, and not only tested or compared. A value missing at one of them prints as
    nothing, which is what a pre-check looks for. Paths it sets itself (`{% set %}`) are left out."""
    env = environment()
    try:
        tree = env.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error: {exc.message}", exc.lineno) from None
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    paths: list[tuple[Segment, ...]] = []
    for output in tree.body:
        if isinstance(output, nodes.Output):
            for expr in output.nodes:
                _printed(expr, local, paths)
    return paths


def _printed(node: nodes.Node, local: set[str], paths: list[tuple[Segment, ...]]) -> None:
    if isinstance(node, nodes.TemplateData | nodes.Const):
        return
    if isinstance(node, nodes.Filter):
        if node.name in ("default", "d") or node.node is None:
            return
        _printed(node.node, local, paths)
        return
    if isinstance(node, nodes.Concat):
        for part in node.nodes:
            _printed(part, local, paths)
        return
    chain = _chain(node) if isinstance(node, nodes.Getattr | nodes.Getitem | nodes.Name) else None
    if chain is not None and chain[0].ctx == "load" and chain[0].name not in local:
        paths.append((chain[0].name, *chain[1]))
