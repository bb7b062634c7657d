"""`plait config check` says how TOOL programs and Python CODE are confined on this machine, and
fails where plait.toml allows programs that cannot run here; a plait.toml that would hand a
program a loader or interpreter variable is invalid. Through the real `plait` entry point."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.jail_support import require_jail
from tests.plait_cli import run_plait

PROVIDER = """
[[providers]]
id = "main"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "PLAIT_TEST_KEY"
models = [{name = "m"}]
[roles]
chat = "main/m"
"""


def check(tmp_path: Path, toml: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "plait.toml"
    path.write_text(PROVIDER + toml)
    return run_plait(
        "config", "check", "--config", str(path), *extra, env={**os.environ, "PLAIT_TEST_KEY": "k", "COLUMNS": "300"}
    )


def test_a_jailed_machine_says_so(tmp_path: Path) -> None:
    require_jail()
    done = check(tmp_path, '[tools]\nallow = ["wc"]\n[code]\npython = true\n')
    assert done.returncode == 0, done.stderr
    assert "programs: jailed in bubblewrap" in done.stdout
    shown = json.loads(check(tmp_path, '[tools]\nallow = ["wc"]\n', "--json").stdout)
    assert shown["programs"]["jail"] == "bwrap"
    assert shown["programs"]["problem"] is None


def test_an_unconfined_machine_says_so_in_words_nobody_misses(tmp_path: Path) -> None:
    done = check(tmp_path, '[tools]\nallow = ["wc"]\n[jail]\nmode = "none"\n')
    assert done.returncode == 0, done.stderr
    assert 'programs: UNCONFINED: [jail] mode = "none"' in done.stdout


def test_programs_allowed_where_no_jail_can_be_made_fail_the_check_with_the_fix(tmp_path: Path) -> None:
    done = check(tmp_path, f'[tools]\nallow = ["wc"]\n[jail]\nbwrap = "{tmp_path / "no-bwrap"}"\n')
    assert done.returncode == 2
    assert "plait.toml allows TOOL programs or Python CODE, which cannot run here" in done.stderr
    assert "apt-get install bubblewrap" in done.stderr
    assert '[jail] mode = "none"' in done.stderr


@pytest.mark.parametrize(("key", "name"), [("env", "LD_PRELOAD"), ("node_env", "BASH_ENV")])
def test_a_loader_or_interpreter_variable_makes_plait_toml_invalid(tmp_path: Path, key: str, name: str) -> None:
    done = check(tmp_path, f'[tools]\nallow = ["wc"]\n{key} = ["LANG", "{name}"]\n')
    assert done.returncode == 2
    assert f"tools.{key}: {name} is read by the loader, a shell or an interpreter" in done.stderr
