"""Role routing from plait.toml: first usable target, failover on retryable errors, prices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llm_helpers import complete_once

from plait.llm.config import load_config
from plait.llm.router import RoleRouter
from plait.llm.types import ChatRequest, ProviderError


def router(tmp_path: Path, first_error: int | None) -> RoleRouter:
    first = {"error": first_error} if first_error else {"output": {"text": "first"}}
    (tmp_path / "first.yaml").write_text(f"responses:\n  - {first}\n".replace("'", '"'))
    (tmp_path / "second.yaml").write_text(
        'responses:\n  - {output: {text: "second"}, usage: {input: 1000, output: 500}}\n'
    )
    (tmp_path / "plait.toml").write_text("""
[[providers]]
id = "one"
kind = "scripted"
file = "first.yaml"
models = [{ name = "m1" }]

[[providers]]
id = "two"
kind = "scripted"
file = "second.yaml"
models = [{ name = "m2", price_in = 2.0, price_out = 4.0 }]

[roles]
chat = ["one/m1", "two/m2"]
""")
    return RoleRouter(load_config(str(tmp_path / "plait.toml")))


def complete(r: RoleRouter, role: str = "chat") -> Any:
    request = ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], model_role=role)

    return complete_once(r, request)


def test_the_first_target_answers_when_it_can(tmp_path: Path) -> None:
    assert complete(router(tmp_path, None)).content == '{"text": "first"}'


@pytest.mark.parametrize("status", [429, 500])
def test_a_retryable_error_fails_over_to_the_next_target_priced_by_its_model(tmp_path: Path, status: int) -> None:
    response = complete(router(tmp_path, status))
    assert response.content == '{"text": "second"}'
    assert response.cost_usd == pytest.approx((1000 * 2.0 + 500 * 4.0) / 1e6)


def test_a_role_nobody_serves_is_explained(tmp_path: Path) -> None:
    r = router(tmp_path, None)
    assert r.refusal("chat") is None
    assert "the role 'vision' is not configured" in (r.refusal("vision") or "")
    with pytest.raises(ProviderError, match="the role 'vision' is not configured") as caught:
        complete(r, "vision")
    assert not caught.value.retryable
