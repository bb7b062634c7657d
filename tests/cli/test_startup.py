"""What the `plait` entry point does before a command runs: the collector is paused while
modules load, only the named command is built, and read-only commands load none of the
heavy machinery they do not use. (How long start-up takes is measured by
bench/cli_startup.py, not here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from plait.cli.app import _named_only, app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

PAUSE_CHECK = """
import gc, sys, threading
from unittest import mock
import plait.cli.startup as startup

made = []


class Recorded(threading.Timer):
    # recorded when started, never fires by itself: however long loading takes on a busy host,
    # only this check ends the pause

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.started = False
        made.append(self)

    def start(self):
        self.started = True


with mock.patch.object(threading, "Timer", Recorded), mock.patch.object(sys, "argv", ["plait", "--version"]):
    try:
        startup.main()
    except SystemExit:
        pass
print(gc.isenabled())
(timer,) = made
print(timer.started and timer.interval == startup.PAUSE_S and timer.daemon)
timer.function()  # what the timer does when it fires
print(gc.isenabled())
"""


def test_the_collector_is_paused_while_modules_load_then_runs_again() -> None:
    result = subprocess.run([sys.executable, "-c", PAUSE_CHECK], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-3:] == ["False", "True", "True"]


@pytest.mark.parametrize(
    ("argv", "groups", "commands"),
    [
        (["plait", "runs", "show", "abc"], ["runs"], []),
        (["plait", "validate", "g.yaml"], [], ["validate"]),
        (["plait", "run", "g.yaml"], [], ["run"]),
    ],
)
def test_only_the_command_named_is_built(argv: list[str], groups: list[str], commands: list[str]) -> None:
    kept_groups, kept_commands = _named_only(argv)
    assert [g.name for g in kept_groups] == groups
    assert [c.name or c.callback.__name__ for c in kept_commands if c.callback is not None] == commands


@pytest.mark.parametrize("argv", [["plait"], ["plait", "--help"], ["plait", "--version"], ["plait", "bogus"]])
def test_anything_else_builds_every_command(argv: list[str]) -> None:
    assert _named_only(argv) == (app.registered_groups, app.registered_commands)


def test_the_full_command_list_is_restored_after_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from plait.cli.app import main

    every = list(app.registered_groups), list(app.registered_commands)
    monkeypatch.setattr(sys, "argv", ["plait", "validate", str(EXAMPLES / "feedback_triage.yaml")])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 0
    assert (app.registered_groups, app.registered_commands) == every


LOADED = """
import sys
from unittest import mock
with mock.patch.object(sys, "argv", ["plait", *{args!r}]):
    from plait.cli.startup import main
    code = None
    try:
        main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({{"code": code, "loaded": sorted(m for m in sys.modules if m.startswith({unused!r}))}}))
"""
UNUSED = (
    "sqlalchemy.orm",  # the store's tables are Core tables
    "sqlalchemy.dialects.postgresql",  # on a SQLite store
    "alembic",  # the database is current: one query says so
    "plait.model.graph",  # no graph is parsed to list graphs or show a run
    "plait.compile",
    "plait.evolve.migrate",  # nothing needs migrating
    "plait.sandbox",
    "plait.engine.runner",
)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("startup")
    (folder / ".plait").mkdir()  # the folder's own store, which the commands below find
    done = subprocess.run(
        [
            sys.executable, "-m", "plait", "run", str(EXAMPLES / "feedback_triage.yaml"),
            "--input-file", str(EXAMPLES / "inputs" / "feedback_triage.yaml"),
            "--llm", f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}", "--json", "--quiet",
        ],
        cwd=folder, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return folder, str(json.loads(done.stdout)["run_id"])


@pytest.mark.parametrize("command", [["runs", "list"], ["runs", "show", "RUN"], ["graphs", "list"]])
def test_read_only_commands_load_no_machinery_they_do_not_use(database: tuple[Path, str], command: list[str]) -> None:
    folder, run_id = database
    args = [run_id if a == "RUN" else a for a in command]
    script = "import json\n" + LOADED.format(args=args, unused=UNUSED)
    result = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] in (0, None)
    assert report["loaded"] == []
