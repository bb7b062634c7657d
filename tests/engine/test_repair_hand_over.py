"""The repair hook on failures no change of configuration helps (a TOOL program, CODE, a provider's
fault): what the repair model is asked, under a schema that offers only `escalate` and `giveup`,
and what happens when it answers anything else or cannot be asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plait.model.enums import NodeStatus, RunStatus
from plait.store import Store
from tests.engine.test_checks import DIAGNOSE, recorded, run, titled
from tests.engine.test_engine import execute, graph_file, nodes_of, script
from tests.engine.test_program_nodes import SH, TOOLS

FAILING_TOOL = {
    "id": "fetch",
    "type": "TOOL",
    "command": [SH, "-c", "echo 'disk full' >&2; exit 3"],
    "repair": True,
}


def tool_graph(tmp_path: Path) -> str:
    return graph_file(tmp_path, [FAILING_TOOL], [{"source": "fetch", "target": "END"}])


def test_a_failed_program_is_diagnosed_under_a_schema_without_fix(store: Store, tmp_path: Path) -> None:
    fix = {"action": "fix", "config_overrides": {"temperature_override": 0}, "explanation": "x", "confidence": 1}
    provider = script(tmp_path, [{"node": "fetch", "output": fix}])  # a model that ignores its schema
    sent = recorded(provider)
    outcome = execute(store, tool_graph(tmp_path), provider, {}, tools=TOOLS)
    assert outcome.status == RunStatus.FAILED

    (asked,) = sent
    schema = asked.response_format["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["escalate", "giveup"]
    assert "config_overrides" not in schema["properties"]
    facts = json.loads(asked.messages[-1]["content"])
    assert (facts["type"], facts["exit_code"], facts["error"]["kind"]) == ("TOOL", 3, "tool")
    assert "disk full" in facts["stderr"]

    fetch = nodes_of(store, outcome.run_id)["fetch"]
    assert fetch.status == NodeStatus.FAILED
    assert fetch.input_snapshot["repair"]["action"] == "giveup"
    assert "the repair model's answer is not a diagnosis (escalate | giveup)" in fetch.error["message"]
    assert fetch.error["kind"] == "tool"


def test_a_failed_program_without_a_model_to_ask_fails_saying_so(store: Store, tmp_path: Path) -> None:
    outcome = execute(store, tool_graph(tmp_path), None, {}, tools=TOOLS)
    fetch = nodes_of(store, outcome.run_id)["fetch"]
    assert fetch.status == NodeStatus.FAILED
    said = "(repair: giveup: the repair model could not be asked: no model provider is configured"
    assert said in fetch.error["message"]


def test_a_check_failure_is_still_offered_a_fix(store: Store, tmp_path: Path) -> None:
    giveup = {"action": "giveup", "explanation": "no", "confidence": 1}
    diagnose: dict[str, Any] = {"node": "write", "match": DIAGNOSE, "output": giveup}
    provider = script(tmp_path, [diagnose, {"node": "write", "text": "not JSON"}])
    sent = recorded(provider)
    run(store, titled(tmp_path, {"repair": True}), provider, {"topic": "birds"})
    schema: dict[str, Any] = sent[-1].response_format["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["fix", "escalate", "giveup"]
    assert "config_overrides" in schema["properties"]
