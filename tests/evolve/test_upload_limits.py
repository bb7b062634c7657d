"""A graph uploaded as an object (already parsed, as the HTTP API's `{"graph": {...}}`) is checked
like a parsed file: a value no store can hold is a diagnostic naming its path, and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile import GraphInvalid
from plait.evolve.upload import UploadMode, check_upload, save_upload
from plait.store import NotFoundError, Store

GRAPH = {"plait": 1, "id": "g", "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "1"}]}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"name": "bad \ud800"}, "name: the string holds a lone surrogate (U+D800)"),
        ({"input_schema": {"maximum": float("inf")}}, "input_schema.maximum: inf is not a JSON number"),
    ],
)
def test_an_uploaded_object_with_an_unstorable_value_is_refused(
    store: Store, extra: dict[str, Any], message: str
) -> None:
    (diagnostic,) = check_upload({**GRAPH, **extra}).errors
    assert diagnostic.code == "invalid_value"
    assert diagnostic.message.startswith(message)
    with pytest.raises(GraphInvalid):
        save_upload(store, {**GRAPH, **extra}, mode=UploadMode.IMPORT)
    with pytest.raises(NotFoundError):
        store.graphs.get("g")
