"""The command modules share helpers through public names only: a module that reaches into
another's private name (`from plait.cli.run import _provider`) breaks when that module is
tidied, and hides what is really shared. Read from the source with `ast`, nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "plait" / "cli"


def private_uses(path: Path) -> list[str]:
    """`file:line name` for each private name of another `plait.cli` module that `path` imports
    (`from plait.cli.x import _y`) or reads off one it imported (`import plait.cli.x as x; x._y`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    own = f"plait.cli.{path.stem}"
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> a plait.cli module imported under it
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if node.module.startswith("plait.cli.") and node.module != own and _private(alias.name):
                    found.append(f"{path.name}:{node.lineno} {node.module}.{alias.name}")
                elif node.module == "plait.cli" or node.module.startswith("plait.cli."):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("plait.cli.") and alias.name != own:
                    modules[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            dotted = _dotted(node.value)
            if dotted in modules and modules[dotted] != own:
                found.append(f"{path.name}:{node.lineno} {modules[dotted]}.{node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def test_no_cli_module_imports_another_ones_private_names() -> None:
    found = [use for path in sorted(CLI.glob("*.py")) for use in private_uses(path)]
    assert found == [], "private names used across plait/cli modules:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from plait.cli.run import _provider\n", ["m.py:1 plait.cli.run._provider"]),
        ("import plait.cli.runs\nplait.cli.runs._when(1)\n", ["m.py:2 plait.cli.runs._when"]),
        ("from plait.cli import runs\nruns._when(1)\n", ["m.py:2 plait.cli.runs._when"]),
        ("import plait.cli.runs as r\nr._when(1)\n", ["m.py:2 plait.cli.runs._when"]),
        ("from plait.cli.common import fail\nx = object()\nx._private\n", []),
        ("from plait.cli.m import _mine\n", []),  # its own name, under its full path
    ],
)
def test_the_check_sees_both_ways_of_reaching_a_private_name(tmp_path: Path, source: str, expected: list[str]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source, encoding="utf-8")
    assert private_uses(module) == expected
