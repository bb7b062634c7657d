"""MCP tool results: checked against the tool's outputSchema by Plait's validator off the event loop,
and passed on with their content (embedded resources, resource links, images), against Plait's own
test server over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from plait.llm.types import ChatRequest
from plait.model.enums import RunStatus
from plait.store import Store, current_activations
from tests.engine.test_engine import graph_file
from tests.engine.test_tool_loop import Recorder, answers
from tests.tools.mcp_test_server import PIXEL
from tests.tools.test_mcp_nodes import call, execute

ROOT = Path(__file__).resolve().parents[2]
CHECK_IN_A_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from plait.engine.inline_tools import ToolContext
    from plait.engine.toolbox import toolbox
    from plait.model.nodes import LlmCallNode
    from plait.tools.mcp import McpFailure
    from tests.tools.test_mcp_sessions import own_server, sessions

    async def go():
        mcp = sessions(own_server(timeout_s=2))
        node = LlmCallNode.model_validate({"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "x",
            "mcp_servers": [{"server_id": "test", "allowed_tools": ["catastrophic", "patterned"]}]})
        tools = await toolbox(node, ToolContext({}, {}, None, None), mcp)
        out = {}
        try:
            out["valid"] = await tools["patterned"].call({"v": "aaaa"})
            try:
                await tools["catastrophic"].call({"n": int(sys.argv[1])})
                out["catastrophic"] = "accepted"
            except McpFailure as exc:
                out["catastrophic"] = str(exc)
            out["ticks"] = ticks
        finally:
            await mcp.aclose()
        print(json.dumps(out))

    ticks = 0
    async def main():
        global ticks
        async def tick():
            global ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
        ticker = asyncio.create_task(tick())
        await go()
        ticker.cancel()
    asyncio.run(main())
    """
)


def test_a_catastrophic_output_schema_does_not_hold_the_process() -> None:
    """The SDK checked structuredContent with Python's `re` on the event loop: `^(a+)+$` against 60
    a's and a '!' is 2^60 steps (it froze a server for 23 s at 25-30). Run in a child process, so
    that the check this replaces fails the test by its generous time limit instead of hanging it."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHECK_IN_A_CHILD, "60"], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("checking an MCP result against its outputSchema held the process for 120 s") from None
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["valid"] == {"v": "aaaa"}
    assert out["catastrophic"] == (
        "MCP server 'test' tool 'catastrophic' returned structuredContent that breaks its outputSchema: "
        f"v: '{'a' * 60}!' does not match '^(a+)+$'"
    )
    assert out["ticks"] > 0  # the event loop kept running while the servers answered and results were checked


def rich_graph(tmp_path: Path) -> str:
    node = {
        "id": "ask",
        "type": "LLM_CALL",
        "user_prompt_tpl": "What changed?",
        "mcp_servers": [{"server_id": "test", "allowed_tools": ["rich_content"]}],
    }
    return graph_file(tmp_path, [node], [{"id": "e_out", "source": "ask", "target": "END", "schema_id": "text"}])


def _messages_after_the_call(requests: list[ChatRequest]) -> list[dict[str, Any]]:
    (_, after) = requests
    return after.messages


def test_tool_results_keep_their_content_and_a_vision_model_sees_the_image(store: Store, tmp_path: Path) -> None:
    provider = answers(tmp_path, call("rich_content"), {"node": "ask", "output": {"text": "Thursday"}})
    outcome = execute(store, rich_graph(tmp_path), provider)  # a scripted model can read anything
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    messages = _messages_after_the_call(provider.requests)
    tool_text = json.loads(next(m["content"] for m in messages if m["role"] == "tool"))
    assert tool_text == (
        "Here is what I found.\n[resource doc://minutes]\nThe meeting moved to Thursday.\n"
        "[resource link doc://agenda (agenda; text/plain)]\n[image 1: image/png, 72 bytes]"
    )
    images = messages[-1]
    assert images["role"] == "user"
    assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}} in images["content"]
    ask = current_activations(store.runs.node_runs(outcome.run_id))["ask"]
    (round_one,) = ask.input_snapshot["tool_rounds"]
    assert round_one["images_shown"] == ["rich_content: [image 1: image/png, 72 bytes]"]
    stored = json.dumps([ask.input_snapshot, ask.attempts, ask.output])
    assert PIXEL not in stored  # the records say what was shown, never its bytes


class Blind(Recorder):
    """A model whose capabilities do not include `vision`."""

    def lacks(self, role: str, needs: frozenset[str]) -> str | None:
        return "the model lacks the capability vision" if "vision" in needs else None


def test_a_model_that_cannot_see_gets_the_image_described(store: Store, tmp_path: Path) -> None:
    provider = Blind(answers(tmp_path, call("rich_content"), {"node": "ask", "output": {"text": "Thursday"}}).inner)
    outcome = execute(store, rich_graph(tmp_path), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    messages = _messages_after_the_call(provider.requests)
    assert PIXEL not in json.dumps(messages)
    assert messages[-1]["role"] == "tool"
    assert "[image 1: image/png, 72 bytes]" in messages[-1]["content"]
    assert "The meeting moved to Thursday." in messages[-1]["content"]
