"""LLM_CALL: render, ask the model for the out-edge schema, validate, retry with the errors fed back.

No invalid data ever flows downstream: an answer that is not JSON or
breaks a schema is shown to the model with what was wrong, up to
`max_retries` more times, and then the node fails with the last answer and its
errors recorded.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from plait.engine import overflow
from plait.engine.answer_schema import contract_of, recorded, shown_contract
from plait.engine.call_limits import cut_at_token_limit, over_budget
from plait.engine.checks import judged, postcheck, precheck
from plait.engine.contracts import OutputContract
from plait.engine.fewshot import Fewshot, FewshotLookup, render_examples
from plait.engine.inline_tools import ToolContext
from plait.engine.llm_cache import CacheSlot
from plait.engine.mcp_inputs import McpInputs, uses_mcp_inputs
from plait.engine.mcp_inputs import gather as gather_mcp_inputs
from plait.engine.model_calls import model_call, new_attempt, new_usage, stopped_call
from plait.engine.prompt_script import run_prompt_script
from plait.engine.render import NodeView, PromptBudget, build_view, for_the_record, prompt_budget
from plait.engine.repair import diagnosed
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import Phase, RunState
from plait.engine.streaming import AnswerRejected, NodeStream
from plait.engine.tool_loop import RoutedResultInvalid, offers_tools, tool_rounds
from plait.engine.toolbox import ToolSetError, toolbox
from plait.llm.tokens import ESTIMATE, TokenCounter
from plait.llm.types import ChatRequest, ChatResponse, ProviderError
from plait.model.nodes import LlmCallNode
from plait.model.output_meta import ROUTED
from plait.sandbox.scripts import ScriptOutcome
from plait.tools.mcp import McpFailure


async def run_llm_call(node: LlmCallNode, state: RunState, rt: Runtime) -> NodeResult:
    """Execute an LLM_CALL node: take its MCP inputs, render its request, pre-check it, run its
    tool rounds if it offers tools, then ask until an answer meets the out-edge schemas and the
    post-checks, `max_retries` more times at most; a check that fails for good, or a provider's
    fault once the retries are spent, goes to the repair hook when the node has one. Provider
    faults, timeouts, MCP failures and invalid answers end in a failed result; they are not raised."""
    result = await _run_once(node, state, rt)
    return await diagnosed(node, result, state, rt, lambda fixed: _run_once(fixed, state, rt))


async def _run_once(node: LlmCallNode, state: RunState, rt: Runtime) -> NodeResult:
    """One execution of the node, without the repair hook."""
    view = build_view(state, node)  # built once: the script, the MCP URIs, the prompts, the pre-check
    contract = contract_of(node, state.compiled.contracts[node.id], view.names["input"])
    if isinstance(contract, NodeResult):  # the run input's answer schema cannot be used
        return contract
    script: ScriptOutcome | None = None
    if node.prompt_script is not None:
        script_or_failure = await run_prompt_script(node, state, rt, view)
        if isinstance(script_or_failure, NodeResult):
            return script_or_failure
        script = script_or_failure
    mcp: McpInputs | None = None
    if uses_mcp_inputs(node):
        try:
            mcp = await gather_mcp_inputs(node, view, rt.mcp(state.run_id))
        except McpFailure as exc:
            return NodeResult.failed({"node_type": "LLM_CALL"}, [], kind="mcp", message=str(exc))
        with_mcp_fields(view, mcp)
    fewshot = rt.fewshot_lookup(state) if node.use_overrides_as_fewshot else None
    counter = rt.counter(node.model_role, node.model_id_override)
    prompt = script.prompt if script else None
    try:
        budget = await prepared(node, view, counter, mcp, prompt)
    except overflow.ContextOverflowFailed as exc:
        return NodeResult.failed({"node_type": "LLM_CALL"}, [], kind="context", message=exc.message, hint=exc.hint)
    request, snapshot = build_request(
        node, state, counter, fewshot, mcp, contract, prompt=prompt, view=view, budget=budget
    )
    if state.run_id in rt.degraded:
        request = replace(request, degraded=True)
    if script is not None:
        snapshot["prompt_script"] = script.record()
    blocked = _prechecked(node, state, view, snapshot)
    if blocked is not None:
        return blocked
    if offers_tools(node) and rt.provider is not None:
        return await run_with_tools(node, request, contract, snapshot, rt, state)
    return await _attempts(node, request, contract, snapshot, rt, state)


def _prechecked(node: LlmCallNode, state: RunState, view: NodeView, snapshot: dict[str, Any]) -> NodeResult | None:
    """The failed result of a pre-check that blocks the call (no tokens spent), or None."""
    if not node.checks.pre:
        return None
    reasons = precheck(node, state, view)
    snapshot["precheck"] = {"passed": not reasons, "reasons": reasons}
    if not reasons:
        return None
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return NodeResult.failed(
        snapshot, [], kind="precheck_failed", message=f"pre-check failed: {reasons[0]}{more}", details=reasons
    )


async def ask(node: LlmCallNode, contract: OutputContract, state: RunState, rt: Runtime) -> NodeResult:
    """One question to the model under `contract`, with the node's retries (no tools, no MCP
    inputs): what a CONDITION decided by a model asks."""
    counter = rt.counter(node.model_role, node.model_id_override)
    view = build_view(state, node)
    budget = await prepared(node, view, counter)
    request, snapshot = build_request(node, state, counter, contract=contract, view=view, budget=budget)
    blocked = _prechecked(node, state, view, snapshot)
    if blocked is not None:
        return blocked
    return await _attempts(node, request, contract, snapshot, rt, state)


def with_mcp_fields(view: NodeView, mcp: McpInputs) -> None:
    """Add to what the node's prompts see the fields its MCP resources gave."""
    if mcp.fields:
        view.context_slice.update(mcp.fields)
        view.names.update({k: v for k, v in mcp.fields.items() if k not in view.names})


