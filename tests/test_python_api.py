"""`import plait` surface: validate and load graph files without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import plait

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_load_graph_returns_the_expanded_graph() -> None:
    graph = plait.load_graph(EXAMPLES / "long_doc_summary.yaml")
    assert isinstance(graph, plait.GraphDef)
    assert "__summarize__condense" in [n.id for n in graph.nodes]
    unexpanded = plait.load_graph(EXAMPLES / "long_doc_summary.yaml", expand_skills=False)
    assert [n.id for n in unexpanded.nodes] == ["clean", "summarize", "headline"]


def test_load_graph_raises_with_every_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: g\nnodes:\n  - {id: a, type: NOPE}\n  - {id: b, type: MERGE, extra: 1}\n")
    with pytest.raises(plait.GraphInvalid) as info:
        plait.load_graph(path)
    assert sorted(d.code for d in info.value.diagnostics) == ["unknown_field", "unknown_node_type"]
    assert "bad.yaml:3" in str(info.value)


def test_validate_returns_a_result_and_unknown_names_raise() -> None:
    result = plait.validate(EXAMPLES / "video_chapters.yaml")
    assert result.valid
    assert result.to_json()["valid"] is True
    with pytest.raises(AttributeError):
        _ = plait.no_such_thing  # type: ignore[attr-defined]
