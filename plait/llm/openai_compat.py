"""`openai` providers: any OpenAI-compatible Chat Completions endpoint through the official SDK
(OpenAI, DeepSeek, Qwen/DashScope, Zhipu, Kimi, Ollama, vLLM, llama.cpp's server...).

Servers disagree on structured output, so the provider's `json_mode` says how to ask (unset: the
model's capabilities decide, `ProviderConfig.json_mode_for`; the answer is validated by the engine
whatever the server promises):

- `json_schema`: `response_format = {type: json_schema, json_schema: {name, strict, schema}}`;
- `json_object_schema`: `{type: json_object, schema}` (llama.cpp's server, which answers HTTP
  500 to the json_schema form but constrains its grammar with this one);
- `json_object`: `{type: json_object}`, the schema stated in an extra system message.

A server that refuses the form it was sent (a 4xx other than authentication, a missing model or
a rate limit, or a 5xx whose message names `response_format`) is asked once more in the next
weaker form, json_schema → json_object_schema → json_object. The step is recorded on the attempt
(a `json_mode_downgraded` decision) and remembered for the process (per server URL and model), so
later requests start at the form that worked; a refusal of the weakest form fails the attempt
without retries: the identical request would be refused again.

The SDK's own retries are off: retrying, backing off and failing over are the pool's decisions,
recorded on the node run. Errors become `ProviderError`s whose `retryable` says whether trying
again (or elsewhere) may help: 429, 5xx, timeouts and connection errors may; other 4xx do not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NoReturn

from plait.config import JsonMode, ProviderConfig
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, ToolCall, Usage, response_schema

SCHEMA_INSTRUCTION = "Answer with one JSON object that validates against this JSON Schema:"
NO_KEY = "no-key"
"""Sent when the provider has no `api_key_env` (local servers ignore it; the SDK requires one)."""
WEAKER = {JsonMode.JSON_SCHEMA: JsonMode.JSON_OBJECT_SCHEMA, JsonMode.JSON_OBJECT_SCHEMA: JsonMode.JSON_OBJECT}
NOT_ABOUT_THE_FORM = {401, 403, 404, 408, 409, 413, 429}
"""4xx statuses that say nothing about the request's structured-output form."""
_learned: dict[tuple[str, str], JsonMode] = {}
"""(base URL, model) → the form that server accepted after refusing a stronger one, for this process."""