async def prepared(
    node: LlmCallNode,
    view: NodeView,
    counter: TokenCounter,
    mcp: McpInputs | None = None,
    prompt: str | None = None,
) -> PromptBudget:
    """The node's prompt budget, with its prompts rendered already (off the event loop when they
    are large), in the order `build_request` renders them: pass both to it."""
    budget = prompt_budget(node, counter)
    if mcp is None or mcp.messages is None:
        user = node.user_prompt_tpl or "" if prompt is None else None
        await overflow.prepare(node, view, [("system_prompt", node.system_prompt), ("user_prompt_tpl", user)], budget)
    return budget


def build_request(
    node: LlmCallNode,
    state: RunState,
    counter: TokenCounter = ESTIMATE,
    fewshot: FewshotLookup | None = None,
    mcp: McpInputs | None = None,
    contract: OutputContract | None = None,
    prompt: str | None = None,
    view: NodeView | None = None,
    budget: PromptBudget | None = None,
) -> tuple[ChatRequest, dict[str, Any]]:
    """The chat request a node sends in this state, and its input snapshot (also `--dry-run`'s view).
    `counter`: the tokenizer of the model serving the node, for `token_budget_input`; `fewshot`:
    where corrected examples come from (`use_overrides_as_fewshot`), appended to the system prompt;
    `mcp`: the resources and prompt the node's MCP servers gave; `contract`: the answer's schema
    when it is not the out-edges' (a CONDITION decided by a model, the run input's `answer_schema`
    first: found here when not given); `prompt`: the user prompt a
    prompt script returned, instead of `user_prompt_tpl` rendered; `view`: the node's names when
    the caller has built them already (with `mcp`'s fields added); `budget`: the prompt budget
    `prepared` rendered the prompts with (then they are not rendered again)."""
    if view is None:
        view = build_view(state, node)
        if mcp is not None:
            with_mcp_fields(view, mcp)
    budget = budget if budget is not None else prompt_budget(node, counter)
    chosen = Fewshot()
    if mcp is not None and mcp.messages is not None:  # mcp_prompt replaces the node's own prompts
        messages = mcp.messages
    else:
        system = view.render(node.system_prompt, budget) if node.system_prompt else None
        user = prompt if prompt is not None else view.render(node.user_prompt_tpl or "", budget)
        chosen = fewshot(node, user) if fewshot is not None else chosen
        if chosen.examples:
            examples = render_examples(chosen.examples)
            system = f"{system}\n\n{examples}" if system else examples
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user})
    if mcp is not None:  # resources appended; the snapshot shows the prompts as sent
        messages = mcp.inject(messages)
        system = next((m["content"] for m in messages if m["role"] == "system"), None)
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    contract = contract or shown_contract(node, state.compiled.contracts[node.id], view.names["input"])
    request = ChatRequest(
        node_id=node.id,
        messages=messages,
        model_role=node.model_role,
        model=node.model_id_override,
        response_format=contract.response_format(),
        temperature=node.temperature_override,
        max_tokens=node.max_tokens_override or node.token_budget_output,
        timeout_s=node.timeout_s,
        priority=node.priority,
    )
    snapshot: dict[str, Any] = {
        "node_type": "LLM_CALL",
        "rendered_system_prompt": for_the_record(system),
        "rendered_user_prompt": for_the_record(user),
        "tools": [],
        "response_format": request.response_format,
        "context_slice": view.context_slice,
        "model_config": {
            "role": node.model_role,
            "model": node.model_id_override,
            "temperature": node.temperature_override,
            "max_tokens": request.max_tokens,
        },
        "state": {
            "current_node_id": node.id,
            "current": view.names["current"],
            "predecessors": state.active_predecessors(node.id),
        },
        "truncated_chars": budget.truncated,
        **overflow.record_of(budget),
    }
    snapshot.update(recorded(contract))
    if mcp is not None:
        snapshot["mcp"] = mcp.record
        if mcp.messages is not None:
            snapshot["messages"] = messages
    if node.use_overrides_as_fewshot:
        snapshot.update(chosen.record())  # with the corrections left out for their schema's major
    return request, snapshot


