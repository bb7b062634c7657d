"""Kahn levels, cycles, entries/exits and ancestry on hand-built graphs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plait.compile.topology import Topology


def test_diamond_levels_entries_exits_and_ancestry() -> None:
    topo = Topology.build(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert topo.levels == [["a"], ["b", "c"], ["d"]]
    assert topo.entries == ["a"]
    assert topo.exits == ["d"]
    assert topo.is_upstream("a", "d")
    assert not topo.is_upstream("b", "c")
    assert not topo.is_upstream("d", "a")
    assert topo.descendants("b") == {"d"}


def test_cycle_is_found_and_nodes_behind_it_are_cyclic() -> None:
    topo = Topology.build(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("c", "b"), ("c", "d")])
    assert topo.levels == [["a"]]
    assert topo.cyclic == ["b", "c", "d"]
    assert topo.find_cycles() == [["b", "c"]]


def test_edges_to_unknown_nodes_are_ignored() -> None:
    topo = Topology.build(["a"], [("a", "END"), ("ghost", "a")])
    assert topo.entries == ["a"]
    assert topo.exits == ["a"]


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=1, max_value=30), st.data())
def test_random_dags_are_fully_levelled_and_ancestry_matches_reachability(n: int, data: st.DataObject) -> None:
    ids = [f"n{i}" for i in range(n)]
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    edges = [(ids[a], ids[b]) for a, b in pairs if a < b]  # forward edges only: a DAG
    topo = Topology.build(ids, edges)
    assert not topo.cyclic
    assert sorted(x for level in topo.levels for x in level) == sorted(ids)
    position = {x: i for i, level in enumerate(topo.levels) for x in level}
    for a, b in edges:
        assert position[a] < position[b]
    for x in ids:
        for y in ids:
            assert topo.is_upstream(x, y) == (y in topo.descendants(x))


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=2, max_value=15), st.data())
def test_a_back_edge_always_yields_a_real_cycle(n: int, data: st.DataObject) -> None:
    ids = [f"n{i}" for i in range(n)]
    chain = [(ids[i], ids[i + 1]) for i in range(n - 1)]
    back_from = data.draw(st.integers(1, n - 1))
    back_to = data.draw(st.integers(0, back_from))
    topo = Topology.build(ids, [*chain, (ids[back_from], ids[back_to])])
    cycles = topo.find_cycles()
    assert cycles
    edge_set = set(chain) | {(ids[back_from], ids[back_to])}
    for cycle in cycles:
        for i, node in enumerate(cycle):
            assert (node, cycle[(i + 1) % len(cycle)]) in edge_set