class OpenAIProvider(Provider):
    """One `openai` provider of `plait.toml`: an OpenAI-compatible Chat Completions endpoint.

    What a caller can rely on:
    - `complete` sends one request and never retries on its own: retrying and failing over are
      the pool's decisions. The one exception: a server that refuses the structured-output form
      is asked once more in the next weaker form, down to the weakest; each step is recorded as
      a `json_mode_downgraded` decision and remembered for the process, per server URL and model.
    - Every failure is a `ProviderError`. 429, 5xx, timeouts, connection errors, malformed and
      broken-off answers are retryable; other 4xx, and a refusal of the weakest form, are not.
    - A streamed answer that ends before the model finished is an error (`stream_broken`), never
      a short answer. A request with `on_delta` is always streamed, each piece of text passed on
      as it arrives; once one has been, a break is kind `stream` and not retryable.
    - The answer names the model called and this provider's id, and is priced from the prices
      configured for that model (0.0 without).
    `aclose` closes the HTTP client; call nothing on the provider after it.
    """

    def __init__(self, config: ProviderConfig, api_key: str | None = None):
        from openai import AsyncOpenAI

        self.name = config.id
        self.config = config
        self._client = AsyncOpenAI(
            base_url=config.base_url, api_key=api_key or NO_KEY, timeout=config.timeout_s, max_retries=0
        )

    def cache_identity(self, request: ChatRequest) -> str | None:
        model = self._model_for(request)
        return f"{self.name}/{model}" if model else None

    def _model_for(self, request: ChatRequest) -> str | None:
        """The model a request names, else the provider's first listed one."""
        return request.model or (self.config.models[0].name if self.config.models else None)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        import openai

        model = self._model_for(request)
        if model is None:
            raise ProviderError(f"provider '{self.name}' has no model to call: list one in plait.toml", kind="config",
                                retryable=False)  # fmt: skip
        mode = self._json_mode(model) if response_schema(request.response_format) is not None else None
        notes: list[dict[str, Any]] = []
        while True:
            try:
                response = await self._send(self._arguments(request, model, mode), model, request.on_delta)
            except openai.APIStatusError as exc:
                mode = self._weaker_after(exc, mode, model, notes)
                continue
            return replace(response, decisions=[*response.decisions, *notes]) if notes else response

    async def _send(
        self, arguments: dict[str, Any], model: str, on_delta: Callable[[str], None] | None = None
    ) -> ChatResponse:
        """One call; every error but a status error becomes a ProviderError here."""
        import openai

        try:
            if self.config.stream or on_delta is not None:
                return await self._streamed(arguments, model, on_delta)
            response = await self._client.chat.completions.create(**arguments)
        except openai.APITimeoutError:
            raise ProviderError(f"{self.name}: the request timed out", kind="timeout") from None
        except openai.APIConnectionError as exc:
            message = f"{self.name}: cannot connect to {self.config.base_url}: {exc}"
            raise ProviderError(message, kind="connection") from None
        return self._response(response, model)

    def _json_mode(self, model: str) -> JsonMode:
        return _learned.get((self.config.base_url or "", model)) or self.config.json_mode_for(model)

    def _weaker_after(self, exc: Any, mode: JsonMode | None, model: str, notes: list[dict[str, Any]]) -> JsonMode:
        """The form to ask in next after the server answered `exc` to `mode`; raises the error
        when it was not a refusal of the form, or the weakest form was refused."""
        refused = mode is not None and _refuses_form(exc)
        weaker = WEAKER.get(mode) if refused and mode is not None else None
        if weaker is None:
            self._fail(exc, refused, notes)
        error = _status_error(self.name, exc)
        notes.append({"event": "json_mode_downgraded", "from": str(mode), "to": str(weaker), "error": str(error)})
        _learned[(self.config.base_url or "", model)] = weaker
        return weaker

    def _fail(self, exc: Any, refused: bool, notes: list[dict[str, Any]]) -> NoReturn:
        error = _status_error(self.name, exc)
        error.decisions = notes
        if refused:  # the weakest form was refused: the same request would be refused again
            error.retryable = False
        raise error from None

    async def _streamed(
        self, arguments: dict[str, Any], model: str, on_delta: Callable[[str], None] | None
    ) -> ChatResponse:
        """Read the answer as a stream; one that ends before the model said it finished is a
        retryable error (`stream_broken`), never a short answer, unless some text was already passed
        to `on_delta`: then it is a `stream` error, not retried (that text has been shown)."""
        import openai

        stream = await self._client.chat.completions.create(
            **arguments, stream=True, stream_options={"include_usage": True}
        )
        answer = _Streamed(on_delta)
        try:
            async with stream:  # closed at once when the caller gives up: the server stops generating
                async for chunk in stream:
                    answer.add(chunk)
        except (openai.APIError, OSError) as exc:
            raise _broken(f"{self.name}: the answer stream broke off: {exc}", answer.parts, on_delta) from None
        if answer.finished is None:
            raise _broken(f"{self.name}: the answer stream ended before the model finished", answer.parts, on_delta)
        usage = answer.usage
        tokens = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage is not None else Usage()
        tool_calls = answer.tool_calls()
        content = "".join(answer.parts) if answer.parts or not tool_calls else None
        return self._priced(content, tool_calls, tokens, model, answer.finished)

    async def aclose(self) -> None:
        await self._client.close()

    def _arguments(self, request: ChatRequest, model: str, mode: JsonMode | None) -> dict[str, Any]:
        messages = list(request.messages)
        arguments: dict[str, Any] = {"model": model, "messages": messages}
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        if request.tools:
            arguments["tools"] = request.tools
            if request.tool_choice is not None:
                arguments["tool_choice"] = request.tool_choice
        schema = response_schema(request.response_format)
        if schema is not None and mode is not None:
            if mode is JsonMode.JSON_SCHEMA:
                arguments["response_format"] = request.response_format
            elif mode is JsonMode.JSON_OBJECT_SCHEMA:
                arguments["response_format"] = {"type": "json_object", "schema": schema}
            else:
                arguments["response_format"] = {"type": "json_object"}
                instruction = f"{SCHEMA_INSTRUCTION}\n{json.dumps(schema)}"
                arguments["messages"] = [{"role": "system", "content": instruction}, *messages]
        return arguments

    def _response(self, response: Any, model: str) -> ChatResponse:
        if not response.choices:
            raise ProviderError(f"{self.name}: the answer has no choices", kind="malformed")
        message = response.choices[0].message
        calls = [
            ToolCall(call.id, call.function.name, _arguments_of(call.function.arguments))
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        ]
        usage = response.usage
        tokens = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage is not None else Usage()
        return self._priced(message.content, calls, tokens, model, response.choices[0].finish_reason)

    def _priced(
        self, content: str | None, calls: list[ToolCall], tokens: Usage, model: str, finish: str | None
    ) -> ChatResponse:
        priced = self.config.model(model)
        cost = priced.cost_usd(tokens.input_tokens, tokens.output_tokens) if priced is not None else 0.0
        return ChatResponse(
            content=content,
            tool_calls=calls,
            usage=tokens,
            model=model,
            provider=self.name,
            cost_usd=cost,
            finish=finish,
        )


