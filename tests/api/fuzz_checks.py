"""Schemathesis hooks of test_openapi_fuzz.py (loaded by `st run` through `hooks` in its config).

The built-in `positive_data_acceptance` check wants every request that matches the document
to be accepted. Plait refuses some of them with 422 on purpose, after reading stored data no
OpenAPI document can describe: a graph with errors (`graph_invalid`), an input that breaks the
graph's input_schema or a value that breaks a node's edge schema (`invalid`). So the fuzz
config lets that check accept 422, and this check keeps what it was for: a 422 that comes from
the API's own request validation (`invalid_request`) for a request the document allows means
the document and the validator disagree, which is a bug.
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.check
def valid_requests_pass_request_validation(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    if code == "invalid_request":
        raise AssertionError(
            "a request that matches the OpenAPI document was refused by the API's request validation "
            f"(422 invalid_request): {response.text[:500]}"
        )
    return None
