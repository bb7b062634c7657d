"""Loading parsed data into a GraphDef: every validation error becomes a positioned, hinted diagnostic."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from plait.compile import compile_file
from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.load import LoadedGraph, load_graph
from plait.compile.source import read_source
from plait.model.graph import EdgeDef
from plait.model.nodes import ConditionNode, LlmCallNode, NodeType


def write(tmp_path: Path, text: str, name: str = "g.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, name: str = "g.yaml") -> LoadedGraph:
    return load_graph(read_source(write(tmp_path, text, name)))


def only(loaded: LoadedGraph) -> Diagnostic:
    assert len(loaded.diagnostics) == 1, loaded.diagnostics
    diag = loaded.diagnostics[0]
    assert diag.category is Category.CONFIG
    assert diag.file is not None
    assert diag.hint, diag
    return diag


# --- wrong types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "hint_word"),
    [
        ("label", "[1, 2]", "string"),
        ("max_retries", "lots", "whole number"),
        ("max_retries", "[3]", "whole number"),
        ("cache", "maybe", "true or false"),
        ("position", "3", "mapping"),
        ("context_include", "input", "list"),
        ("temperature_override", "hot", "number"),
    ],
)
def test_a_value_of_the_wrong_type_is_wrong_type_on_its_line(
    tmp_path: Path, field: str, value: str, hint_word: str
) -> None:
    loaded = load(
        tmp_path,
        f"""
        id: g
        nodes:
          - id: ask
            type: LLM_CALL
            user_prompt_tpl: hi
            {field}: {value}
        """,
    )
    diag = only(loaded)
    assert (diag.code, diag.line, diag.node_id) == ("wrong_type", 6, "ask")
    assert f"nodes.0.{field}" in diag.message
    assert hint_word in (diag.hint or "")
    assert loaded.graph.nodes == []  # the bad node is left out, not half-built


@pytest.mark.parametrize(("section", "value", "kind"), [("nodes", "{a: 1}", "dict"), ("edges", "3", "int")])
def test_a_section_that_is_not_a_list_is_wrong_type(tmp_path: Path, section: str, value: str, kind: str) -> None:
    diag = only(load(tmp_path, f"id: g\n{section}: {value}\n"))
    assert (diag.code, diag.line) == ("wrong_type", 2)
    assert f"'{section}' must be a list, not {kind}" in diag.message


def test_a_bad_graph_header_value_is_reported_on_its_line(tmp_path: Path) -> None:
    loaded = load(tmp_path, "id: g\nname: x\nmax_cost_usd: -1\nnodes: []\n")
    diag = only(loaded)
    assert (diag.code, diag.line) == ("invalid_value", 3)
    assert "max_cost_usd" in diag.message
    assert loaded.graph.name == "x"  # the valid header fields are kept


# --- unknown fields -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment", "suggestion"),
    [
        ("id: g\nnam: x\nnodes: []\n", 2, "unknown field 'nam'", "name"),
        ("id: g\nschemas: []\nnodes: []\nedge: []\n", 4, "unknown field 'edge'", "edges"),
        (
            "id: g\nnodes:\n  - id: a\n    type: LLM_CALL\n    user_prompt_tpl: hi\n    temprature_override: 1\n",
            6,
            "field 'temprature_override' is not allowed on LLM_CALL nodes",
            "temperature_override",
        ),
        (
            "id: g\nnodes:\n  - id: a\n    type: MERGE\nedges:\n  - source: a\n    targte: a\n",
            7,
            "unknown field 'edges.0.targte'",
            "target",
        ),
        ("id: g\nschemas:\n  - id: s\n    shema: {type: object}\n", 4, "unknown field 'schemas.0.shema'", "schema"),
    ],
    ids=["graph", "graph_section", "node", "edge", "schema"],
)
def test_unknown_fields_are_reported_with_a_did_you_mean_hint(
    tmp_path: Path, text: str, line: int, fragment: str, suggestion: str
) -> None:
    diags = [d for d in load(tmp_path, text).diagnostics if d.code == "unknown_field"]
    assert len(diags) == 1, diags
    assert diags[0].line == line
    assert fragment in diags[0].message
    assert diags[0].hint == f"did you mean '{suggestion}'?"


def test_an_unknown_field_with_nothing_close_says_to_remove_it(tmp_path: Path) -> None:
    diag = only(load(tmp_path, "id: g\nnodes:\n  - id: a\n    type: MERGE\n    zzzzqqq: 1\n"))
    assert (diag.code, diag.line, diag.node_id) == ("unknown_field", 5, "a")
    assert diag.hint == "remove it"


# --- node types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "suggestion"), [("LLM_CAL", "LLM_CALL"), ("llm_call", "LLM_CALL"), ("MERG", "MERGE")]
)
def test_unknown_node_type_suggests_the_closest(tmp_path: Path, given: str, suggestion: str) -> None:
    loaded = load(tmp_path, f"id: g\nnodes:\n  - id: a\n    label: x\n    type: {given}\n")
    diag = only(loaded)
    assert (diag.code, diag.node_id, diag.line) == ("unknown_node_type", "a", 5)
    assert f"'{given}'" in diag.message
    assert diag.hint == f"did you mean '{suggestion}'?"
    assert loaded.invalid_node_ids == {"a"}


def test_an_unknown_node_type_with_nothing_close_lists_the_types(tmp_path: Path) -> None:
    diag = only(load(tmp_path, "id: g\nnodes:\n  - id: a\n    type: XYZZY\n"))
    assert diag.code == "unknown_node_type"
    assert all(t.value in (diag.hint or "") for t in NodeType)


def test_a_node_without_type_is_missing_field(tmp_path: Path) -> None:
    diag = only(load(tmp_path, "id: g\nnodes:\n  - id: a\n    type: MERGE\n  - id: b\n    label: no type\n"))
    assert (diag.code, diag.node_id, diag.line) == ("missing_field", "b", 5)
    assert "'type'" in diag.message
    assert "type:" in (diag.hint or "")


def test_a_field_of_another_node_type_is_field_not_allowed(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        """
        id: g
        nodes:
          - id: ask
            type: LLM_CALL
            user_prompt_tpl: hi
            condition_expr: nodes.x.ok
        """,
    )
    diag = only(loaded)
    assert (diag.code, diag.node_id, diag.line) == ("field_not_allowed", "ask", 6)
    assert "'condition_expr'" in diag.message
    assert "LLM_CALL" in diag.message
    assert "CONDITION" in diag.message
    assert "condition_expr" in (diag.hint or "")


def test_a_required_field_of_the_node_type_is_missing_field(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        """
        id: g
        nodes:
          - id: shape
            type: TRANSFORM
            label: Shape the output
        """,
    )
    diag = only(loaded)
    assert (diag.code, diag.node_id, diag.line) == ("missing_field", "shape", 3)
    assert "transform_expr" in diag.message
    assert "TRANSFORM" in diag.message
    assert diag.hint == "add `transform_expr:`"


def test_node_fields_build_the_class_of_their_type(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        """
        id: g
        nodes:
          - {id: ask, type: LLM_CALL, user_prompt_tpl: hi, max_retries: 2}
          - {id: route, type: CONDITION, condition_expr: nodes.ask.ok}
        """,
    )
    assert loaded.diagnostics == []
    ask, route = loaded.graph.nodes
    assert isinstance(ask, LlmCallNode)
    assert ask.max_retries == 2
    assert isinstance(route, ConditionNode)
    assert route.condition_expr == "nodes.ask.ok"
    assert loaded.node_line("route") == 4
    assert loaded.node_line("ask", "max_retries") == 3


# --- edges and schemas ----------------------------------------------------------------------------

TWO_NODES = """
id: g
nodes:
  - {id: a, type: MERGE}
  - {id: b, type: MERGE}