async def _attempts(
    node: LlmCallNode,
    request: ChatRequest,
    contract: OutputContract,
    snapshot: dict[str, Any],
    rt: Runtime,
    state: RunState,
    attempts: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
) -> NodeResult:
    """Ask for the answer, validate it, retry with the problems fed back (`attempts` and
    `usage` carry on from a tool loop)."""
    if rt.provider is None:
        return NodeResult.failed(
            snapshot, [], kind="provider", message="no LLM provider configured; pass --llm scripted:FILE"
        )
    slot = CacheSlot.of(node, request, rt, state)
    cached = slot.answer(rt, contract, snapshot) if slot is not None else None
    if cached is not None:
        return cached
    stream = _stream(node, state, rt, request, contract)
    if stream is None:
        return await _asked(node, request, contract, snapshot, rt, state, slot, None, attempts, usage)
    try:
        return await _asked(
            node, replace(request, on_delta=stream.piece), contract, snapshot, rt, state, slot, stream, attempts, usage
        )
    finally:
        stream.flush()


STOPPED = "the model's answer broke the out-edge schema while it was written (the call was stopped)"


def _stream(
    node: LlmCallNode, state: RunState, rt: Runtime, request: ChatRequest, contract: OutputContract
) -> NodeStream | None:
    """The node's answer as it arrives, when the graph or the caller asks to follow it, or the
    node checks its fields as they complete."""
    chosen = rt.streams.get(state.root_run_id)  # read as the node starts: a late choice applies to what follows
    checked = node.check_while_streaming and contract.structured
    if not checked and not node.stream and (chosen is None or not chosen.covers(node.id)):
        return None
    check = functools.partial(_field_problems, contract) if checked else None
    return NodeStream(rt.emit, state.run_id, node.id, parse=request.response_format is not None, check=check)


def _field_problems(contract: OutputContract, fields: dict[str, Any]) -> list[str]:
    """What the complete fields of an answer break (the fields not written yet are not missing)."""
    return [p for p in contract.violations(fields) if not (p.startswith("(root): ") and "is a required property" in p)]


