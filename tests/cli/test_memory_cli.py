"""`plait memory` as a person uses it (real `plait` processes, SQLite and PostgreSQL): remembered
facts shown, one corrected (the old one kept in the history, shown superseded), one retracted,
and acting again on a fact that is no longer active exits 2 saying why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from plait.runs.memory import remember
from plait.store import Store
from tests.plait_cli import bare_env, run_plait

pytestmark = pytest.mark.usefixtures("embedder_installed")


def plait(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=bare_env(PLAIT_DB=db_url, PATH="/usr/bin:/bin", COLUMNS="200"), timeout=120)


def test_facts_are_shown_corrected_and_retracted(db_url: str, tmp_path: Path) -> None:
    with Store(db_url) as store:
        made = remember(store, "chat:s1", [
            {"subject": "Ada", "predicate": "lives in", "object": "Paris", "text": "Ada lives in Paris."},
            {"subject": "Ada", "predicate": "drives", "object": "a red car", "text": "Ada drives a red car."},
        ], source={"messages": ["m1"]}, by="extractor")  # fmt: skip
    lives, drives = (f.id for f in made)
    assert json.loads(plait(db_url, tmp_path, "memory", "show", "--json").stdout) == [{"scope": "chat:s1", "facts": 2}]
    corrected = plait(db_url, tmp_path, "memory", "correct", lives[:8], "--object", "Lyon", "--text",
                      "Ada moved to Lyon.", "--note", "she said so", "--json")  # fmt: skip
    assert corrected.returncode == 0, corrected.stderr
    new = json.loads(corrected.stdout)
    assert (new["object"], new["supersedes"], new["note"]) == ("lyon", lives, "she said so")
    retracted = plait(db_url, tmp_path, "memory", "retract", drives)
    assert retracted.returncode == 0, retracted.stderr
    active = json.loads(plait(db_url, tmp_path, "memory", "show", "chat:s1", "--json").stdout)
    assert [f["text"] for f in active] == ["Ada moved to Lyon."]
    history = plait(db_url, tmp_path, "memory", "show", "chat:s1", "--history")
    assert "superseded by" in history.stdout
    assert "retracted" in history.stdout
    again = plait(db_url, tmp_path, "memory", "correct", lives, "--object", "Nice")
    assert again.returncode == 2
    assert "only an active fact can be corrected" in again.stderr
    nothing = plait(db_url, tmp_path, "memory", "correct", new["id"])
    assert nothing.returncode == 2
    assert "--object" in nothing.stderr
