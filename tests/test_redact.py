"""The redactor: registered values, URL credentials and key shapes are masked wherever they sit in
a text or a JSON-like value, and in log records of any logger (tracebacks included)."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest

from plait import redact as redact_module
from plait.redact import (
    MASK,
    redact,
    redact_secrets,
    redact_text,
    redact_url,
    redacts_nothing,
    register,
    registered,
)


def secret() -> str:
    return f"value-{uuid.uuid4().hex}"


def test_a_registered_value_is_masked_in_text_and_json() -> None:
    key = secret()
    register(key)
    assert redact_text(f"Incorrect API key provided: {key}.") == "Incorrect API key provided: ***."
    value = {"attempts": [{"error": f"HTTP 401: {key}", "n": 1}], key: (key, None)}
    assert redact(value) == {"attempts": [{"error": "HTTP 401: ***", "n": 1}], MASK: [MASK, None]}


def test_a_secret_containing_another_is_masked_whole() -> None:
    short, long = secret(), ""
    long = short + "-and-more"
    register(short, long)
    assert redact_text(f"[{long}] [{short}]") == "[***] [***]"


def test_values_too_short_to_be_secrets_are_not_registered() -> None:
    register("abc", "", None)
    assert "abc" not in registered()
    assert redact_text("abc abc") == "abc abc"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://bob:hunter2@api.example.com:8443/v1", "https://***@api.example.com:8443/v1"),
        ("https://api.example.com/v1?api-key=abc&model=m", "https://api.example.com/v1?api-key=***&model=m"),
        ("http://h/x?access_token=a&X-Amz-Signature=b&sig=c&page=2", "http://h/x?access_token=***&X-Amz-Signature=***&sig=***&page=2"),
        ("http://[::1]:9/v1?Password=p", "http://[::1]:9/v1?Password=***"),
        ("http://127.0.0.1:8765/api/runs?limit=5", "http://127.0.0.1:8765/api/runs?limit=5"),
    ],
)  # fmt: skip
def test_url_credentials_are_masked(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_text(f"cannot connect to {url}: refused") == f"cannot connect to {shown}: refused"


def test_common_key_shapes_are_masked_without_being_registered() -> None:
    assert redact_text("key sk-proj-ABCDEFGHIJKLMNOPQRST1234 rejected") == "key *** rejected"
    assert redact_text("sent Authorization: Bearer abc.def-ghi_jkl") == "sent Authorization: Bearer ***"
    assert redact_text("task-manager sk-short") == "task-manager sk-short"  # not a key's length


def test_log_records_of_any_logger_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    key = secret()
    register(key)
    log = logging.getLogger("some.library")
    with caplog.at_level(logging.INFO):
        log.info("called with %s", key)
        try:
            raise RuntimeError(f"the server said {key}")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text
    assert "called with ***" in text
    assert "RuntimeError: the server said ***" in text
    assert key not in text


def test_data_is_cleaned_of_registered_values_only_and_a_clean_value_is_not_copied() -> None:
    """Node outputs and snapshots: a registered value is masked wherever it sits (keys too, and a
    value JSON would escape); URLs and key shapes in data are the data's own; nothing is copied
    when nothing is found."""
    key, quoted = secret(), f'pass"word\\{uuid.uuid4().hex}'
    register(key, quoted)
    value = {"text": f"the key is {key}", "list": [{key: "x"}, f"<{quoted}>"], "url": "https://u:p@h/x?token=t"}
    assert redact_secrets(value) == {
        "text": "the key is ***",
        "list": [{MASK: "x"}, "<***>"],
        "url": "https://u:p@h/x?token=t",
    }
    clean = {"a": [1, {"b": "sk-proj-ABCDEFGHIJKLMNOPQRST1234"}], "c": None}
    assert redact_secrets(clean) is clean


def test_a_text_redact_would_change_is_never_called_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """What lets a writer skip `redact`'s walk: text in which it would find anything is not clean."""
    for name, empty in (("_values", set()), ("_pattern", None), ("_escaped", False)):
        monkeypatch.setattr(redact_module, name, empty)  # this process's earlier registrations, and after: none
    key, quoted = secret(), f'pass"word\\{uuid.uuid4().hex}'
    register(key)
    values: list[Any] = [
        {"content": "plain text, é"},
        {"error": "GET https://u:p@h/x?token=t failed"},
        ["Bearer abcdefghijk"],
        {"k": "sk-proj-ABCDEFGHIJKLMNOPQRST1234"},
        {key: 1},
        [f"<{key}>"],
    ]
    for value in values:
        if redacts_nothing(json.dumps(value, ensure_ascii=False)):
            assert redact(value) == value
    assert redacts_nothing(json.dumps(values[0], ensure_ascii=False))
    assert not redacts_nothing(json.dumps(values[4], ensure_ascii=False))
    register(quoted)  # a secret JSON escapes cannot be found in JSON text: nothing is called clean any more
    assert not redacts_nothing(json.dumps(values[0], ensure_ascii=False))