def _fed_back(request: ChatRequest, answer: str | None, problems: list[str]) -> ChatRequest:
    """The request asked again: the answer, then what is wrong with it."""
    return replace(
        request,
        messages=[
            *request.messages,
            {"role": "assistant", "content": answer or ""},
            {"role": "user", "content": _feedback(problems)},
        ],
    )


async def _asked(
    node: LlmCallNode,
    request: ChatRequest,
    contract: OutputContract,
    snapshot: dict[str, Any],
    rt: Runtime,
    state: RunState,
    slot: CacheSlot | None,
    stream: NodeStream | None,
    attempts: list[dict[str, Any]] | None,
    usage: dict[str, Any] | None,
) -> NodeResult:
    """The attempts of `_attempts`; a streamed node's clients are told when an answer they saw
    part of is asked for again (then even a stream that broke off is retried)."""
    attempts = attempts if attempts is not None else []
    usage = usage if usage is not None else new_usage()
    last: dict[str, Any] = {"kind": "provider", "message": "no attempt made"}
    budgeted = state.compiled.graph.max_cost_usd is not None
    for tried in range(node.max_retries + 1):
        estimate = rt.estimate_cost(request) if budgeted else 0.0  # it only counts against a budget
        over = over_budget(state, estimate, usage["cost_usd"])
        if over is not None:
            return NodeResult.failed(snapshot, attempts, kind="budget", message=over, **usage)
        if stream is not None and tried:
            stream.again(last["message"])
        record = new_attempt(attempts)
        try:
            response = await model_call(rt, state, request, estimate, usage, record)
        except AnswerRejected as exc:  # a field broke the contract while it was written: ask again now
            stopped_call(rt, request, exc.text, exc.problems, usage, record)
            last = {"kind": "schema", "message": STOPPED, "details": exc.problems, "last_output": exc.text}
            request = _fed_back(request, exc.text, exc.problems)
            continue
        except (ProviderError, TimeoutError) as exc:
            if stream is not None:
                stream.flush()  # what arrived was seen: the reset before the next attempt clears it
            last = {
                "kind": record["kind"],
                "message": str(exc) or f"the model call timed out after {request.timeout_s} s",
            }
            shown = isinstance(exc, ProviderError) and exc.kind == "stream" and stream is not None
            if isinstance(exc, ProviderError) and not exc.retryable and not shown:
                break
            continue
        if stream is not None:
            stream.flush()  # the whole answer is shown, then judged
        if response.finish == "length":  # asked again, a deterministic decoder cuts it the same way
            record["kind"] = "truncated"
            return cut_at_token_limit(node, request, response, snapshot, attempts, usage)
        value, problems = contract.parse(response.content)
        schema_ok = not problems
        value, problems = postcheck(node, contract, value, problems)
        kind, message = ("schema", "the model's answer is not valid for the out-edge schema")
        if schema_ok and problems:
            kind, message = ("postcheck", "the model's answer has empty required fields")
        if not problems and node.spj_prompt:
            rejected = await _judge(node, state, value, rt, usage, attempts)
            if rejected is not None:
                problems = [f"a reviewer rejected the answer: {rejected}"]
                kind, message = ("judge", f"the judge (spj_prompt) rejected the answer: {rejected}")
        if not problems:
            result = NodeResult.completed(contract.annotate(value), snapshot, attempts, **usage)
            result.cache_entry = slot.entry(response) if slot is not None else None
            return result
        record["violations"] = problems
        last = {"kind": kind, "message": message, "details": problems, "last_output": response.content}
        request = _fed_back(request, response.content, problems)
    return NodeResult.failed(
        snapshot,
        attempts,
        kind=last["kind"],
        message=last["message"],
        details=last.get("details"),
        last_output=last.get("last_output"),
        **usage,
    )


async def _judge(
    node: LlmCallNode,
    state: RunState,
    answer: Any,
    rt: Runtime,
    usage: dict[str, Any],
    attempts: list[dict[str, Any]],
) -> str | None:
    """Ask the judge about a valid answer (one attempt of the node run, marked `judge`); its
    reason when it fails the answer. A judge that cannot be reached fails the answer, saying so."""

    async def send(request: ChatRequest) -> ChatResponse:
        record = new_attempt(attempts, judge=True)
        return await model_call(rt, state, request, 0.0, usage, record)

    try:
        return await judged(node, state, answer, send)
    except (ProviderError, TimeoutError) as exc:
        return f"the judge could not be asked: {exc or 'timed out'}"


