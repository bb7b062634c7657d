"""`plait graphs promote` as a person uses it (real `plait` processes, SQLite and PostgreSQL): exit
2 for a request that cannot be made, 1 when the gate refuses (the verdict printed), 0 once
promoted, through the gate or forced with a note; `plait run GRAPH` then runs the promoted
version unless `--version` names another, and `plait graphs show` and `versions` say which
version runs by default and how it got there."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from plait.store import Store
from tests.plait_cli import bare_env, run_plait
from tests.runs.promote_scenario import eval_set, evaluated, three_versions


def plait(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=bare_env(PLAIT_DB=db_url, PATH="/usr/bin:/bin", COLUMNS="200"), timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else done.stdout


def test_the_gate_refuses_then_a_pass_promotes_and_plait_run_follows(store: Store, db_url: str, tmp_path: Path) -> None:
    graph_id = three_versions(store)
    fixes = eval_set(store, graph_id)
    assert ok(plait(db_url, tmp_path, "run", "labels")) == {"label": "three"}

    unevaluated = plait(db_url, tmp_path, "graphs", "promote", "labels", "--version", "2", "--gate", "fixes")
    assert unevaluated.returncode == 1
    assert "the gate refused version 2 of 'labels' on fixes@1: no evaluation of it has completed" in unevaluated.stderr
    assert "`plait eval run labels --set fixes@1 --version 2`" in unevaluated.stderr
    failed = evaluated(store, fixes, 2, "fail")
    refused = plait(db_url, tmp_path, "graphs", "promote", "labels", "--version", "2", "--gate", "fixes", "--json")
    assert refused.returncode == 1
    assert f"its newest evaluation ({failed.id}) says fail, not pass" in refused.stderr
    assert "  fail         regressions 2 > 0 allowed" in refused.stderr  # the verdict, as the evaluation printed it
    assert json.loads(refused.stdout)["error"]["code"] == "gate_refused"

    evaluated(store, fixes, 2, "pass")
    made = ok(plait(db_url, tmp_path, "graphs", "promote", "labels", "--version", "2", "--gate", "fixes", "--json"))
    assert (made["slug"], made["version"], made["gate"], made["verdict"], made["forced"]) == (
        "labels", 2, "fixes@1", "pass", False)  # fmt: skip
    assert made["promoted_by"] == "cli"
    assert ok(plait(db_url, tmp_path, "run", "labels")) == {"label": "two"}
    assert ok(plait(db_url, tmp_path, "run", "labels", "--version", "3")) == {"label": "three"}
    missing = plait(db_url, tmp_path, "run", "labels", "--version", "9")
    assert missing.returncode == 2
    assert "has no version 9: its versions are 1 to 3" in missing.stderr
    assert "label (TRANSFORM)" in ok(plait(db_url, tmp_path, "run", "labels", "--dry-run", "--version", "1"))
    dry_missing = plait(db_url, tmp_path, "run", "labels", "--dry-run", "--version", "9")
    assert dry_missing.returncode == 2
    assert "has no version 9" in dry_missing.stderr

    forced = ok(plait(db_url, tmp_path, "graphs", "promote", "labels", "--version", "1", "--force", "--note",
                      "two mislabels invoices"))  # fmt: skip
    assert forced == "promoted labels version 1 (was 2), forced: two mislabels invoices\n"
    shown = ok(plait(db_url, tmp_path, "graphs", "show", "labels"))
    assert "runs by default: version 1 (promoted; `plait graphs promote` moves it)" in shown
    lines = [line.strip() for line in shown.splitlines() if re.match(r"\s+\d{4}-\d\d-\d\d", line)]
    assert [re.sub(r"^\S+ \S+\s+", "", line) for line in lines] == [
        "version 1 (was 2) by cli, forced: two mislabels invoices",
        f"version 2 by cli, through gate fixes@1 (evaluation {made['evaluation_id'][:8]}: pass)",
    ]
    stored = ok(plait(db_url, tmp_path, "graphs", "show", "labels", "--json"))["stored"]
    assert (stored["promoted_version"], [p["version"] for p in stored["promotions"]]) == (1, [1, 2])
    versions = ok(plait(db_url, tmp_path, "graphs", "versions", "labels", "--json"))
    assert [v["promoted"] for v in versions] == [True, False, False]
    table = ok(plait(db_url, tmp_path, "graphs", "versions", "labels"))
    assert re.search(r"│ 1 \(promoted\)\s+│", table), table
    assert re.search(r"│ 3 \(latest\)\s+│", table), table
    assert ok(plait(db_url, tmp_path, "run", "labels")) == {"label": "one"}


def test_requests_that_cannot_be_made_exit_2_saying_how(store: Store, db_url: str, tmp_path: Path) -> None:
    graph_id = three_versions(store)
    eval_set(store, graph_id)
    before = ok(plait(db_url, tmp_path, "graphs", "show", "labels"))
    assert "runs by default: the latest version (3); no version was promoted" in before

    def refused(*args: str) -> str:
        done = plait(db_url, tmp_path, "graphs", "promote", *args)
        assert done.returncode == 2, done.stderr
        return done.stderr

    assert "pass --gate NAME" in refused("labels", "--version", "2")
    assert "a forced promotion needs a note saying why" in refused("labels", "--version", "2", "--force")
    assert "has no version 7: its versions are 1 to 3" in refused("labels", "--version", "7", "--gate", "fixes")
    assert "has no evaluation set 'typo'" in refused("labels", "--version", "2", "--gate", "typo")
    assert "no graph 'nowhere'" in refused("nowhere", "--version", "1", "--gate", "fixes")
    assert "--version" in refused("labels", "--gate", "fixes")  # a version must be named
    assert store.evaluations.promotions(graph_id) == []