class _Streamed:
    """The pieces of a streamed answer, gathered chunk by chunk (text passed on as it comes)."""

    def __init__(self, on_delta: Callable[[str], None] | None):
        self.on_delta = on_delta
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finished: str | None = None
        self.usage: Any = None

    def add(self, chunk: Any) -> None:
        self.usage = chunk.usage or self.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                self.parts.append(delta.content)
                if self.on_delta is not None:
                    self.on_delta(delta.content)
            for call in delta.tool_calls or []:
                entry = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
            self.finished = choice.finish_reason or self.finished

    def tool_calls(self) -> list[ToolCall]:
        return [ToolCall(c["id"], c["name"], _arguments_of(c["arguments"])) for _, c in sorted(self.calls.items())]


def _broken(message: str, parts: list[str], on_delta: Callable[[str], None] | None) -> ProviderError:
    """A stream cut short: retryable while nobody has seen any of it."""
    if on_delta is not None and parts:
        return ProviderError(message, kind="stream", retryable=False)
    return ProviderError(message, kind="stream_broken")


def _arguments_of(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _refuses_form(exc: Any) -> bool:
    """Whether a status error may be the server refusing the structured-output form it was sent."""
    status = exc.status_code
    if 400 <= status < 500:
        return status not in NOT_ABOUT_THE_FORM
    return status >= 500 and "response_format" in str(getattr(exc, "message", "") or exc)


def _status_error(provider: str, exc: Any) -> ProviderError:
    status = exc.status_code
    detail = str(getattr(exc, "message", "") or exc)[:300]
    retry_after = _retry_after(getattr(exc, "response", None))
    if status == 429:
        return ProviderError(
            f"{provider}: rate limited (HTTP 429): {detail}", kind="rate_limit", retry_after=retry_after
        )
    if status >= 500:
        message = f"{provider}: server error (HTTP {status}): {detail}"
        return ProviderError(message, kind="server", retry_after=retry_after)
    hint = " (check the key in its api_key_env)" if status in (401, 403) else ""
    return ProviderError(f"{provider}: HTTP {status}{hint}: {detail}", kind="http", retryable=False)


def _retry_after(response: Any) -> float | None:
    """`Retry-After` in seconds (the HTTP-date form is rare for APIs and ignored)."""
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
