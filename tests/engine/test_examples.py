"""Every example graph runs end to end on its scripted responses (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.runner import Engine, RunOutcome
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(store: Store, name: str, engine_options: dict[str, Any] | None = None, **overrides: Any) -> RunOutcome:
    run_input = yaml.safe_load((EXAMPLES / "inputs" / f"{name}.yaml").read_text())
    run_input.update(overrides)
    provider = ScriptedProvider.from_file(EXAMPLES / "scripted" / f"{name}.yaml")
    run_id = start_run(store, str(EXAMPLES / f"{name}.yaml"), run_input)
    engine = Engine(store, provider, **(engine_options or {}))

    async def go() -> RunOutcome:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def test_every_example_has_inputs_and_scripted_answers() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.yaml")}
    assert names == {p.stem for p in (EXAMPLES / "inputs").glob("*.yaml")}
    assert names == {p.stem for p in (EXAMPLES / "scripted").glob("*.yaml")}


def test_video_chapters_pauses_for_review_after_clip_points(store: Store) -> None:
    outcome = run_example(store, "video_chapters")
    assert outcome.status == RunStatus.PAUSED
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes["transcribe"].output["text"].startswith("Welcome to the channel.")
    assert nodes["chapter_split"].output["_schema_id"] == "chapter_list"
    assert nodes["chapter_split"].output["_schema_version"] == "1.2.0"
    assert nodes["clip_points"].status == "completed"
    assert nodes["review"].status == "pending"
    assert "3 chapters" in nodes["review"].input_snapshot["review_prompt"]
    assert "subtitles" not in nodes


def test_learning_assistant(store: Store) -> None:
    outcome = run_example(store, "learning_assistant")
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output["total"] == 10


def test_data_cleaning_packages_the_record(store: Store) -> None:
    outcome = run_example(store, "data_cleaning")
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {
        "record": {"name": "John Smith", "email": "john.smith@acme.com", "company": "Acme Corp", "country": "GB"},
        "quality": "good",
    }


def test_meeting_action_items_uses_the_transform_knowledge(store: Store) -> None:
    outcome = run_example(store, "meeting_action_items")
    assert outcome.status == RunStatus.COMPLETED
    assert [item["owner"] for item in outcome.output["final_answer"]] == ["Bo", "Ana", "Platform team"]
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes["retrieve_knowledge"].output["knowledge"] == [
        "Platform team is a team mentioned in the notes",
        "Billing is a project mentioned in the notes",
    ]
    prompt = nodes["final_answer"].input_snapshot["rendered_user_prompt"]
    assert "Billing is a project" in prompt
    assert set(nodes["final_answer"].input_snapshot["context_slice"]) == {
        "input",
        "normalize_entities",
        "retrieve_knowledge",
    }


def test_blog_writer_params_carry_upstream_values(store: Store) -> None:
    # the scripted analyzer/writer answers only match when the reference params were rendered in
    outcome = run_example(store, "blog_writer")
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output["title"] == "How GraphBuilder turns configuration into a graph"
    writer = next(n for n in store.runs.node_runs(outcome.run_id) if n.node_id == "node_writer")
    assert writer.input_snapshot["rendered_system_prompt"] == "You are a technical blogger. Write in English."


@pytest.mark.parametrize(
    ("feedback", "label", "action", "ran", "skipped"),
    [
        (
            "The app crashes on upload",
            "bug",
            "bug filed: Crash when uploading photos over 10 MB",
            "file_bug",
            {"thank", "answer"},
        ),
        ("How do I export my data?", "question", "answered", "answer", {"thank", "file_bug"}),
        ("I love the new editor", "praise", "thanked", "thank", {"file_bug", "answer"}),
    ],
)
def test_feedback_triage_takes_one_branch_and_merges(
    store: Store, feedback: str, label: str, action: str, ran: str, skipped: set[str]
) -> None:
    outcome = run_example(store, "feedback_triage", feedback=feedback)
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"label": label, "action": action}
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes[ran].status == "completed"
    assert {n for n, r in nodes.items() if r.status == "skipped"} == skipped
    assert nodes["join"].output == {ran: {k: v for k, v in nodes[ran].output.items() if not k.startswith("_")}}


def test_long_doc_summary_runs_the_inlined_skill(store: Store) -> None:
    outcome = run_example(store, "long_doc_summary")
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == "Typed, recorded, correctable prompt graphs"
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    inner = nodes["__summarize__key_points"].input_snapshot["rendered_user_prompt"]
    assert "Plait binds JSON Schema contracts to the edges of a prompt graph. Every node run" in inner
    headline = nodes["headline"].input_snapshot["rendered_user_prompt"]
    assert headline.startswith("Headline for: Plait types the data")


def test_trip_planner_routes_a_tool_result_down_its_edge(store: Store) -> None:
    outcome = run_example(store, "trip_planner")
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.output == {
        "planner": {"summary": "Old town in the morning, the river in the afternoon.", "budget_eur": 110.4},
        "itinerary": {"lines": ["1. Alfama", "2. Tram 28", "3. Belém Tower", "4. LX Factory"]},
    }  # the planner's edge to END makes its answer a graph output too
    planner = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}["planner"]
    (round_one,) = planner.input_snapshot["tool_rounds"]
    assert [c["result"] for c in round_one["calls"]][1] == {"eur": 110.4}


def test_meeting_times_sends_an_inline_and_an_mcp_tool_result_down_their_edges(db_url: str, tmp_path: Path) -> None:
    """As a user runs it: the CLI, the MCP servers of examples/mcp.toml (the reference time server
    from PyPI over stdio), the scripted model."""
    import json
    import subprocess
    import sys

    root = EXAMPLES.parent
    command = [
        *(sys.executable, "-m", "plait", "run", "examples/meeting_times.yaml"),
        *("--input-file", "examples/inputs/meeting_times.yaml", "--config", "examples/mcp.toml"),
        *("--llm", "scripted:examples/scripted/meeting_times.yaml", "--db", db_url, "--json", "--quiet"),
    ]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["output"] == {
        "scheduler": {"text": "Call at 09:00 in Tokyo, 05:30 in Kolkata."},
        "time_line": {"lines": ["09:00 Asia/Tokyo", "05:30 Asia/Kolkata"]},  # converted by the MCP server
        "invitation": {"text": "Invited: Aiko, Ravi, Mei"},  # written by the inline tool
    }
    store = Store(db_url)
    try:
        scheduler = {n.node_id: n for n in store.runs.node_runs(outcome["run_id"])}["scheduler"]
    finally:
        store.close()
    (round_one,) = scheduler.input_snapshot["tool_rounds"]
    assert [(c["tool"], c["source"]) for c in round_one["calls"]] == [
        ("convert_time", "mcp:time"),
        ("note_attendees", "inline"),
    ]
    assert scheduler.output["_routed"]["e_times"]["target"]["timezone"] == "Asia/Kolkata"


def test_text_report_runs_a_tool_javascript_and_python(store: Store) -> None:
    """The example's own plait.toml allows `wc` and Python CODE (without it the run is refused)."""
    from plait.config import load_config

    config = load_config(str(EXAMPLES / "workflow.toml"))
    outcome = run_example(store, "text_report", {"tools": config.tools, "code": config.code})
    assert outcome.status == RunStatus.COMPLETED, outcome
    report = ["30 words; most frequent:", "  the: 9", "  words: 3", "  counts: 2"]
    assert outcome.output["report"].splitlines() == report
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes["count"].input_snapshot["argv"] == ["wc", "-w"]
    assert nodes["words"].output["total"] == 30


