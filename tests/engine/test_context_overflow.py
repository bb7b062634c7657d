"""`context_overflow: retrieve`: an upstream value over a node's prompt budget reaches the model as
its passages most relevant to the node's instructions, in their order, with markers where
passages were left out, within the budget as the engine counts it, recorded in the input
snapshot; `truncate` (the default) keeps cutting it. Without the embedder such a graph is refused
before a run exists, and embedding never holds the event loop."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from plait import load_graph
from plait.compile import compile_file
from plait.config import load_config
from plait.engine.render import to_text
from plait.engine.runner import Engine, EngineError
from plait.engine.runtime import Runtime
from plait.llm.pool import ProviderPool
from plait.llm.tokens import tiktoken_counter
from plait.runs.dry_run import dry_run
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import execute, graph_file, nodes_of, script

ANSWER = "The access code of the vault is 7319-BLUEBIRD."
QUESTION = "What is the access code of the vault?"
TOPICS = ["harvest", "railway", "library", "orchestra", "glacier", "bakery", "harbour", "observatory", "vineyard"]
END = {"source": "ask", "target": "END", "schema_id": "text"}
MARKER = re.compile(r"…\[(\d+) passages? omitted\]…")


def transcript(parts: int = 50, answer_in: int = 37) -> str:
    """`parts` sections of a meeting's minutes (each one passage), the answer in part `answer_in`."""

    def part(k: int) -> str:
        topic, other = TOPICS[k % len(TOPICS)], TOPICS[(k * 3 + 1) % len(TOPICS)]
        body = " ".join(
            f"In meeting {k} the team reviewed the {topic} report and the {other} plan, item {i}." for i in range(6)
        )
        return f"## Part {k}\n\n{body}" + (f" {ANSWER}" if k == answer_in else "")

    return "\n\n".join(part(k) for k in range(1, parts + 1))


def graph(tmp_path: Path, prompt: str, **budget: Any) -> str:
    """`minutes` (a TRANSFORM: the upstream output) then `ask`, whose prompt inserts it."""
    nodes = [
        {"id": "minutes", "type": "TRANSFORM", "transform_expr": "({text: input.transcript})"},
        {"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": prompt, **budget},
    ]
    return graph_file(tmp_path, nodes, [{"source": "minutes", "target": "ask"}, END])


def answers(tmp_path: Path) -> Any:
    """Answers the code only when the prompt shows it."""
    return script(
        tmp_path, [{"match": "7319-BLUEBIRD", "output": {"text": "7319-BLUEBIRD"}}, {"output": {"text": "?"}}]
    )


PROMPT = f"{QUESTION} Answer from the minutes.\n\nMinutes:\n{{{{ minutes.text }}}}"


def asked(
    store: Store, tmp_path: Path, prompt: str = PROMPT, run_input: dict[str, Any] | None = None, **node: Any
) -> tuple[Any, dict[str, Any]]:
    outcome = execute(
        store, graph(tmp_path, prompt, **node), answers(tmp_path), run_input or {"transcript": transcript()}
    )
    return outcome, nodes_of(store, outcome.run_id)["ask"].input_snapshot


def inserted(prompt: str, rendered: str) -> str:
    """What the value inserted at the end of `prompt` became in `rendered`."""
    literal = prompt.split("{{")[0]
    assert rendered.startswith(literal)
    return rendered[len(literal) :]


def test_the_answer_deep_in_a_long_value_reaches_the_model_with_retrieve_and_not_with_truncate(
    store: Store, tmp_path: Path
) -> None:
    cut, cut_snapshot = asked(store, tmp_path, context_max_chars=2000)
    assert cut.output == {"text": "?"}
    assert "7319-BLUEBIRD" not in cut_snapshot["rendered_user_prompt"]
    assert cut_snapshot["rendered_user_prompt"].endswith(f"…[truncated {len(transcript()) - 2000} chars]")
    assert "context_overflow" not in cut_snapshot

    found, snapshot = asked(store, tmp_path, context_max_chars=2000, context_overflow="retrieve")
    assert found.output == {"text": "7319-BLUEBIRD"}
    shown = inserted(PROMPT, snapshot["rendered_user_prompt"])
    assert ANSWER in shown
    assert len(shown) <= 2000  # the markers and blank lines between passages are counted too
    parts = [int(n) for n in re.findall(r"^Part (\d+)$", shown, re.M)]
    assert 37 in parts
    assert parts == sorted(parts)  # in their original order
    omitted = [int(n) for n in MARKER.findall(shown)]
    assert omitted
    assert sum(omitted) + len(parts) == 50
    record = snapshot["context_overflow"]
    (value,) = record["values"]
    assert record["mode"] == "retrieve"
    assert record["ranked_by"] == "minilm-l6-int8"
    assert value["prompt"] == "user_prompt_tpl"
    assert value["insertion"] == 0
    assert value["passages"] == 50
    assert value["kept"] == [p - 1 for p in parts]  # positions, from 0
    assert value["omitted"] == 50 - len(parts)
    assert value["chars"] == len(transcript())
    assert value["sha256"] == hashlib.sha256(transcript().encode()).hexdigest()
    assert value["starts"] == transcript()[:80]
    assert snapshot["truncated_chars"] > len(transcript()) - 2000


