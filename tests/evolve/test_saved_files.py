"""A graph file stored once per process: starting many runs of one unchanged file does not
store it again, yet a database emptied or replaced at the same address gets it stored anew."""

from __future__ import annotations

from pathlib import Path

from plait.evolve.files import save_graph_file
from plait.runs.start import start_run
from plait.store import Store

GRAPH = """
id: echo_file
nodes:
  - {id: shape, type: TRANSFORM, transform_expr: "({text: 'x'})"}
edges:
  - {source: shape, target: END}
"""


def test_a_file_is_stored_once_and_again_in_a_database_replaced_at_the_same_address(tmp_path: Path) -> None:
    graph = tmp_path / "graph.yaml"
    graph.write_text(GRAPH)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store(url) as store:
        first = save_graph_file(store, graph)
        assert save_graph_file(store, graph) == first  # unchanged: the same version, not stored again
        assert store.graphs.get(first.graph_id).version == 1
    (tmp_path / "runs.db").unlink()  # the database is replaced while this process runs
    with Store(url) as store:
        again = save_graph_file(store, graph)
        assert again.graph_id != first.graph_id
        assert store.graphs.get(again.graph_id, again.version).version == again.version
        assert start_run(store, str(graph), {})  # the run starts on what this database holds
