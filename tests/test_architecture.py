"""The layers of docs/architecture.md hold: the import-linter contracts in pyproject.toml pass,
and a contract that is broken is reported as broken (so the check can fail)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
]


def lint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINT, "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_layer_contracts_are_kept() -> None:
    result = lint()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_backward_import_breaks_the_layers(tmp_path: Path) -> None:
    """A copy of the package where the store imports the engine: the contract reports it."""
    copy = tmp_path / "plait"
    subprocess.run(["cp", "-r", str(ROOT / "plait"), str(copy)], check=True)
    (copy / "store" / "backward.py").write_text("from plait.engine.runner import Engine\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    result = lint(cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "plait.store.backward -> plait.engine.runner" in result.stdout