def test_the_same_inputs_choose_the_same_passages(store: Store, tmp_path: Path) -> None:
    _, first = asked(store, tmp_path, context_max_chars=2000, context_overflow="retrieve")
    _, again = asked(store, tmp_path, context_max_chars=2000, context_overflow="retrieve")
    assert again["context_overflow"] == first["context_overflow"]
    assert again["rendered_user_prompt"] == first["rendered_user_prompt"]


TOKENIZED = """
[[providers]]
id = "p"
kind = "scripted"
file = "script.yaml"
tokenizer = "o200k_base"

[roles]
chat = "p/m"
"""


def test_a_small_value_after_the_long_one_goes_in_whole_and_asks_the_question_within_the_token_budget(
    store: Store, tmp_path: Path
) -> None:
    """The question is a value too, inserted after the minutes: it fits, so it goes in whole and is
    what the minutes' passages are ranked by; the minutes get what the budget has left, counted
    in the serving model's tokens."""
    prompt = "Minutes:\n{{ minutes.text }}\n\nQuestion: {{ input.question }}"
    answers(tmp_path)
    (tmp_path / "plait.toml").write_text(TOKENIZED)
    pool = ProviderPool(load_config(str(tmp_path / "plait.toml")))
    run_input = {"transcript": transcript(), "question": QUESTION}
    outcome = execute(
        store, graph(tmp_path, prompt, token_budget_input=400, context_overflow="retrieve"), pool, run_input
    )
    assert outcome.output == {"text": "7319-BLUEBIRD"}
    snapshot = nodes_of(store, outcome.run_id)["ask"].input_snapshot
    rendered = snapshot["rendered_user_prompt"]
    assert rendered.endswith(f"\n\nQuestion: {QUESTION}")
    shown = rendered.removeprefix("Minutes:\n").removesuffix(f"\n\nQuestion: {QUESTION}")
    assert ANSWER in shown
    assert MARKER.search(shown)
    counter = tiktoken_counter("o200k_base")
    assert counter.count(shown) + counter.count(QUESTION) <= 400  # as `PromptBudget.take` counts: each value
    assert counter.count(shown) > 200  # and the budget is used, not left empty
    assert snapshot["context_overflow"]["values"][0]["insertion"] == 0


def test_a_template_that_prints_a_constant_retrieves_too(store: Store, tmp_path: Path) -> None:
    """Jinja prints a constant when it compiles the template (the first render only): the renders
    that follow still agree on which value is which."""
    prompt = '{{ "Minutes, as taken (constant printed once):" }}\n{{ minutes.text }}\n\n' + QUESTION
    outcome, snapshot = asked(store, tmp_path, prompt, context_max_chars=2000, context_overflow="retrieve")
    assert outcome.output == {"text": "7319-BLUEBIRD"}
    assert snapshot["rendered_user_prompt"].startswith("Minutes, as taken (constant printed once):\n")
    assert snapshot["context_overflow"]["values"][0]["chars"] == len(transcript())


def test_a_value_none_of_whose_passages_fit_is_one_marker(store: Store, tmp_path: Path) -> None:
    _, snapshot = asked(store, tmp_path, context_max_chars=100, context_overflow="retrieve")
    assert inserted(PROMPT, snapshot["rendered_user_prompt"]) == "…[50 passages omitted]…"
    assert snapshot["context_overflow"]["values"][0]["kept"] == []
    assert snapshot["truncated_chars"] == len(transcript())


def test_a_value_within_the_budget_is_inserted_whole_and_nothing_is_recorded(store: Store, tmp_path: Path) -> None:
    short = transcript(parts=2, answer_in=2)
    _, snapshot = asked(
        store, tmp_path, run_input={"transcript": short}, context_max_chars=5000, context_overflow="retrieve"
    )
    assert snapshot["rendered_user_prompt"] == PROMPT.replace("{{ minutes.text }}", short)
    assert snapshot["truncated_chars"] == 0
    assert "context_overflow" not in snapshot


def test_the_dry_run_shows_the_assembled_prompt(tmp_path: Path) -> None:
    node = {"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": f"{QUESTION}\n{{{{ input.transcript }}}}"}
    path = graph_file(tmp_path, [{**node, "context_max_chars": 2000, "context_overflow": "retrieve"}], [END])
    dry = asyncio.run(dry_run(load_graph(path), {"transcript": transcript()}, Runtime(answers(tmp_path))))
    (ask,) = dry.nodes
    assert ask.messages is not None
    assert ANSWER in ask.messages[-1]["content"]
    assert MARKER.search(ask.messages[-1]["content"])


