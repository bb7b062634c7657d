"""The provider pool: first usable target, limits, retries with backoff (Retry-After wins), failover,
prices, and every decision recorded. Scripted providers stand in for real endpoints (the real
llama.cpp server is in test_openai_compat.py); time is simulated where limits would make a test wait."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llm_helpers import complete_once

from plait.config import load_config
from plait.llm.pool import ProviderPool
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, Usage

TOML = """
[[providers]]
id = "one"
kind = "scripted"
file = "first.yaml"
retries = 2
backoff_s = 0.5
{one_extra}
models = [{{ name = "m1" }}]

[[providers]]
id = "two"
kind = "scripted"
file = "second.yaml"
models = [{{ name = "m2", price_in = 2.0, price_out = 4.0 }}]

[roles]
chat = {roles}
"""


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def pool(
    tmp_path: Path, first: str, one_extra: str = "", time: FakeTime | None = None, roles: str = '["one/m1", "two/m2"]'
) -> ProviderPool:
    (tmp_path / "first.yaml").write_text(f"responses:\n  - {first}\n")
    (tmp_path / "second.yaml").write_text(
        'responses:\n  - {output: {text: "second"}, usage: {input: 1000, output: 500}}\n'
    )
    (tmp_path / "plait.toml").write_text(TOML.format(one_extra=one_extra, roles=roles))
    config = load_config(str(tmp_path / "plait.toml"))
    if time is None:
        return ProviderPool(config)
    return ProviderPool(config, sleep=time.sleep, clock=time.clock)


def request(role: str = "chat") -> ChatRequest:
    return ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], model_role=role, max_tokens=10)


def events(decisions: list[dict[str, Any]]) -> list[str]:
    return [d["event"] for d in decisions]


def test_the_first_target_answers_when_it_can(tmp_path: Path) -> None:
    response = complete_once(pool(tmp_path, '{output: {text: "first"}}'), request())
    assert (response.content, response.provider, response.model) == ('{"text": "first"}', "one", "m1")
    assert events(response.decisions) == ["sent"]


@pytest.mark.parametrize("status", [429, 500])
def test_retryable_errors_back_off_then_fail_over_priced_by_the_serving_model(tmp_path: Path, status: int) -> None:
    time = FakeTime()
    response = complete_once(pool(tmp_path, f"{{error: {status}}}", time=time), request())
    assert (response.content, response.provider, response.model) == ('{"text": "second"}', "two", "m2")
    assert response.cost_usd == pytest.approx((1000 * 2.0 + 500 * 4.0) / 1e6)
    assert events(response.decisions) == ["sent", "retry", "sent", "retry", "sent", "failover", "sent"]
    assert response.decisions[5]["to"] == "two/m2"
    assert f"HTTP {status}" in response.decisions[5]["error"]
    first, second = time.slept  # exponential with jitter: 0.5 * [0.5, 1], then 1.0 * [0.5, 1]
    assert 0.25 <= first <= 0.5
    assert 0.5 <= second <= 1.0


class AskedToWait(Provider):
    name = "fake"

    def __init__(self, retry_after: float | None, retryable: bool = True) -> None:
        self.retry_after, self.retryable, self.calls = retry_after, retryable, 0

    async def complete(self, req: ChatRequest) -> ChatResponse:
        self.calls += 1
        if self.calls == 1:
            raise ProviderError("HTTP 429", kind="rate_limit", retryable=self.retryable, retry_after=self.retry_after)
        return ChatResponse(content="{}", usage=Usage(1, 1))


def test_a_longer_retry_after_from_the_server_wins_over_the_backoff(tmp_path: Path) -> None:
    time = FakeTime()
    p = pool(tmp_path, "{error: 429}", time=time)
    p._providers["one"] = AskedToWait(retry_after=7.0)
    response = complete_once(p, request())
    assert time.slept == [7.0]
    assert response.provider == "one"
    assert [d.get("wait_s") for d in response.decisions if d["event"] == "retry"] == [7.0]


def test_an_error_that_cannot_pass_is_neither_retried_nor_failed_over(tmp_path: Path) -> None:
    p = pool(tmp_path, "{error: 429}")
    fake = p._providers["one"] = AskedToWait(retry_after=None, retryable=False)
    with pytest.raises(ProviderError) as caught:
        complete_once(p, request())
    assert fake.calls == 1
    assert events(caught.value.decisions) == ["sent"]


def test_all_targets_failing_reports_the_last_error_and_every_decision(tmp_path: Path) -> None:
    (tmp_path / "first.yaml").write_text("responses:\n  - {error: 500}\n")
    p = pool(tmp_path, "{error: 500}", time=FakeTime())
    (tmp_path / "second.yaml").write_text("responses:\n  - {error: 500}\n")
    with pytest.raises(
        ProviderError, match=r"every provider for the role 'chat' failed; the last: .*HTTP 500"
    ) as caught:
        complete_once(p, request())
    assert events(caught.value.decisions).count("sent") == 6  # 3 tries on each target
    assert caught.value.retryable


def test_requests_per_minute_queue_the_request_until_the_window_allows(tmp_path: Path) -> None:
    time = FakeTime()
    p = pool(tmp_path, '{output: {text: "first"}}', one_extra="rpm = 2", time=time, roles='["one/m1"]')

    async def three() -> list[ChatResponse]:
        try:
            return [await p.complete(request()) for _ in range(3)]
        finally:
            await p.aclose()

    responses = asyncio.run(three())
    assert [events(r.decisions) for r in responses] == [["sent"], ["sent"], ["queued", "sent"]]
    queued = responses[2].decisions[0]
    assert (queued["reason"], queued["wait_s"]) == ("rpm", 60.0)
    assert time.slept == [60.0]


def test_max_concurrency_queues_the_second_request_for_a_slot(tmp_path: Path) -> None:
    p = pool(tmp_path, '{output: {text: "first"}, delay_ms: 150}', one_extra="max_concurrency = 1", roles='["one/m1"]')

    async def two() -> list[ChatResponse]:
        try:
            return list(await asyncio.gather(p.complete(request()), p.complete(request())))
        finally:
            await p.aclose()

    first, second = asyncio.run(two())
    assert events(first.decisions) == ["sent"]
    assert events(second.decisions) == ["queued", "sent"]
    assert second.decisions[0]["reason"] == "max_concurrency"
    assert second.decisions[0]["wait_s"] >= 0.1


def test_load_shows_calls_in_flight_and_queued_then_the_minute_s_requests(tmp_path: Path) -> None:
    p = pool(tmp_path, '{output: {text: "first"}, delay_ms: 300}', one_extra="max_concurrency = 1", roles='["one/m1"]')

    async def watch() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        try:
            before = p.load()
            calls = asyncio.gather(p.complete(request()), p.complete(request()))
            while not p.load()[0]["queued"]:
                await asyncio.sleep(0.01)
            during = p.load()
            await calls
            return before, during, p.load()
        finally:
            await p.aclose()

    before, during, after = asyncio.run(watch())
    assert [(r["id"], r["in_flight"], r["queued"], r["requests_last_minute"]) for r in before] == [
        ("one", 0, 0, 0),
        ("two", 0, 0, 0),
    ]
    assert (during[0]["in_flight"], during[0]["queued"], during[0]["max_concurrency"]) == (1, 1, 1)
    assert (after[0]["in_flight"], after[0]["queued"], after[0]["requests_last_minute"]) == (0, 0, 2)
    assert after[0]["usable"]


def test_a_request_goes_to_the_first_target_with_capacity(tmp_path: Path) -> None:
    p = pool(tmp_path, '{output: {text: "first"}, delay_ms: 150}', one_extra="max_concurrency = 1")

    async def two() -> list[ChatResponse]:
        try:
            return list(await asyncio.gather(p.complete(request()), p.complete(request())))
        finally:
            await p.aclose()

    first, second = asyncio.run(two())
    assert (first.provider, events(first.decisions)) == ("one", ["sent"])
    assert (second.provider, events(second.decisions)) == ("two", ["busy", "sent"])
    assert second.decisions[0]["target"] == "one/m1"


def test_a_role_nobody_serves_is_explained(tmp_path: Path) -> None:
    p = pool(tmp_path, '{output: {text: "first"}}')
    assert p.refusal("chat") is None
    assert "the role 'vision' is not configured" in (p.refusal("vision") or "")
    with pytest.raises(ProviderError, match="the role 'vision' is not configured") as caught:
        complete_once(p, request("vision"))
    assert not caught.value.retryable


def test_when_every_target_fails_the_pool_degrades_to_its_fallback_model(tmp_path: Path) -> None:
    for name, answer in (("first", "{error: 500}"), ("second", "{error: 429}"), ("third", '{output: {text: "tiny"}}')):
        (tmp_path / f"{name}.yaml").write_text(f"responses:\n  - {answer}\n")
    providers = "".join(
        f'[[providers]]\nid = "{p}"\nkind = "scripted"\nfile = "{f}.yaml"\nretries = 0\nmodels = [{{ name = "{m}" }}]\n'
        for p, f, m in (("one", "first", "m1"), ("two", "second", "m2"), ("small", "third", "tiny"))
    )
    (tmp_path / "plait.toml").write_text(
        providers + '[pool]\ndegrade_to = "small/tiny"\n[roles]\nchat = ["one/m1", "two/m2"]\n'
    )
    p = ProviderPool(load_config(str(tmp_path / "plait.toml")))
    response = complete_once(p, request())
    assert (response.content, response.provider, response.model) == ('{"text": "tiny"}', "small", "tiny")
    assert events(response.decisions) == ["sent", "failover", "sent", "degraded", "sent"]
    assert response.decisions[3]["to"] == "small/tiny"


def test_degrade_to_must_name_a_configured_model(tmp_path: Path) -> None:
    from plait.config import ConfigError

    pool(tmp_path, '{output: {text: "first"}}')
    (tmp_path / "plait.toml").write_text((tmp_path / "plait.toml").read_text() + '\n[pool]\ndegrade_to = "nope/x"\n')
    with pytest.raises(ConfigError, match=r"pool.degrade_to.*no provider 'nope'"):
        load_config(str(tmp_path / "plait.toml"))


def test_a_model_override_naming_a_provider_goes_to_that_provider_alone(tmp_path: Path) -> None:
    sent = ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], model_role="chat", max_tokens=10,
                       model="two/m2")  # fmt: skip
    response = complete_once(pool(tmp_path, "{error: 500}"), sent)  # "one" would fail: it is never asked
    assert (response.content, response.provider, response.model) == ('{"text": "second"}', "two", "m2")
    assert events(response.decisions) == ["sent"]


def test_a_model_override_naming_a_failing_provider_does_not_reach_the_others(tmp_path: Path) -> None:
    sent = ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], model_role="chat", max_tokens=10,
                       model="one/m1")  # fmt: skip
    with pytest.raises(ProviderError) as failed:
        complete_once(pool(tmp_path, "{error: 500}", time=FakeTime()), sent)
    assert "two" not in {d.get("to", "").split("/")[0] for d in failed.value.decisions}


def test_a_model_name_that_names_no_provider_is_a_model_for_the_roles_providers(tmp_path: Path) -> None:
    sent = ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], model_role="chat", max_tokens=10,
                       model="vendor/model-x")  # fmt: skip
    response = complete_once(pool(tmp_path, '{output: {text: "first"}}'), sent)
    assert (response.provider, response.model) == ("one", "vendor/model-x")
