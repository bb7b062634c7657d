"""The README's Quick start stays true: two commands, and the main job's `plait` part really runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, re.DOTALL)


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_main_job_runs_a_real_graph(tmp_path: Path) -> None:
    main_job = quick_start_commands()[0]
    plait_part = main_job.split("&& .venv/bin/plait ", 1)[1]
    args = shlex.split(plait_part)
    db = f"sqlite:///{tmp_path / 'readme.db'}"
    result = subprocess.run(
        [sys.executable, "-m", "plait", *args, "--db", db], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["label"] in ("bug", "praise", "question")  # the model's choice; the schema holds it to these
    assert output["action"].startswith(("bug filed: ", "answered", "thanked"))
    from plait.config import EMBEDDED_MODEL
    from plait.store import Store

    with Store(db) as store:
        (run,) = store.runs.list()
        models = {n.attempts[-1].get("model") for n in store.runs.node_runs(run.id) if n.tokens_output}
    assert models == {EMBEDDED_MODEL}, "the main job must run on the embedded model"


def test_the_validate_example_prints_what_the_readme_shows() -> None:
    from tests.plait_cli import run_plait

    shown = re.search(r"```\n\$ plait validate (\S+)\n(.+?)```", README, re.DOTALL)
    assert shown is not None, "the README's `plait validate` example is gone"
    path, output = shown.group(1), shown.group(2)
    result = run_plait("validate", path, cwd=ROOT, env={**os.environ, "COLUMNS": "400"})
    assert result.returncode == 2, result.stderr
    assert result.stderr + result.stdout == output  # diagnostics on stderr, the verdict on stdout


def test_each_local_model_server_snippet_is_a_valid_configuration(tmp_path: Path) -> None:
    from tests.plait_cli import run_plait

    section = README.split("## A real model on your own machine", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```toml\n(.+?)```", section, re.DOTALL)
    assert len(snippets) == 3  # llama.cpp's server, Ollama, vLLM
    for index, snippet in enumerate(snippets):
        path = tmp_path / f"plait{index}.toml"
        path.write_text(snippet)
        checked = run_plait("config", "check", "--config", str(path), "--json", cwd=tmp_path)
        assert checked.returncode == 0, checked.stderr
        report = json.loads(checked.stdout)
        provider = re.search(r'^id = "(\w+)"', snippet, re.MULTILINE)
        assert provider is not None
        assert report["ok"] is True
        assert report["roles"]["chat"]["resolves_to"].startswith(provider.group(1) + "/")
