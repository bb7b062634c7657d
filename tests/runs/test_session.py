"""A run session is what a command drives runs with: `plait run` checks the graph, starts the run
and executes it with one engine, and every engine a surface opens settles child runs into their
parents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from plait.cli.app import app
from plait.engine.runner import Engine


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The options of every engine built from now on."""
    built: list[dict[str, Any]] = []
    original = Engine.__init__

    def counted(self: Engine, *args: Any, **options: Any) -> None:
        built.append(options)
        original(self, *args, **options)

    monkeypatch.setattr(Engine, "__init__", counted)
    return built


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The graph files compiled (parsed, checked) when a command stores them, from now on."""
    from plait.evolve import files

    done: list[str] = []
    compile_file = files.compile_file
    monkeypatch.setattr(files, "compile_file", lambda path, **k: done.append(str(path)) or compile_file(path, **k))
    return done


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The graphs the engine plans (works out what each node reads, the topology) from now on."""
    from plait.engine import state

    planned: list[str] = []
    plan = state.plan_graph
    monkeypatch.setattr(state, "plan_graph", lambda graph: planned.append(graph.id) or plan(graph))
    return planned


def test_plait_run_checks_starts_and_executes_with_one_engine(
    tmp_path: Path, engines: list[dict[str, Any]], plans: list[str], compiled: list[str]
) -> None:
    graph = tmp_path / "one.yaml"
    graph.write_text(
        yaml.safe_dump({"id": "one", "nodes": [{"id": "t", "type": "TRANSFORM", "transform_expr": "({n: 1})"}]})
    )
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    done = CliRunner().invoke(app, ["run", str(graph), "--db", db, "--json", "--quiet"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["output"] == {"n": 1}
    assert len(engines) == 1  # the check before the run exists and the execution share it
    assert engines[0]["child_settled"] is not None  # a child run corrected later reaches its parent
    assert plans == ["one"]  # planned once, for the check and the execution
    assert compiled == [str(graph)]  # the file is compiled once, as it is stored


def test_plait_run_parses_plait_toml_once(
    tmp_path: Path, engines: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait.config import forget_loaded, loader

    parsed: list[str] = []
    parse = loader._parse
    monkeypatch.setattr(loader, "_parse", lambda path, raw: parsed.append(str(path)) or parse(path, raw))
    forget_loaded()
    config = tmp_path / "plait.toml"
    config.write_text('[sandbox]\nmax_timeout_s = 5\n\n[tools]\nallow = ["echo"]\n')
    graph = tmp_path / "one.yaml"
    graph.write_text(
        yaml.safe_dump({"id": "one", "nodes": [{"id": "t", "type": "TRANSFORM", "transform_expr": "({n: 2})"}]})
    )
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    done = CliRunner().invoke(app, ["run", str(graph), "--db", db, "--config", str(config), "--json", "--quiet"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["output"] == {"n": 2}
    assert parsed == [str(config)]  # asked for in several places, parsed once
    config.write_text('[sandbox]\nmax_timeout_s = 6\n\n[tools]\nallow = ["echo"]\n')
    assert loader.load_config(str(config)).sandbox.max_timeout_s == 6  # a changed file is read again
    assert len(parsed) == 2
    forget_loaded()
