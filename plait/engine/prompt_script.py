"""An LLM_CALL's prompt script: run it (inline, or the stored template it names) for the prompt.

docs/prompt-scripts.md has the contract; `plait.sandbox.scripts` runs the script, and
`plait.engine.script_host` is what its host APIs read in a run.
"""

from __future__ import annotations

from typing import Any

from plait.engine.ports import TemplatesUnavailable
from plait.engine.render import NodeView, build_view
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.script_host import RunScriptHost
from plait.engine.state import RunState
from plait.model.nodes import LlmCallNode
from plait.sandbox.scripts import GENERATE, ScriptOutcome


async def run_prompt_script(
    node: LlmCallNode, state: RunState, rt: Runtime, view: NodeView | None = None
) -> ScriptOutcome | NodeResult:
    """Run the node's prompt script for its user prompt (docs/prompt-scripts.md); the failed
    result when it gives none. `view`: the node's names, when the caller has built them."""
    source = node.prompt_script
    assert source is not None
    snapshot: dict[str, Any] = {"node_type": "LLM_CALL"}
    if isinstance(source, str):
        code, where = _stored(rt, source)
        if code is None:
            message = (
                f"prompt_script names the template '{source}', but {where}; `plait templates list` shows the "
                "templates, or write the script inline: prompt_script: {language: js, code: ...}"
            )
            return NodeResult.failed(snapshot, [], kind="prompt_script", message=message)
    else:
        code = source.code
    host = RunScriptHost(node, state, view if view is not None else build_view(state, node), rt.routes)
    script = await rt.scripts().run(code, host, GENERATE)
    if isinstance(source, str):
        script.template = {"id": source, "code": code}
    if script.error is None:
        return script
    snapshot["prompt_script"] = script.record()
    error = script.error
    return NodeResult.failed(
        snapshot, [], kind="prompt_script", message=f"the prompt script failed ({error.kind}): {error}"
    )


def _stored(rt: Runtime, template_id: str) -> tuple[str | None, str]:
    """The stored template's code, and (for None) why there is none."""
    try:
        return rt.templates(template_id), "it is not stored"
    except TemplatesUnavailable as exc:
        return None, str(exc)
