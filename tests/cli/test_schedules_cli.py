"""`plait schedules` as a person uses it (real `plait` processes): a schedule added with its input
from `-i` or `--input-file` is listed, shown, paused, resumed and deleted; what cannot be a
schedule (a bad cron, one that never fires or has six fields, a bad time zone or catch-up, an input
the graph refuses, an unknown id) exits 2 saying what is wrong in the command line's words, and
adds nothing."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.plait_cli import bare_env, run_plait

ROOT = Path(__file__).resolve().parents[2]
GRAPH = str(ROOT / "examples" / "data_cleaning.yaml")


def plait(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = bare_env(PLAIT_DB=f"sqlite:///{tmp_path / 'plait.db'}", PATH="/usr/bin:/bin", COLUMNS="200")
    return run_plait(*args, cwd=tmp_path, env=env, timeout=120)


def listed(tmp_path: Path) -> list[dict[str, Any]]:
    done = plait(tmp_path, "schedules", "list", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_schedule_is_added_listed_shown_paused_resumed_and_deleted(tmp_path: Path) -> None:
    added = plait(tmp_path, "schedules", "add", GRAPH, "--cron", "*/5 * * * *", "-i", "raw=name: Ada")
    assert added.returncode == 0, added.stderr
    schedule_id = added.stdout.strip()
    assert "first firing" in added.stderr
    assert "plait serve" in added.stderr
    (tmp_path / "input.yaml").write_text("raw: 'name: Grace'\n")
    from_file = plait(tmp_path, "schedules", "add", GRAPH, "--cron", "0 9 * * 1-5", "--input-file", "input.yaml",
                      "--timezone", "Europe/Paris", "--catch-up", "none", "--json")  # fmt: skip
    assert from_file.returncode == 0, from_file.stderr
    second = json.loads(from_file.stdout)
    assert (second["cron"], second["timezone"], second["catch_up"]) == ("0 9 * * 1-5", "Europe/Paris", "none")

    schedules = {s["id"]: s for s in listed(tmp_path)}
    assert set(schedules) == {schedule_id, second["id"]}
    assert schedules[schedule_id]["input"] == {"raw": "name: Ada"}
    assert schedules[second["id"]]["input"] == {"raw": "name: Grace"}
    table = plait(tmp_path, "schedules", "list")
    assert schedule_id[:8] in table.stdout
    assert "*/5 * * * * (UTC)" in table.stdout

    assert plait(tmp_path, "schedules", "pause", schedule_id[:8]).returncode == 0  # an id prefix names it
    assert {s["id"]: s["status"] for s in listed(tmp_path)}[schedule_id] == "paused"
    resumed = plait(tmp_path, "schedules", "resume", schedule_id, "--json")
    assert json.loads(resumed.stdout)["status"] == "active"
    shown = plait(tmp_path, "schedules", "show", schedule_id)
    assert shown.returncode == 0
    assert "*/5 * * * * (UTC), active" in shown.stdout

    assert plait(tmp_path, "schedules", "delete", schedule_id).returncode == 0
    assert [s["id"] for s in listed(tmp_path)] == [second["id"]]


REFUSED = [
    (["--cron", "*/61 * * *", "-i", "raw=x"], "is not a cron expression"),
    (["--cron", "0 0 31 2 *", "-i", "raw=x"], "'0 0 31 2 *' never fires: no date matches it"),
    (["--cron", "* * * * * *", "-i", "raw=x"], "a sixth field would be seconds, which schedules do not have"),
    (["--cron", "* * * * *", "-i", "raw=x", "--timezone", "Mars/Base"], "'Mars/Base' is not a time zone"),
    (["--cron", "* * * * *", "-i", "raw=x", "--catch-up", "some"], "--catch-up 'some' is not one of none, one, all"),
    (["--cron", "* * * * *", "-i", "other=1"], "'raw' is a required property"),
    (["--cron", "* * * * *", "-i", "raw"], "write -i key=value"),
]


def test_what_cannot_be_a_schedule_exits_2_saying_why_and_adds_nothing(tmp_path: Path) -> None:
    """The cases share one store: none may add anything, so each finds it as the first did, and
    the listing at the end shows whether any of them added a schedule."""
    for args, says in REFUSED:
        refused = plait(tmp_path, "schedules", "add", GRAPH, *args)
        assert refused.returncode == 2, (args, refused.stderr)
        assert says in refused.stderr, (args, refused.stderr)
        assert "Traceback" not in refused.stderr
    assert listed(tmp_path) == []


def test_an_unknown_schedule_is_named_and_the_command_to_list_them_given(tmp_path: Path) -> None:
    for verb in ("pause", "resume", "delete", "show"):
        done = plait(tmp_path, "schedules", verb, "deadbeef")
        assert done.returncode == 2
        assert "'deadbeef' is not a schedule; `plait schedules list` shows them" in done.stderr


def test_schedule_times_are_printed_in_the_schedules_zone_and_name_it(tmp_path: Path) -> None:
    added = plait(tmp_path, "schedules", "add", GRAPH, "--cron", "0 9 * * *", "-i", "raw=x",
                  "--timezone", "Asia/Tokyo")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert re.search(r"first firing \d{4}-\d\d-\d\d 09:00:00 Asia/Tokyo;", added.stderr), added.stderr
    shown = plait(tmp_path, "schedules", "show", added.stdout.strip())
    assert re.search(r"next firing: \d{4}-\d\d-\d\d 09:00:00 Asia/Tokyo", shown.stdout), shown.stdout
