"""Generate: run a prompt script, send its prompt to a model, and stream the answer back.

A generation reports what happens as events (`emit(type, data)`, on the event loop's thread):
the script's console (`log`, `warning`, `error`), then `prompt` (what the script returned), each
piece of the answer (`delta`), and last exactly one `done` or `failed`.

`failed` says which step failed (`layer`), so an editor can show it where it belongs:

- `script`: the script itself failed (syntax, a throw, its time or memory, host calls);
- `preview`: the script ran but returned no prompt that can be sent (not a string, too large);
- `llm_request`: the model could not be asked, or gave no answer (no model for the role, the
  role cannot be served, a timeout, a refused connection);
- `http`: the model's server answered with an HTTP error (a 4xx, a 5xx, a 429 after retries);
- `stream`: the answer stream broke off; the text received so far is kept, marked `partial`;
- `parse`: the answer is not JSON, or breaks the template's `schema_target`;
- `cancelled`: the caller stopped it (the model call is stopped too).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from plait.engine.contracts import OutputContract, parse_json
from plait.engine.script_host import OUTPUT, split_target
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError
from plait.sandbox.scripts import GENERATE, ScriptEvent, ScriptHost, ScriptLimits, ScriptOutcome, run_script

Layer = Literal["script", "preview", "llm_request", "http", "stream", "parse", "cancelled"]
Emit = Callable[[str, dict[str, Any]], None]
NOT_A_PROMPT = frozenset({"not_string", "too_large"})
"""Script errors about the value `main()` returned rather than about the script's running."""
HTTP_KINDS = frozenset({"http", "rate_limit", "server", "http_429", "http_500"})
"""Provider error kinds that are an HTTP status from the model's server."""
STREAM_KINDS = frozenset({"stream", "stream_broken"})


class GenerateHost(ScriptHost, Protocol):
    """A script host that also knows the schemas an answer may be parsed with."""

    def contract(self, target: str) -> OutputContract | None: ...


@dataclass(frozen=True, slots=True)
class GenerateFailure:
    """Which step of a generation failed, and how."""

    layer: Layer
    kind: str
    message: str
    line: int | None = None
    column: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"layer": self.layer, "kind": self.kind, "message": self.message, "line": self.line,
                "column": self.column}  # fmt: skip


@dataclass
class Generation:
    """How a generation ended. `content` is the answer's text as far as it came (`partial` when
    the stream broke off); `value` the parsed answer when `schema_target` asked for JSON."""

    script: ScriptOutcome | None = None
    content: str = ""
    partial: bool = False
    value: Any = None
    failure: GenerateFailure | None = None
    response: ChatResponse | None = None
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The final event's data."""
        data: dict[str, Any] = {"content": self.content, "partial": self.partial, "notes": self.notes}
        if self.failure is not None:
            data["error"] = self.failure.as_json()
        else:
            data["value"] = self.value
        if self.response is not None:
            data["provider"], data["model"] = self.response.provider, self.response.model
            data["usage"] = {"input_tokens": self.response.usage.input_tokens,
                             "output_tokens": self.response.usage.output_tokens}  # fmt: skip
        return data


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """What to generate with: the script, its host, and the model (a role of the pool, or a
    model of it by name)."""

    code: str
    host: GenerateHost
    role: str = "chat"
    model: str | None = None
    schema_target: str | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    limits: ScriptLimits = GENERATE


async def generate(request: GenerateRequest, provider: Provider | None, emit: Emit) -> Generation:
    """Run the generation to its end, emitting as it goes; the final event is emitted here too.
    Cancelling the caller stops the script (at its next await) or the model call, and the
    generation ends `cancelled` with what had arrived."""
    result = Generation()
    try:
        await _run(request, provider, emit, result)
    except asyncio.CancelledError:
        result.failure = GenerateFailure("cancelled", "cancelled", "the generation was cancelled")
        result.partial = bool(result.content)
        emit("failed", result.as_json())
        raise
    emit("failed" if result.failure else "done", result.as_json())
    return result


