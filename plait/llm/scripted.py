"""The `scripted` provider: deterministic answers from a YAML file, for engine tests, demos and CI.

    responses:                    # first match wins
      - node: chapter_split       # optional: only calls from this node
        match: "regex"            # optional: searched in the rendered user prompt
        output: {chapters: []}    # JSON returned as the assistant content
        # or  text: "raw text"  |  tool_calls: [{name: x, arguments: {...}}]
        # or  error: 429 | 500 | timeout | malformed      (fault injection)
        delay_ms: 0               # simulated latency (streamed: spread over the answer's words)
        stream_break_after: 12    # optional: a streamed answer breaks off after this many characters
        finish: length            # optional: why the model stopped (length: cut at the token limit)
        times: 1                  # use N times, then fall through (omit = forever)
        usage: {input: 10, output: 5}
    log: calls.jsonl              # optional: append one JSON line per call (relative to this file)

It is never a silent default: it is selected with `--llm scripted:FILE`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from plait.errors import PlaitError, Refusal
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, ToolCall, Usage
from plait.model.documents import DocumentError, read_document

LOG_ENV = "PLAIT_SCRIPTED_LOG"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScriptedToolCall(_Strict):
    """A tool call a scripted response makes: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedUsage(_Strict):
    """The token counts a scripted response reports (estimated from the text when not given)."""

    input: int = 0
    output: int = 0


class ScriptedResponse(_Strict):
    """One rule of a scripted responses file (see the module docstring): when it applies and the
    one answer it gives (`output`, `text`, `tool_calls` or `error`); validated when loaded."""

    node: str | None = None
    match: str | None = None
    output: Any = None
    text: str | None = None
    tool_calls: list[ScriptedToolCall] | None = None
    error: Literal[429, 500, "timeout", "malformed"] | None = None
    delay_ms: Annotated[int, Field(ge=0)] = 0
    stream_break_after: Annotated[int, Field(ge=0)] | None = None
    """A streamed answer breaks off once this many characters are sent (a stream fault)."""
    finish: Literal["stop", "length"] | None = None
    """Why the model stopped, as a server says it: `length` is an answer cut at the token limit."""
    times: Annotated[int, Field(ge=1)] | None = None
    usage: ScriptedUsage | None = None

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"match is not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_answer(self) -> ScriptedResponse:
        given = [k for k in ("output", "text", "tool_calls", "error") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of output, text, tool_calls, error (got {given or 'none'})")
        return self


class ScriptFile(_Strict):
    """A scripted responses file: its rules, first match wins, and where to log the calls."""

    responses: list[ScriptedResponse]
    log: str | None = None


class ScriptError(PlaitError, ValueError):
    """The script file is missing or malformed; the message names the file and the problem."""

    kind = Refusal.INVALID
    code = "script_invalid"


def load_script(path: str | os.PathLike[str]) -> ScriptFile:
    """The scripted responses file at `path`, validated; ScriptError naming every problem when it cannot be used."""
    file = Path(path)
    try:
        data = read_document(file, f"scripted responses {file}", "")
    except DocumentError as exc:
        raise ScriptError(f"{exc.message}; {exc.hint}" if exc.hint else exc.message) from None
    return script_from(data, f"scripted responses {file}")


def script_from(data: Any, what: str = "scripted responses") -> ScriptFile:
    """A script file's content (`{"responses": [...]}`) validated, whether read from a file or
    written in Python (`plait.testing.scripted`); ScriptError naming `what` and every problem."""
    try:
        return ScriptFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors(include_url=False)
        )
        raise ScriptError(f"{what} are invalid: {problems}") from None


