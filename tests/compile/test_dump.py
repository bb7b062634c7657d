"""`dump_yaml` writes a GraphDef that loads back equal, and keeps prompts readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.compile import compile_file
from plait.compile.dump import dump_yaml
from plait.compile.load import load_graph
from plait.compile.source import parse_source, read_source
from plait.model.graph import EdgeDef, GraphDef
from plait.model.nodes import ConditionNode, LlmCallNode, MergeNode, NodeDef, TransformNode

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def reload(text: str, file: str = "dumped.yaml") -> GraphDef:
    loaded = load_graph(parse_source(text, file=file))
    assert loaded.diagnostics == [], (loaded.diagnostics, text)
    return loaded.graph


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def scalar_styles(text: str) -> dict[str, set[str | None]]:
    styles: dict[str, set[str | None]] = {}
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.ScalarEvent):
            styles.setdefault(event.value, set()).add(event.style)
    return styles


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip_through_dump_yaml(path: Path) -> None:
    loaded = load_graph(read_source(path))
    assert loaded.diagnostics == []
    text = dump_yaml(loaded.graph)
    again = reload(text)
    assert again.model_dump() == loaded.graph.model_dump()
    assert dump_yaml(again) == text  # and dumping is stable


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_dumped_examples_compile_like_the_originals(path: Path, tmp_path: Path) -> None:
    original = compile_file(path)
    graph = load_graph(read_source(path)).graph
    copy = tmp_path / path.name
    copy.write_text(dump_yaml(graph), encoding="utf-8")
    for skill_dir in path.parent.glob("skills"):  # skills are referenced by relative path
        (tmp_path / "skills").symlink_to(skill_dir)
    for sibling in path.parent.glob("*.yaml"):  # so are the graph files a MAP or SUBGRAPH runs
        if sibling != path:
            (tmp_path / sibling.name).symlink_to(sibling)
    result = compile_file(copy)
    assert result.errors == original.errors == []
    assert result.expanded is not None
    assert original.expanded is not None
    assert result.expanded.model_dump() == original.expanded.model_dump()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_multi_line_strings_are_written_as_block_scalars(path: Path) -> None:
    graph = load_graph(read_source(path)).graph
    text = dump_yaml(graph)
    styles = scalar_styles(text)
    multi_line = [s for s in strings(graph.model_dump(mode="json")) if "\n" in s]
    for value in multi_line:
        assert styles[value] == {"|"}, value
    for node in graph.nodes:
        assert f"type: {node.type}" in text


def test_some_example_has_a_multi_line_prompt() -> None:
    # the block-scalar check above means something only if examples hold multi-line strings
    found = [p for p in EXAMPLES if any("\n" in s for s in strings(load_graph(read_source(p)).graph.model_dump()))]
    assert len(found) >= 3


def test_dump_leaves_defaults_out_and_names_fields_as_files_do() -> None:
    graph = GraphDef(
        id="g",
        schemas=[{"id": "s", "schema": {"type": "object"}}],  # type: ignore[list-item]
        nodes=[LlmCallNode(id="ask", user_prompt_tpl="hi")],
        edges=[EdgeDef(id="e", source_node_id="ask", target_node_id="END", schema_id="s")],
    )
    data = yaml.safe_load(dump_yaml(graph))
    assert data == {
        "plait": 1,
        "id": "g",
        "schemas": [{"id": "s", "version": "1.0.0", "schema": {"type": "object"}}],  # a version is always said
        "nodes": [{"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": "hi"}],
        "edges": [{"id": "e", "source": "ask", "target": "END", "schema_id": "s"}],
    }


def test_a_position_keeps_both_coordinates_zero_included() -> None:
    graph = GraphDef(
        id="g",
        nodes=[
            LlmCallNode(id="a", user_prompt_tpl="hi", position={"x": 0, "y": 0}),  # type: ignore[arg-type]
            LlmCallNode(id="b", user_prompt_tpl="hi", position={"x": 120.5, "y": 0}),  # type: ignore[arg-type]
        ],
        edges=[EdgeDef(source_node_id="a", target_node_id="b")],
    )
    data = yaml.safe_load(dump_yaml(graph))
    assert [n["position"] for n in data["nodes"]] == [{"x": 0, "y": 0}, {"x": 120.5, "y": 0}]
    assert GraphDef.model_validate(data) == graph


@pytest.mark.parametrize(
    "text",
    [
        "line one\nline two\n",
        "  indented first line\nsecond\n",
        "trailing blank lines\n\n\n",
        "no final newline\nsecond",
        "tab\tinside\nsecond\n",
        "trailing spaces  \nsecond  ",
        "windows\r\nline\r\n",
        "next line\x85char and\u2028separators\u2029",
        "a\x85b\nc\n",
        "quotes ' and \" and {{ x }} and % and # not a comment\n- not a list\n",
        "---\n...\n",
        "",
        "yes",
        "null",
        "0x1F",
        "2024-01-01",
        "\ufeffbom",
        "é 😀 \x00 \x1b",
    ],
)
def test_awkward_prompt_text_round_trips(text: str) -> None:
    graph = GraphDef(id="g", nodes=[LlmCallNode(id="ask", system_prompt=text, user_prompt_tpl=text, label=text)])
    again = reload(dump_yaml(graph))
    node = again.nodes[0]
    assert isinstance(node, LlmCallNode)
    assert (node.system_prompt, node.user_prompt_tpl, node.label) == (text, text, text)


# --- property: random valid small graphs ----------------------------------------------------------

node_ids = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
graph_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
TEMPLATING = ["%", "%s", "{{", "}}", "{{input.x}}", "{%", "'", '"', "\\", "\\n"]
YAML_SYNTAX = [":", ": ", "#", " #", "- ", "|", ">", "&a", "*a", "!!int", "---", "...", "[", "{"]
YAML_WORDS = ["yes", "no", "null", "~", "1e5", "1.5", "0x1F", "2024-01-01", "word", "Hello, world."]
UNICODE = ["é", "中文", "😀", "\x85", "\u2028", "\x00", "\ufeff"]
SPACING = ["\n", "\n\n", " ", "  ", "\t", "\r\n"]
pieces = st.sampled_from([*TEMPLATING, *YAML_SYNTAX, *YAML_WORDS, *UNICODE, *SPACING])
texts = st.lists(pieces, max_size=12).map("".join) | st.text(max_size=30)


@st.composite
def nodes(draw: st.DrawFn, node_id: str) -> NodeDef:
    kind = draw(st.sampled_from(["LLM_CALL", "TRANSFORM", "MERGE", "CONDITION"]))
    label = draw(st.none() | texts)
    if kind == "LLM_CALL":
        return LlmCallNode(
            id=node_id,
            label=label,
            system_prompt=draw(st.none() | texts),
            user_prompt_tpl=draw(texts),
            max_retries=draw(st.integers(0, 20)),
            temperature_override=draw(st.none() | st.floats(0, 2)),
        )
    if kind == "TRANSFORM":
        return TransformNode(id=node_id, label=label, transform_expr=draw(texts))
    if kind == "CONDITION":
        return ConditionNode(id=node_id, label=label, condition_expr=draw(texts))
    return MergeNode(id=node_id, label=label, description=draw(st.none() | texts))


@st.composite
def graphs(draw: st.DrawFn) -> GraphDef:
    ids = draw(st.lists(node_ids, min_size=1, max_size=6, unique=True))
    graph_nodes = [draw(nodes(node_id)) for node_id in ids]
    edges = []
    for index in range(draw(st.integers(0, 8))):
        source, target = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
        edges.append(
            EdgeDef(
                id=f"e{index}{draw(st.text(max_size=6))}",  # loaded edges always have an id
                source_node_id=source,
                target_node_id=target,
                condition_key=draw(st.none() | texts.filter(bool) | st.sampled_from(["yes", "true", "1", "null"])),
                label=draw(st.none() | texts),
            )
        )
    return GraphDef(
        id=draw(graph_ids),
        name=draw(st.none() | texts),
        description=draw(st.none() | texts),
        nodes=graph_nodes,
        edges=edges,
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_round_trip_through_dump_yaml(graph: GraphDef) -> None:
    text = dump_yaml(graph)
    assert reload(text).model_dump() == graph.model_dump()
    styles = scalar_styles(text)
    for value in strings(graph.model_dump(mode="json")):
        if block_friendly(value):
            assert styles[value] == {"|"}, value


def block_friendly(value: str) -> bool:
    """Multi-line text that a `|` block can hold as is (PyYAML refuses blocks for the rest)."""
    return (
        "\n" in value
        and " \n" not in value
        and not value.endswith(" ")
        and all(c == "\n" or (c.isprintable() and c != "\ufeff") for c in value)
    )
