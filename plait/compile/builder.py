"""Building a graph in code: the same document a graph file holds, written with method calls.

A builder only collects the document; everything is checked by the compiler, as a file is, so
a graph built in code gets the same `GraphDef`, the same diagnostics (without line numbers)
and the same YAML as the file with that content. Fields are the file format's own names
(docs/graph-format.md): a builder adds no second vocabulary to learn. A graph file a node names
(a SUBGRAPH's or MAP's `graph`, a SKILL) is found from the working directory, as for a file
that lies there.

    >>> g = GraphBuilder("greet", input_schema={"type": "object", "properties": {"name": {"type": "string"}}})
    >>> g.llm_call("hello", "Say hello to {{ input.name }}.").transform("shout", "nodes.hello.toUpperCase()")
    >>> g.edge("hello", "shout")
    >>> graph = g.build()          # GraphDef, or GraphInvalid with every diagnostic
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from plait.compile.compiler import compile_doc
from plait.compile.files import GraphInvalid
from plait.compile.result import CompileResult
from plait.compile.source import SourceDoc, check_values
from plait.model import GraphDef


class GraphBuilder:
    """Collects a graph's document: its header, schemas, nodes and edges, in the order given."""

    def __init__(
        self,
        id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        """`id`: the graph's id (its slug once stored); `fields`: any other top-level field of
        the file format (`output`, `max_cost_usd`, `migrations`...)."""
        header = {"name": name, "description": description, "input_schema": input_schema, **fields}
        self._doc: dict[str, Any] = {"plait": 1, "id": id, **{k: v for k, v in header.items() if v is not None}}
        self._schemas: list[dict[str, Any]] = []
        self._nodes: list[dict[str, Any]] = []
        self._edges: list[dict[str, Any]] = []

    def schema(self, id: str, schema: dict[str, Any], *, version: str = "1.0.0", **fields: Any) -> GraphBuilder:
        """A JSON Schema that edges name by `schema_id`."""
        self._schemas.append({"id": id, "version": version, "schema": schema, **fields})
        return self

    def node(self, id: str, type: str, **fields: Any) -> GraphBuilder:
        """A node of any type, with its fields as the file format names them."""
        self._nodes.append({"id": id, "type": type, **fields})
        return self

    def llm_call(self, id: str, prompt: str, *, system: str | None = None, **fields: Any) -> GraphBuilder:
        """An LLM_CALL: `prompt` is its user prompt template, `system` its system prompt."""
        given = {"system_prompt": system} if system is not None else {}
        return self.node(id, "LLM_CALL", **given, user_prompt_tpl=prompt, **fields)

    def transform(self, id: str, expression: str, **fields: Any) -> GraphBuilder:
        """A TRANSFORM: a JavaScript expression over `input`, `nodes` and `current`."""
        return self.node(id, "TRANSFORM", transform_expr=expression, **fields)

    def condition(self, id: str, expression: str, **fields: Any) -> GraphBuilder:
        """A CONDITION: its expression's value picks the out-edges whose `condition_key` equals it."""
        return self.node(id, "CONDITION", condition_expr=expression, **fields)

    def edge(self, source: str, target: str, *, schema_id: str | None = None, **fields: Any) -> GraphBuilder:
        """An edge from `source` to `target`, under the schema `schema_id` when given."""
        given = {"schema_id": schema_id} if schema_id is not None else {}
        self._edges.append({"source": source, "target": target, **given, **fields})
        return self

    def data(self) -> dict[str, Any]:
        """The document as a graph file would hold it (a copy: changing it changes no builder)."""
        doc = dict(self._doc)
        if self._schemas:
            doc["schemas"] = self._schemas
        doc["nodes"] = self._nodes
        doc["edges"] = self._edges
        return copy.deepcopy(doc)

    def check(self) -> CompileResult:
        """Every check `plait validate` makes on a file with this content: errors and warnings."""
        here = str(Path.cwd())  # code run by the person who owns this machine: files from here
        return compile_doc(check_values(SourceDoc(data=self.data(), folder=here)))

    def build(self) -> GraphDef:
        """The compiled graph; raises GraphInvalid with every diagnostic when it is not valid."""
        result = self.check()
        if not result.valid or result.expanded is None:
            raise GraphInvalid(result.errors)
        return result.expanded

    def to_yaml(self) -> str:
        """The compiled graph as the YAML `plait graphs export` writes."""
        from plait.compile.dump import dump_yaml

        return dump_yaml(self.build())