def _feedback(problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems[:20])
    return f"Your answer was not valid:\n{listed}\nReply again with only the corrected JSON that matches the schema."


class _OverBudget(Exception):
    pass


async def run_with_tools(
    node: LlmCallNode,
    request: ChatRequest,
    contract: OutputContract,
    snapshot: dict[str, Any],
    rt: Runtime,
    state: RunState,
) -> NodeResult:
    """The tool loop (plait/engine/tool_loop.py), then the final answer without tools, validated as
    any answer under `contract`; every round is an attempt of the node run, and the rounds are in
    its snapshot."""
    attempts: list[dict[str, Any]] = []
    usage = new_usage()
    evaluate = functools.partial(rt.sandbox().aevaluate, owner=state.root_run_id or None)  # the run's fair share
    context = ToolContext(state.input, state.outputs(), evaluate, rt.sub_run)
    try:
        tools = await toolbox(node, context, rt.mcp(state.run_id) if node.mcp_servers else None)
    except (McpFailure, ToolSetError) as exc:
        return NodeResult.failed(
            snapshot, attempts, kind="mcp" if isinstance(exc, McpFailure) else "tools", message=str(exc)
        )
    snapshot["tools"] = [t.spec for t in tools.values()]

    async def one_round(ask: ChatRequest) -> ChatResponse:
        estimate = rt.estimate_cost(ask)
        over = over_budget(state, estimate, usage["cost_usd"])
        if over is not None:
            raise _OverBudget(over)
        record = new_attempt(attempts, tool_round=True)
        response = await model_call(rt, state, ask, estimate, usage, record)
        record["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]
        return response

    try:
        vision = rt.lacks(request.model_role, frozenset({"vision"})) is None
        rounds = await tool_rounds(node, request, tools, one_round, _routed_schemas(node, state), vision=vision)
    except RoutedResultInvalid as exc:
        return NodeResult.failed(snapshot, attempts, kind="schema", message=str(exc), details=exc.details, **usage)
    except _OverBudget as exc:
        return NodeResult.failed(snapshot, attempts, kind="budget", message=str(exc), **usage)
    except McpFailure as exc:
        return NodeResult.failed(snapshot, attempts, kind="mcp", message=str(exc), **usage)
    except (ProviderError, TimeoutError) as exc:
        kind = exc.kind if isinstance(exc, ProviderError) else "timeout"
        return NodeResult.failed(snapshot, attempts, kind=kind, message=str(exc) or kind, **usage)
    snapshot["tool_rounds"] = rounds.rounds
    if rounds.answer is not None:
        value, problems = contract.parse(rounds.answer.content)
        if not problems:
            return NodeResult.completed(
                _with_routed(contract.annotate(value), rounds.routed), snapshot, attempts, **usage
            )
    final = replace(request, messages=rounds.messages)  # no tools: the answer, in the out-edge schema
    result = await _attempts(node, final, contract, snapshot, rt, state, attempts, usage)
    if result.phase == Phase.COMPLETED:
        result.output = _with_routed(result.output, rounds.routed)
    return result


def _routed_schemas(node: LlmCallNode, state: RunState) -> dict[str, Any]:
    """Out-edge id -> JSON Schema, for the edges this node's tools send results down."""
    graph = state.compiled.graph
    schemas: dict[str, Any] = {}
    for edge in state.compiled.out_edges[node.id]:
        entry = graph.schema_entry(edge.schema_id) if edge.schema_id else None
        if edge.id in state.compiled.routed_edges and entry is not None:
            schemas[edge.id] = entry.schema_
    return schemas


def _with_routed(output: Any, routed: dict[str, Any]) -> Any:
    if not routed:
        return output
    if not isinstance(output, dict):
        output = {"value": output}
    return {**output, ROUTED: routed}
