"""Run and node run ids by unique prefix (at least four characters), as git takes commit ids:
real `plait` processes on a real SQLite file (the store's lookup: tests/store/test_prefix.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from plait.store import Store
from tests.cli.test_run_cli import EXAMPLES, example_args, plait

pytestmark = pytest.mark.usefixtures("folder_store")  # the tests open the folder's store


VIDEO_SCRIPT = f"scripted:{EXAMPLES / 'scripted' / 'video_chapters.yaml'}"


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / '.plait' / 'plait.db'}"


def _two_runs_sharing_a_prefix(tmp_path: Path) -> tuple[str, str]:
    """Two runs whose ids both start with `abcd1` (ids are UUIDs: the test gives them these)."""
    for _ in range(2):
        assert plait("run", *example_args("feedback_triage"), "--quiet", cwd=tmp_path).returncode == 0
    wanted = ("abcd1111-0000-4000-8000-000000000001", "abcd1222-0000-4000-8000-000000000002")
    with Store(_db(tmp_path)) as store:
        runs = [r.id for r in store.runs.list()]
    db = sqlite3.connect(tmp_path / ".plait" / "plait.db")  # foreign keys off: every reference is renamed
    with db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        referring = [
            t for t in tables if "prompt_graph_run_id" in {c[1] for c in db.execute(f"PRAGMA table_info({t})")}
        ]
        for old, new in zip(runs, wanted, strict=True):
            db.execute("UPDATE prompt_graph_run SET id = ? WHERE id = ?", (new, old))
            for table in referring:
                db.execute(f"UPDATE {table} SET prompt_graph_run_id = ? WHERE prompt_graph_run_id = ?", (new, old))
    db.close()
    return wanted


def test_a_unique_prefix_names_a_run_and_an_ambiguous_one_lists_the_candidates(tmp_path: Path) -> None:
    first, second = _two_runs_sharing_a_prefix(tmp_path)
    shown = plait("runs", "show", "abcd12", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == second

    ambiguous = plait("runs", "show", "abcd1", cwd=tmp_path)
    assert ambiguous.returncode == 2
    assert "run id prefix 'abcd1' is ambiguous" in ambiguous.stderr
    assert first in ambiguous.stderr
    assert second in ambiguous.stderr
    as_json = json.loads(plait("runs", "show", "abcd", "--json", cwd=tmp_path).stdout)["error"]
    assert (as_json["code"], sorted(as_json["candidates"])) == ("ambiguous", [first, second])

    too_short = plait("runs", "show", "abc", cwd=tmp_path)
    assert too_short.returncode == 2
    assert "a prefix needs at least 4 characters" in too_short.stderr
    diffed = plait("runs", "diff", "abcd11", "abcd12", "--json", cwd=tmp_path)
    assert diffed.returncode == 0, diffed.stderr
    assert (json.loads(diffed.stdout)["a"]["id"], json.loads(diffed.stdout)["b"]["id"]) == (first, second)


def test_corrections_resume_and_replay_take_prefixes(tmp_path: Path) -> None:
    paused = plait("run", *example_args("video_chapters"), "--json", "--quiet", cwd=tmp_path)
    run_id = json.loads(paused.stdout)["run_id"]
    assert plait("resume", run_id[:8], "--llm", VIDEO_SCRIPT, "--quiet", cwd=tmp_path).returncode == 3
    value = '{"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}'
    overridden = plait("override", run_id[:6], "chapter_split", "--value", value, cwd=tmp_path)
    assert overridden.returncode == 3, overridden.stderr  # the waiting review is opened again on it
    assert plait("rollback", run_id[:6], "chapter_split", "--to-version", "1", cwd=tmp_path).returncode == 3
    approved = plait("review", run_id[:6], "review", "--approve", "--llm", VIDEO_SCRIPT, "--quiet", cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr

    with Store(_db(tmp_path)) as store:
        (split,) = [n for n in store.runs.node_runs(run_id) if n.node_id == "chapter_split"]
    assert split.id in plait("runs", "show", run_id[:6], cwd=tmp_path).stdout  # listed for replay
    replayed = plait("replay", split.id[:8], "--llm", VIDEO_SCRIPT, "--json", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["stored"]["chapters"][0]["title"] == "Introduction"