def test_data_cleaning_batch_maps_the_record_graph_and_keeps_a_failed_record(store: Store) -> None:
    outcome = run_example(store, "data_cleaning_batch")
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert {k: outcome.output[k] for k in ("good", "fixable", "junk", "failed")} == {
        "good": 1,
        "fixable": 1,
        "junk": 1,
        "failed": 1,
    }
    records = outcome.output["records"]
    assert records[0]["record"]["email"] == "john.smith@acme.com"
    assert records[3]["index"] == 3
    assert "(repair: giveup: the record holds no customer data)" in records[3]["error"]["message"]
    children = [r for r in store.runs.list(children=True) if r.parent_run_id == outcome.run_id]
    assert sorted(str(c.status) for c in children) == ["completed", "completed", "completed", "failed"]


def test_video_clips_maps_over_the_chapters_in_order(store: Store) -> None:
    outcome = run_example(store, "video_clips")
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert [(c["chapter"], c["at_sec"]) for c in outcome.output["clips"]] == [
        ("Introduction", 4),
        ("Cutting the pieces", 31),
        ("Assembly and painting", 75),
    ]


def test_refine_draft_loops_until_the_reviewer_approves(store: Store) -> None:
    outcome = run_example(store, "refine_draft")
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output["approved"] is True
    assert outcome.output["round"] == 1
    assert outcome.output["draft"].startswith("Build a cosy birdhouse")
    children = [r for r in store.runs.list(children=True) if r.parent_run_id == outcome.run_id]
    assert len(children) == 2


def test_prompt_templates_runs_a_system_and_a_user_template(store: Store) -> None:
    from plait.evolve.system import sync_system_templates

    sync_system_templates(store)
    code = (EXAMPLES / "templates" / "short_title.js").read_text()
    store.templates.create("short_title", name="Short title", script_code=code, category="titles")
    outcome = run_example(store, "prompt_templates")
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"title": "Feeding birds through winter"}
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    summarise = nodes["summarise"].input_snapshot
    assert summarise["prompt_script"]["template"]["id"] == "plait.summary"
    assert summarise["rendered_user_prompt"].startswith("Summarise the text below in two sentences.")
    title = nodes["title"].input_snapshot["prompt_script"]
    assert title["template"]["id"] == "short_title"
    assert "Winter birds need food" in title["prompt"]
    assert [e["args"] for e in title["events"] if e["type"] == "log"] == [["the summary has", 13, "words"]]
