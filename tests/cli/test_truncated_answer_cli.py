"""An answer the model stopped at the token limit fails its node as `truncated`, says the limit
and what to raise, and is not asked again (a deterministic decoder stops at the same token)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.plait_cli import bare_env, run_plait

GRAPH = {
    "plait": 1,
    "id": "summary",
    "schemas": [{"id": "summary", "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}],
    "nodes": [
        {"id": "sum", "type": "LLM_CALL", "user_prompt_tpl": "Summarise {{ input.text }}", "max_retries": 2,
         "max_tokens_override": 12},
    ],
    "edges": [{"source": "sum", "target": "END", "schema_id": "summary"}],
}  # fmt: skip


def test_a_cut_answer_fails_once_as_truncated_with_the_limit_and_what_to_raise(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text(yaml.safe_dump(GRAPH))
    log = tmp_path / "calls.jsonl"
    answers = {"responses": [{"node": "sum", "text": '{"text": "It was a long', "finish": "length"}], "log": str(log)}
    (tmp_path / "answers.yaml").write_text(yaml.safe_dump(answers))
    done = run_plait(
        "run", "g.yaml", "-i", "text=a long story", "--llm", "scripted:answers.yaml",
        cwd=tmp_path, env=bare_env(PATH="/usr/bin:/bin"), timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "node 'sum' failed (truncated): the answer was cut at the token limit (max_tokens 12)" in done.stderr
    assert "hint: raise max_tokens_override of node 'sum' above 12" in done.stderr
    assert len(log.read_text().splitlines()) == 1  # asked once, though max_retries is 2
