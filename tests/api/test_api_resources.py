"""GET /api/resources: the machine and the pool as resource-aware decisions see them, the
thresholds in force (the seed's defaults without a [resources] table), the newest decisions;
and a run's decisions in GET /api/runs/{id}, each node's with its node."""

from __future__ import annotations

from api_helpers import Api

from plait.store.decisions import Decision


def test_the_dashboard_sees_the_probe_the_thresholds_and_the_decisions(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    api.store.decisions.add(Decision(run_id, "queue", "memory", "memory 90 % used, over 85 %", {"memory_percent": 90}))
    answer = api.client.get("/api/resources").json()
    assert 0 <= answer["probe"]["memory_percent"] <= 100
    assert answer["probe"]["disk_free_gb"] > 0
    thresholds = answer["thresholds"]
    assert (thresholds["disk_free_gb_min"], thresholds["on_disk"]) == (1.0, "reject")
    assert (thresholds["memory_percent_max"], thresholds["cpu_percent_max"]) == (85.0, 80.0)
    assert answer["decisions"][0]["run_id"] == run_id
    node_run_id = next(n.id for n in api.store.runs.node_runs(run_id) if n.node_id == "polish")
    api.store.decisions.add(Decision(run_id, "queue", "cpu", "CPU 95 % busy, over 80 %", {"cpu_percent": 95},
                                     node_run_id=node_run_id))  # fmt: skip
    detail = api.client.get(f"/api/runs/{run_id}").json()
    assert [(d["action"], d["node_id"], d["node_run_id"]) for d in detail["decisions"]] == [
        ("queue", None, None), ("queue", "polish", node_run_id)]  # fmt: skip
