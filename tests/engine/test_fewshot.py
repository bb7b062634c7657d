"""Few-shot examples from corrections (seed 000 §5.4): earlier runs' overrides reach the prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plait.engine.fewshot import Example, select
from plait.llm.embedding import NO_EMBEDDINGS, local_embedder, model_dir
from plait.model.enums import DownstreamPolicy
from plait.model.nodes import FewshotSelection
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import graph_file, llm, script
from tests.runs.test_corrections import drive_with, newest


def labeller(tmp_path: Path, **fewshot: Any) -> str:
    return graph_file(
        tmp_path,
        [
            llm(
                "label",
                "Feedback: {{ input.text }}",
                system_prompt="Label the feedback.",
                use_overrides_as_fewshot=True,
                **fewshot,
            )
        ],
        [{"source": "label", "target": "END", "schema_id": "text"}],
    )


def run_once(store: Store, graph: str, tmp_path: Path, text: str) -> str:
    run_id = start_run(store, graph, {"text": text})
    drive_with(store, run_id, script(tmp_path, [{"output": {"text": "other"}}]))
    return run_id


def test_corrections_of_earlier_runs_become_examples_in_the_prompt(store: Store, tmp_path: Path) -> None:
    graph = labeller(tmp_path, fewshot_max_count=2)
    first = run_once(store, graph, tmp_path, "the app crashes on upload")
    assert newest(store, first)["label"].input_snapshot["fewshot"] == []  # nothing corrected yet
    Corrections(store).override(first, "label", {"text": "bug"}, policy=DownstreamPolicy.KEEP)
    second = run_once(store, graph, tmp_path, "dark mode please")
    Corrections(store).override(second, "label", {"text": "feature"}, policy=DownstreamPolicy.KEEP)
    third = run_once(store, graph, tmp_path, "it crashes when I save")
    fourth = run_once(store, graph, tmp_path, "love it")

    snapshot = newest(store, fourth)["label"].input_snapshot
    examples = snapshot["fewshot"]
    assert [e["output"] for e in examples] == [{"text": "feature"}, {"text": "bug"}]  # latest first, at most 2
    assert examples[0]["input"] == "Feedback: dark mode please"
    system = snapshot["rendered_system_prompt"]
    assert system.startswith("Label the feedback.")
    assert '{"text": "feature"}' in system
    assert "Feedback: the app crashes on upload" in system
    assert "crashes when I save" not in system  # run three was never corrected
    assert len(newest(store, third)["label"].input_snapshot["fewshot"]) == 2


def test_a_run_never_learns_from_its_own_correction(store: Store, tmp_path: Path) -> None:
    graph = labeller(tmp_path)
    run_id = run_once(store, graph, tmp_path, "crash")
    Corrections(store).override(run_id, "label", {"text": "bug"}, policy=DownstreamPolicy.KEEP)
    Corrections(store).rerun(run_id, "label")
    drive_with(store, run_id, script(tmp_path, [{"output": {"text": "other"}}]))
    assert newest(store, run_id)["label"].input_snapshot["fewshot"] == []


POOL = [
    Example("Feedback: the checkout page is slow", {"text": "performance"}, "1"),
    Example("Feedback: please add a dark theme", {"text": "feature"}, "2"),
    Example("Feedback: the app crashes when uploading photos", {"text": "bug"}, "3"),
]


def test_similar_selection_by_words() -> None:
    chosen = select(POOL, FewshotSelection.SIMILAR, 1, "Feedback: crashes while uploading a photo", None)
    assert [e.node_run_id for e in chosen] == ["3"]


@pytest.mark.skipif(
    model_dir() is None,
    reason=NO_EMBEDDINGS,
)
def test_similar_selection_by_embeddings_finds_paraphrases() -> None:
    model = local_embedder()
    assert model is not None
    # no word in common with example 2 beyond "feedback", but the same meaning
    chosen = select(POOL, FewshotSelection.SIMILAR, 1, "Feedback: I'd love a night mode", model.embed)
    assert [e.node_run_id for e in chosen] == ["2"]


def test_latest_and_random_respect_the_count() -> None:
    assert select(POOL, FewshotSelection.LATEST, 2, "", None) == POOL[:2]
    picked = select(POOL, FewshotSelection.RANDOM, 2, "", None)
    assert len(picked) == 2
    assert len({e.node_run_id for e in picked}) == 2
    assert select(POOL, FewshotSelection.RANDOM, 10, "", None) != []
