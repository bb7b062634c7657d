"""`plait config show` and `plait settings` as a person uses them (real `plait` processes, SQLite
and PostgreSQL): the settings in force and where each value came from (plait.toml, settings
rev N, default); a change, refused ones exiting 2 with the key and the fix and changing nothing;
the history; a revert."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.plait_cli import bare_env, run_plait

TOML = """
[[providers]]
id = "a"
kind = "scripted"
file = "a.yaml"

[[providers]]
id = "b"
kind = "scripted"
file = "b.yaml"
rpm = 100

[roles]
chat = "a/scripted"

[sandbox]
max_timeout_s = 10
"""


def plait(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = bare_env(PLAIT_DB=db_url, PLAIT_CONFIG=str(cwd / "plait.toml"), PATH="/usr/bin:/bin", COLUMNS="200")
    return run_plait(*args, cwd=cwd, env=env, timeout=120)


def test_config_show_prints_each_value_with_where_it_came_from(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "plait.toml").write_text(TOML)
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(json.dumps({"responses": [{"text": name}]}))

    changed = plait(db_url, tmp_path, "settings", "set", "roles.chat", '["b/scripted"]', "--note", "b now")
    assert changed.returncode == 0, changed.stderr
    assert "revision 1" in changed.stdout

    shown = plait(db_url, tmp_path, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "settings revision 1" in shown.stdout
    rows = [[cell.strip() for cell in line.strip("│|").split("│")] for line in shown.stdout.splitlines()]
    table = {row[0]: row[1:] for row in rows if len(row) == 3}
    assert table["roles.chat"] == ["b/scripted", "settings rev 1"]
    assert table["providers.b.rpm"] == ["100", "plait.toml"]
    assert table["resources.probe_s"] == ["5.0", "default"]

    as_json = json.loads(plait(db_url, tmp_path, "config", "show", "--json").stdout)
    assert as_json["revision"] == 1
    assert as_json["sources"]["sandbox.max_timeout_s"] == "plait.toml"
    assert {"key": "roles.chat", "value": ["b/scripted"], "from": "settings rev 1"} in as_json["values"]

    over = plait(db_url, tmp_path, "settings", "set", "sandbox.max_timeout_s", "30")
    assert over.returncode == 2
    assert "above its cap, 10" in over.stderr
    stale = plait(db_url, tmp_path, "settings", "set", "roles.chat", '["a/scripted"]', "--base-revision", "0")
    assert stale.returncode == 2
    assert "changed since revision 0" in stale.stderr
    assert "plait config show" in stale.stderr

    history = json.loads(plait(db_url, tmp_path, "settings", "history", "--json").stdout)
    assert [(h["revision"], h["note"], h["by"]) for h in history] == [(1, "b now", "cli")]
    table = plait(db_url, tmp_path, "settings", "history").stdout
    assert "roles.chat: plait.toml's -> ['b/scripted']" in table  # not the overlay's None
    reverted = plait(db_url, tmp_path, "settings", "revert", "1")
    assert reverted.returncode == 0, reverted.stderr
    after = json.loads(plait(db_url, tmp_path, "config", "show", "--json").stdout)
    assert (after["revision"], after["roles"]["chat"], after["sources"]["roles.chat"]) == (
        2,
        ["a/scripted"],
        "plait.toml",
    )