"""


def test_short_and_long_edge_endpoint_names_are_both_accepted(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        TWO_NODES
        + """
edges:
  - {source: a, target: b}
  - {source_node_id: a, target_node_id: b, id: long}
  - {source: a, target_node_id: b, id: mixed}
""",
    )
    assert loaded.diagnostics == []
    assert [(e.id, e.source_node_id, e.target_node_id) for e in loaded.graph.edges] == [
        ("a__b", "a", "b"),
        ("long", "a", "b"),
        ("mixed", "a", "b"),
    ]


def test_an_edge_without_its_source_is_missing_field(tmp_path: Path) -> None:
    diag = only(load(tmp_path, TWO_NODES + "edges:\n  - {target: b}\n"))
    assert (diag.code, diag.line) == ("missing_field", 6)
    assert "source" in diag.message


def test_edges_without_id_are_named_source__target_and_kept_unique(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        TWO_NODES
        + """
edges:
  - {source: a, target: b}
  - {source: a, target: b}
  - {source: b, target: END}
  - {id: a__b_3, source: a, target: b}
  - {source: a, target: b}
""",
    )
    assert loaded.diagnostics == []
    assert [e.id for e in loaded.graph.edges] == ["a__b", "a__b_2", "b__END", "a__b_3", "a__b_4"]
    assert loaded.edge_line("a__b_2") == 8
    assert loaded.edge_line("a__b_4") == 11


def test_schema_registry_is_accepted_as_the_schemas_section(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        """
        id: g
        schema_registry:
          - id: answer
            version: 1.2.0
            schema: {type: object}
        nodes: []
        """,
    )
    assert loaded.diagnostics == []
    assert [(s.id, s.version, s.schema_) for s in loaded.graph.schemas] == [("answer", "1.2.0", {"type": "object"})]
    assert loaded.schema_paths == {"answer": ("schema_registry", 0)}
    assert loaded.line(("schema_registry", 0)) == 3


def test_errors_in_schema_registry_point_into_it(tmp_path: Path) -> None:
    diag = only(load(tmp_path, "id: g\nschema_registry:\n  - id: s\n    version: one\n    schema: {}\n"))
    assert (diag.code, diag.line) == ("bad_semver", 4)


@pytest.mark.parametrize(("written", "key"), [("yes", "true"), ("true", "true"), ("1", "1"), ("'yes'", "yes")])
def test_condition_keys_are_strings_whatever_yaml_made_of_them(tmp_path: Path, written: str, key: str) -> None:
    loaded = load(
        tmp_path,
        f"""
        id: g
        nodes:
          - {{id: route, type: CONDITION, condition_expr: "1"}}
          - {{id: b, type: MERGE}}
        edges:
          - {{source: route, target: b, condition_key: {written}}}
        """,
    )
    assert loaded.diagnostics == []
    assert loaded.graph.edges[0].condition_key == key


def test_condition_keys_are_strings_in_json_too(tmp_path: Path) -> None:
    text = '{"id": "g", "nodes": [], "edges": [{"source": "a", "target": "b", "condition_key": true},'
    text += ' {"source": "a", "target": "c", "condition_key": 2}]}'
    loaded = load(tmp_path, text, name="g.json")
    assert [e.condition_key for e in loaded.graph.edges] == ["true", "2"]


# --- many problems at once ------------------------------------------------------------------------

MANY_BAD_NODES = """
id: g
nodes:
  - id: ok_one
    type: LLM_CALL
    user_prompt_tpl: hi
  - id: bad_type
    type: LLM_CAL
    user_prompt_tpl: hi
  - id: bad_field
    type: LLM_CALL
    user_prompt_tpl: hi
    condition_expr: x
  - id: no_expr
    type: TRANSFORM
  - id: two_problems
    type: LLM_CALL
    user_promt_tpl: hi
    max_retries: -1
  - id: ok_two
    type: MERGE