async def _run(request: GenerateRequest, provider: Provider | None, emit: Emit, result: Generation) -> None:
    outcome = await _script(request, emit)
    result.script = outcome
    if outcome.error is not None:
        error = outcome.error
        layer: Layer = "preview" if error.kind in NOT_A_PROMPT else "script"
        result.failure = GenerateFailure(layer, error.kind, error.message, error.line, error.column)
        return
    prompt = outcome.prompt or ""
    emit("prompt", {"prompt": prompt})
    contract = _contract(request, result)
    if provider is None:
        message = "no model is configured: start with --llm local, --llm scripted:FILE, or a plait.toml"
        result.failure = GenerateFailure("llm_request", "config", message)
        return
    refusal = provider.refusal(request.role)
    if refusal is not None:
        result.failure = GenerateFailure("llm_request", "config", refusal)
        return

    def on_delta(text: str) -> None:
        result.content += text
        emit("delta", {"text": text})

    chat = ChatRequest(
        node_id="generate",
        messages=[{"role": "user", "content": prompt}],
        model_role=request.role,
        model=request.model,
        response_format=contract.response_format() if contract is not None else None,
        max_tokens=request.max_tokens,
        timeout_s=request.timeout_s,
        on_delta=on_delta,
    )
    try:
        response = await asyncio.wait_for(provider.complete(chat), request.timeout_s)
    except TimeoutError:
        message = f"the model gave no complete answer within {request.timeout_s:g} s"
        result.failure = GenerateFailure("llm_request", "timeout", message)
        result.partial = bool(result.content)
        return
    except ProviderError as exc:
        result.failure = GenerateFailure(_layer_of(exc), exc.kind, str(exc))
        result.partial = bool(result.content)
        return
    result.response = response
    if not result.content and response.content:  # a provider that could not stream answered whole
        on_delta(response.content)
    _parse(request, contract, result)


async def _script(request: GenerateRequest, emit: Emit) -> ScriptOutcome:
    """The script on a thread of its own; its console reaches `emit` on the loop's thread."""
    loop = asyncio.get_running_loop()
    cancel = threading.Event()

    def on_event(event: ScriptEvent) -> None:
        if event.type != "result" and event.level != "script":  # the outcome is reported once, at the end
            loop.call_soon_threadsafe(emit, event.type, event.as_json())

    future = loop.run_in_executor(
        None, lambda: run_script(request.code, request.host, request.limits, on_event=on_event, cancel=cancel)
    )
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        cancel.set()  # it stops at its next await, at the latest at its hard limit
        while not future.done():  # the script's thread is over before its place is given back
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({future})
        raise


def _contract(request: GenerateRequest, result: Generation) -> OutputContract | None:
    """The contract the answer is parsed with; None for a `schema_target` this host cannot
    resolve (noted): the answer must still be JSON, except for `output`, the contract of a node
    there is none of (a node's output may be free text), which keeps the answer as text."""
    target = request.schema_target
    if target is None:
        return None
    contract = request.host.contract(target)
    if contract is None and target == OUTPUT:
        result.notes.append("schema_target 'output' is a node's contract: give a run and a node to parse with it")
        return OutputContract(())
    if contract is None:
        result.notes.append(f"schema '{target}' is known only in a run's graph; the answer is parsed as JSON only")
        return contract
    written_for = split_target(target)[1]
    now = contract.schemas[0].version if contract.schemas else None
    if written_for and now and written_for != now:
        result.notes.append(
            f"this template was written for schema {target}; the graph has version {now}, which the answer is "
            "parsed with: check the fields the script asks for"
        )
    return contract


def _parse(request: GenerateRequest, contract: OutputContract | None, result: Generation) -> None:
    """The answer as JSON when the template names a schema: checked against it where known."""
    if request.schema_target is None:
        return
    if contract is not None:  # a node's free-text output (no out-edge schema) is the text itself
        value, problems = contract.parse(result.content)
    else:
        value, problems = parse_json(result.content)
    if problems:
        result.failure = GenerateFailure("parse", "schema" if value is not None else "not_json", "; ".join(problems))
        return
    result.value = value


def _layer_of(error: ProviderError) -> Layer:
    if error.kind in STREAM_KINDS:
        return "stream"
    return "http" if error.kind in HTTP_KINDS else "llm_request"