class ScriptedProvider(Provider):
    """Answers from a script file (see the module docstring); never cached."""

    name = "scripted"

    def __init__(self, script: ScriptFile, *, source: Path | None = None):
        self._rules = script.responses
        self._patterns = [re.compile(r.match) if r.match else None for r in self._rules]
        self._used = [0] * len(self._rules)
        self._contents = [
            json.dumps(r.output, ensure_ascii=False) if r.output is not None else r.text for r in self._rules
        ]
        """Each rule's answer as sent (the script is fixed once loaded)."""
        log = os.environ.get(LOG_ENV) or script.log
        self._log = (source.parent / log if source and not Path(log).is_absolute() else Path(log)) if log else None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedProvider:
        return cls(load_script(path), source=Path(path))

    async def complete(self, request: ChatRequest) -> ChatResponse:
        index = self._pick(request)
        rule = self._rules[index]
        self._used[index] += 1
        self._record(request, index)
        if rule.delay_ms and (request.on_delta is None or rule.error is not None):
            await asyncio.sleep(rule.delay_ms / 1000)
        if rule.error is not None:
            return await self._fault(rule, request)
        if request.on_delta is not None:
            await self._stream(rule, self._contents[index] or "", request.on_delta)
        elif rule.stream_break_after is not None:
            raise ProviderError(f"scripted stream for node '{request.node_id}' broke off", kind="stream_broken")
        return self._answer(index, request)

    async def _stream(self, rule: ScriptedResponse, content: str, on_delta: Callable[[str], None]) -> None:
        """Pass the answer on word by word, `delay_ms` spread between the words; break off after
        `stream_break_after` characters when the rule says so."""
        words = re.findall(r"\s*\S+\s*", content) or [content]
        pause = rule.delay_ms / 1000 / len(words)
        sent = 0
        for word in words:
            if rule.stream_break_after is not None and sent + len(word) > rule.stream_break_after:
                cut = word[: rule.stream_break_after - sent]
                if cut:
                    on_delta(cut)
                if sent + len(cut) == 0:  # nothing shown yet: as a real provider, retryable
                    raise ProviderError("the scripted answer stream broke off", kind="stream_broken")
                raise ProviderError("the scripted answer stream broke off", kind="stream", retryable=False)
            if pause:
                await asyncio.sleep(pause)
            on_delta(word)
            sent += len(word)

    def _pick(self, request: ChatRequest) -> int:
        prompt = request.user_prompt
        for index, rule in enumerate(self._rules):
            if rule.node is not None and rule.node != request.node_id:
                continue
            if rule.times is not None and self._used[index] >= rule.times:
                continue
            pattern = self._patterns[index]
            if pattern is not None and not pattern.search(prompt):
                continue
            return index
        raise ProviderError(
            f"no scripted response matches node '{request.node_id}' (prompt starts {prompt[:80]!r})",
            kind="unmatched",
            retryable=False,
        )

    async def _fault(self, rule: ScriptedResponse, request: ChatRequest) -> ChatResponse:
        if rule.error == "timeout":
            await asyncio.sleep(request.timeout_s or 0)
            raise ProviderError(f"scripted timeout for node '{request.node_id}'", kind="timeout")
        if rule.error == "malformed":
            return ChatResponse(content='{"truncated": ', usage=Usage(1, 1), provider=self.name, model="scripted")
        raise ProviderError(f"scripted HTTP {rule.error} for node '{request.node_id}'", kind=f"http_{rule.error}")

    def _answer(self, index: int, request: ChatRequest) -> ChatResponse:
        rule, content = self._rules[index], self._contents[index]
        calls = [
            ToolCall(id=f"call_{i}", name=c.name, arguments=c.arguments) for i, c in enumerate(rule.tool_calls or [])
        ]
        if rule.usage is not None:
            usage = Usage(rule.usage.input, rule.usage.output)
        else:  # a rough 4-characters-per-token estimate keeps token columns meaningful
            prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages)
            usage = Usage(prompt_chars // 4 + 1, len(content or "") // 4 + 1)
        return ChatResponse(
            content=content, tool_calls=calls, usage=usage, provider=self.name, model="scripted", finish=rule.finish
        )

    def _record(self, request: ChatRequest, index: int) -> None:
        if self._log is None:
            return
        line = json.dumps({"node": request.node_id, "rule": index, "pid": os.getpid(), "at": time.time()})
        with open(self._log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