edges:
  - {source: ok_one, target: bad_type}
  - {source: bad_type, target: bad_field}
  - {source: bad_field, target: no_expr}
  - {source: no_expr, target: two_problems}
  - {source: two_problems, target: ok_two}
  - {source: ok_one, target: ok_two}
"""


def test_every_bad_node_is_reported_with_its_own_line_and_id(tmp_path: Path) -> None:
    loaded = load(tmp_path, MANY_BAD_NODES)
    found = sorted((d.line or 0, d.node_id or "", d.code) for d in loaded.diagnostics)
    assert found == [
        (7, "bad_type", "unknown_node_type"),
        (12, "bad_field", "field_not_allowed"),
        (13, "no_expr", "missing_field"),
        (17, "two_problems", "unknown_field"),
        (18, "two_problems", "invalid_value"),
    ]
    assert all(d.hint for d in loaded.diagnostics)
    assert [n.id for n in loaded.graph.nodes] == ["ok_one", "ok_two"]
    assert loaded.invalid_node_ids == {"bad_type", "bad_field", "no_expr", "two_problems"}
    assert len(loaded.graph.edges) == 6


def test_bad_nodes_do_not_cause_errors_in_their_neighbours(tmp_path: Path) -> None:
    result = compile_file(write(tmp_path, MANY_BAD_NODES))
    load_codes = sorted(d.code for d in load(tmp_path, MANY_BAD_NODES).diagnostics)
    assert sorted(d.code for d in result.errors) == load_codes  # nothing added by the compiler passes
    assert not any(d.code in ("dangling_edge", "unreachable", "not_upstream") for d in result.errors)


def test_neighbours_of_a_bad_node_keep_being_checked(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        id: g
        nodes:
          - {id: a, type: LLM_CALL, user_prompt_tpl: "{{ input.q }}"}
          - {id: broken, type: LLM_CAL, user_prompt_tpl: "{{ a.text }}"}
          - id: c
            type: LLM_CALL
            user_prompt_tpl: "{{ broken.text }}"
            context_include: [broken, a]
        edges:
          - {source: a, target: broken}
          - {source: broken, target: c}
          - {source: c, target: nowhere}
        """,
    )
    result = compile_file(path)
    assert sorted((d.code, d.line) for d in result.errors) == [("dangling_edge", 12), ("unknown_node_type", 4)]
    dangling = next(d for d in result.errors if d.code == "dangling_edge")
    assert dangling.edge_id == "c__nowhere"
    assert "'nowhere'" in dangling.message


def test_a_node_with_an_invalid_id_does_not_make_its_edges_dangle(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        id: g
        nodes:
          - {id: a, type: MERGE}
          - {id: bad-id, type: MERGE}
          - {id: c, type: MERGE}
        edges:
          - {source: a, target: bad-id}
          - {source: bad-id, target: c}
          - {source: a, target: c}
        """,
    )
    result = compile_file(path)
    assert [(d.code, d.line, d.node_id) for d in result.errors] == [("invalid_value", 4, "bad-id")]


def test_the_loaded_graph_keeps_what_validated(tmp_path: Path) -> None:
    loaded = load(tmp_path, MANY_BAD_NODES)
    assert loaded.graph.id == "g"
    assert isinstance(loaded.graph.edges[0], EdgeDef)
    assert loaded.node_line("ok_two") == 19
    assert loaded.edge_line("ok_one__ok_two") == 27