def test_without_the_embedder_a_graph_that_retrieves_is_refused_before_a_run_exists(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranking by words instead would show the model other passages than a machine with the
    embedder does: refused, saying what is missing and the two ways out."""
    import plait.knowledge.embed as embed

    monkeypatch.setattr(embed, "missing", lambda name=embed.DEFAULT_EMBEDDER: ["the Python package onnxruntime"])
    engine = Engine(store, answers(tmp_path))
    path = graph(tmp_path, PROMPT, context_max_chars=2000, context_overflow="retrieve")
    with pytest.raises(EngineError) as refused:
        start_run(store, path, {"transcript": transcript()}, check=engine.check_executable)
    assert "node 'ask' has context_overflow: retrieve" in refused.value.message
    assert "onnxruntime" in refused.value.message
    assert refused.value.hint is not None
    assert "pip install 'plait[knowledge]'" in refused.value.hint
    assert "context_overflow: truncate" in refused.value.hint
    assert store.runs.list() == []
    truncating = graph(tmp_path, PROMPT, context_max_chars=2000)  # the default needs nothing
    start_run(store, truncating, {"transcript": transcript()}, check=engine.check_executable)


def test_a_value_that_cannot_be_assembled_when_the_node_runs_fails_the_node_saying_why(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extra removed after the run was checked (a worker installed differently): the node
    fails with the reason and the way out, and no model is asked."""
    import plait.knowledge.assemble as assemble
    from plait.knowledge.embed import EmbedderMissing

    def gone(name: str) -> Any:
        raise EmbedderMissing("the embedder 'minilm-l6-int8' cannot run here: missing onnxruntime", "pip install it")

    monkeypatch.setattr(assemble, "embedder", gone)
    outcome, _ = asked(store, tmp_path, context_max_chars=2000, context_overflow="retrieve")
    node = nodes_of(store, outcome.run_id)["ask"]
    assert outcome.status == "failed"
    assert node.error["kind"] == "context"
    assert "node 'ask' has context_overflow: retrieve" in node.error["message"]
    assert "onnxruntime" in node.error["message"]
    assert node.error["hint"] == "pip install it"
    assert node.attempts == []


def test_retrieve_without_a_budget_is_a_warning(tmp_path: Path) -> None:
    result = compile_file(graph(tmp_path, PROMPT, context_overflow="retrieve"))
    assert result.valid
    (warning,) = [w for w in result.warnings if w.code == "context_overflow_without_budget"]
    assert warning.node_id == "ask"
    assert not compile_file(graph(tmp_path, PROMPT, token_budget_input=100, context_overflow="retrieve")).warnings


class _Waiting:
    """An embedder that waits, in `embed`, for a task on the event loop to let it go: were it
    called on the loop, that task could never run and the wait would fail the test."""

    name = "waiting"
    dimensions = 2

    def __init__(self) -> None:
        self.started, self.released = threading.Event(), threading.Event()
        self.threads: list[int] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.get_ident())
        self.started.set()
        assert self.released.wait(120), "the event loop was held while passages were embedded"
        return np.array([[1.0, 0.0] if "BLUEBIRD" in t or t.startswith(QUESTION) else [0.0, 1.0] for t in texts])


def test_a_large_value_is_assembled_off_the_event_loop(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import plait.knowledge.assemble as assemble

    waiting = _Waiting()
    monkeypatch.setattr(assemble, "embedder", lambda name: waiting)
    big = transcript(parts=2000, answer_in=1234)  # ~1 MB: from the run input (a TRANSFORM's output is at most 1 MB)
    prompt = f"{QUESTION}\n\n{{{{ input.transcript }}}}"
    node = {"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": prompt, "context_max_chars": 4000}
    path = graph_file(tmp_path, [{**node, "context_overflow": "retrieve"}], [END])
    run_id = start_run(store, path, {"transcript": big})
    engine = Engine(store, answers(tmp_path))

    async def go() -> tuple[Any, int]:
        async def release() -> None:
            while not waiting.started.is_set():
                await asyncio.sleep(0.01)
            waiting.released.set()

        helper = asyncio.create_task(release())
        try:
            return await engine.run(run_id), threading.get_ident()
        finally:
            helper.cancel()
            await engine.aclose()

    outcome, loop_thread = asyncio.run(go())
    assert outcome.output == {"text": "7319-BLUEBIRD"}
    assert waiting.threads
    assert loop_thread not in waiting.threads
    value = nodes_of(store, outcome.run_id)["ask"].input_snapshot["context_overflow"]["values"][0]
    assert value["passages"] == 2000
    assert 1233 in value["kept"]
    assert value["chars"] == len(to_text(big))
