"""Names that changed keep working for a while, and say what they are now (docs/changes.md)."""

from __future__ import annotations

import importlib
import sys

import pytest

from plait.store import Store
from tests.store.store_helpers import graph, new_run


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("plait.llm.config", "load_config", "plait.config"),
        ("plait.tools.mcp_config", "McpServerConfig", "plait.config"),
        ("plait.api_surface", "GraphInvalid", "plait.compile"),
    ],
)
def test_an_old_module_still_imports_and_warns(old: str, name: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"import from `{new}`"):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_old_record_and_store_names_still_read_and_warn(store: Store) -> None:
    stored = store.graphs.save(graph())
    run = new_run(store, "other")
    with pytest.warns(DeprecationWarning, match="use `graph_id`"):
        assert stored.def_id == stored.graph_id
    with pytest.warns(DeprecationWarning, match="use `graph_version`"):
        assert run.graph_def_ver == run.graph_version
    with pytest.warns(DeprecationWarning, match="use `graph_id`"):
        assert store.graphs.list()[0].def_id == store.graphs.list()[0].graph_id
    with pytest.warns(DeprecationWarning, match="use `Store.db`"):
        assert store.engine is store.db


def test_the_process_sandbox_name_still_imports_and_warns() -> None:
    import plait.sandbox

    with pytest.warns(DeprecationWarning, match="use `plait.sandbox.JsSandbox`"):
        old = plait.sandbox.ProcessSandbox
    assert old is plait.sandbox.JsSandbox
    with old(workers=1) as box:
        assert box.evaluate("input.n + 1", {"input": {"n": 1}}, owner="run") == 2
