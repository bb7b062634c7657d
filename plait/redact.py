"""One redactor for every secret Plait knows, applied to whatever it stores, logs or returns.

Providers echo what they were sent: a 401 quoting "Incorrect API key provided: sk-...", a 500
repeating the request, a connection error naming a `base_url` with `user:pass@` in it. Such text
flows from the provider's error into attempts, node and run errors, events, logs and API
answers, so it is cleaned twice: where provider errors are built, and as the last step before
attempts and errors are written to the store.

What is replaced by `***`:

- every value `register`ed: the API keys providers read from the environment and the MCP
  `%secrets.NAME%` values (registered when plait.toml is loaded), the database password
  (registered when a store is opened);
- the credentials of any URL in the text: its userinfo (`user:pass@`) and the values of query
  parameters whose name says key, token, secret, password, auth, credential or signature;
- as a fallback for keys Plait was never told about, the common shapes `sk-…` (OpenAI, DeepSeek,
  Anthropic and most OpenAI-compatible hosts) and `Bearer …`. A fallback only: it cannot know
  every vendor's format, so configured values are what the guarantee rests on.

Log records of the whole process are redacted too, once a secret is registered
(`install_log_redaction`).

Data a run produces (node outputs, input snapshots, cached answers) is cleaned of the registered
values only (`redact_secrets`): a TOOL that prints the process's environment, or a model asked to
repeat a key, must not get it stored or shown; URLs and key-like words in data are the data's own.

Values shorter than `MIN_SECRET` characters are not registered: replacing every "a" or "1234"
in stored text would destroy it and protect nothing a guess would not find.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import traceback
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
MIN_SECRET = 6

_SENSITIVE_NAME = re.compile(r"key|token|secret|passw|pwd|auth|credential|signature|sig$", re.IGNORECASE)
"""Query parameters and headers whose value is a credential (`api-key`, `access_token`, `X-Amz-Signature`...)."""
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>(){}]+")
_TRAILING = ".,;:!?"
"""Punctuation that ends a sentence after a URL rather than belonging to it."""
_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}|(?<=Bearer )[A-Za-z0-9._~+/=-]{8,}")
"""Key shapes recognised without being registered (see the module docstring)."""

_lock = threading.Lock()
_values: set[str] = set()
_pattern: re.Pattern[str] | None = None
_escaped = False
"""Some registered value holds a character JSON escapes (`"`, `\\`, a control character): found in a
value's strings but not in its JSON text, so `redact_secrets` walks every value."""
_logging_installed = False
_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=False, default=str).encode
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def register(*values: str | None) -> None:
    """Remember secret values so that `redact_text` replaces them from now on (in this process)."""
    global _pattern
    fresh = {v for v in values if v and len(v) >= MIN_SECRET} - _values
    if not fresh:
        return
    global _escaped
    with _lock:
        _values.update(fresh)
        # longest first, so that a secret containing another is replaced whole
        ordered = sorted(_values, key=len, reverse=True)
        _escaped = any(_ESCAPED.search(v) for v in ordered)
        _pattern = re.compile("|".join(re.escape(v) for v in ordered))
    install_log_redaction()


def install_log_redaction() -> None:
    """Redact every log record of this process (any logger: Plait's, uvicorn's, httpx's), its
    traceback included, before a handler formats it. Idempotent; `register` calls it."""
    global _logging_installed
    with _lock:
        if _logging_installed:
            return
        _logging_installed = True
        make = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            trace = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = redact_text(trace)
        return record

    logging.setLogRecordFactory(factory)


def registered() -> frozenset[str]:
    """The values registered so far (for tests and diagnostics: never print them)."""
    return frozenset(_values)


def redact_text(text: str) -> str:
    """`text` with every known secret, URL credential and key-shaped token replaced by `***`."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "://" in text:
        text = _URL.sub(_redacted_match, text)
    if "sk-" in text or "Bearer " in text:
        text = _SHAPES.sub(MASK, text)
    return text


def redact(value: Any) -> Any:
    """`value` (text, or JSON-like lists and dicts of it) with every string redacted; keys too."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def holds_no_secret(text: str) -> bool:
    """True when `redact_secrets` would leave alone the value whose JSON text is `text` (non-ASCII
    kept as is). Lets a writer that encodes a value anyway skip the walk of a clean one."""
    pattern = _pattern
    return pattern is None or (not _escaped and pattern.search(text) is None)


def redacts_nothing(text: str) -> bool:
    """True when `redact` would leave alone the value whose JSON text is `text` (non-ASCII kept as
    is): no URL, no key shape, no registered secret in it."""
    return "://" not in text and "sk-" not in text and "Bearer " not in text and holds_no_secret(text)


def redact_secrets(value: Any) -> Any:
    """`value` (JSON-like) with every registered secret in its strings and keys replaced by `***`;
    URL credentials and key shapes are left alone (in data they are the data's own).

    Costs nothing until a secret is registered. Then the value is encoded as JSON and scanned
    once with the one compiled pattern (both in C); only a value that holds a secret is walked,
    and only the containers on the way to it are copied: a clean value comes back as it is."""
    pattern = _pattern
    if pattern is None:
        return value
    if not _escaped:
        try:
            text = _ENCODE(value)
        except (TypeError, ValueError, RecursionError):
            text = None
        if text is not None and pattern.search(text) is None:
            return value
    return _scrubbed(value, pattern)


def _scrubbed(item: Any, pattern: re.Pattern[str]) -> Any:
    """`item` with the secrets `pattern` finds masked; the very same object when it holds none."""
    if isinstance(item, str):
        return pattern.sub(MASK, item) if pattern.search(item) is not None else item
    if isinstance(item, dict):
        pairs = [(_scrubbed(k, pattern), _scrubbed(v, pattern)) for k, v in item.items()]
        if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, item.items(), strict=True)):
            return item
        return dict(pairs)
    if isinstance(item, list | tuple):
        items = [_scrubbed(v, pattern) for v in item]
        return item if all(new is old for new, old in zip(items, item, strict=True)) else items
    return item


def redact_url(url: str) -> str:
    """A URL as it may be shown: userinfo and credential-like query values replaced by `***`
    (and any registered secret elsewhere in it, e.g. in the path)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return MASK  # not a URL one can parse: show nothing rather than a credential
    netloc = parts.netloc
    if "@" in netloc:
        shown = f"[{host}]" if host and ":" in host else (host or "")
        netloc = f"{MASK}@{shown}" + (f":{port}" if port is not None else "")
    query = "&".join(_redacted_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    shown_url = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    pattern = _pattern
    return pattern.sub(MASK, shown_url) if pattern is not None else shown_url


def _redacted_match(match: re.Match[str]) -> str:
    url = match.group(0).rstrip(_TRAILING)
    return redact_url(url) + match.group(0)[len(url) :]


def _redacted_pair(pair: str) -> str:
    """`name=value` of a query, the value masked when the name says it is a credential (the
    text is kept as written otherwise: re-encoding it would change what the user sees)."""
    name, equals, _ = pair.partition("=")
    return f"{name}={MASK}" if equals and _SENSITIVE_NAME.search(unquote(name)) else pair
