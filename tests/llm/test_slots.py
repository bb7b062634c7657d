"""Priority slots (SPEC §6.2): a reserve for critical requests, highest priority served first,
low priorities yielding under pressure; and in the pool, critical requests failing over first."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plait.config import load_config
from plait.llm.pool import ProviderPool
from plait.llm.slots import PrioritySlots
from plait.llm.types import ChatRequest, ChatResponse


def test_the_reserve_is_only_for_critical_requests() -> None:
    slots = PrioritySlots(capacity=5, reserve_share=0.2)
    assert slots.reserved == 1
    assert [slots.try_acquire(5) for _ in range(5)] == [True, True, True, True, False]
    assert slots.try_acquire(8)
    assert not slots.try_acquire(10)  # full


def test_waiters_are_served_by_priority_then_arrival() -> None:
    async def scenario() -> list[str]:
        slots = PrioritySlots(capacity=1)
        await slots.acquire(5)
        served: list[str] = []

        async def wait(name: str, priority: int) -> None:
            await slots.acquire(priority)
            served.append(name)
            await asyncio.sleep(0)
            slots.release()

        tasks = [
            asyncio.create_task(wait(n, p)) for n, p in (("low", 2), ("critical", 9), ("normal", 5), ("normal2", 5))
        ]
        await asyncio.sleep(0)
        slots.release()
        await asyncio.gather(*tasks)
        return served

    assert asyncio.run(scenario()) == ["critical", "normal", "normal2", "low"]


def test_a_cancelled_waiter_leaves_the_queue() -> None:
    async def scenario() -> int:
        slots = PrioritySlots(capacity=1)
        await slots.acquire(5)
        waiter = asyncio.create_task(slots.acquire(5))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        slots.release()
        return slots.in_use

    assert asyncio.run(scenario()) == 0


def test_only_critical_requests_use_the_reserve_and_others_go_where_there_is_room(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text('responses:\n  - {output: {text: "slow"}, delay_ms: 300}\n')
    (tmp_path / "fast.yaml").write_text('responses:\n  - {output: {text: "fast"}}\n')
    (tmp_path / "plait.toml").write_text(
        '[[providers]]\nid = "one"\nkind = "scripted"\nfile = "slow.yaml"\nmax_concurrency = 2\nreserve_share = 0.5\n'
        'models = [{ name = "m" }]\n'
        '[[providers]]\nid = "two"\nkind = "scripted"\nfile = "fast.yaml"\nmodels = [{ name = "m" }]\n'
        '[roles]\nchat = ["one/m", "two/m"]\n'
    )
    pool = ProviderPool(load_config(str(tmp_path / "plait.toml")))

    def request(priority: int) -> ChatRequest:
        return ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}], priority=priority)

    async def scenario() -> list[ChatResponse]:
        try:
            busy = asyncio.create_task(pool.complete(request(5)))
            await asyncio.sleep(0.05)  # one of `one`'s two slots is taken; the other is its reserve
            normal = await pool.complete(request(5))
            critical = await pool.complete(request(9))
            return [await busy, normal, critical]
        finally:
            await pool.aclose()

    first, normal, critical = asyncio.run(scenario())
    assert first.provider == "one"
    assert (normal.provider, [d["event"] for d in normal.decisions]) == ("two", ["busy", "sent"])
    assert (critical.provider, [d["event"] for d in critical.decisions]) == ("one", ["sent"])
