"""Provider limits held across every process and machine: `max_concurrency` as a counting
semaphore in Redis, `rpm` and `tpm` as moving windows (the `limits` library) in the same Redis.

The semaphore is a sorted set per provider: each holder is a member scored by when its lease
ends, on Redis's own clock (one Lua script reads `TIME`, drops expired holders, and adds the
new one only while fewer than the limit hold it). A holder renews its lease while its call
runs; one that crashes stops renewing and its slot is free when the lease ends, so a killed
worker never leaks capacity for longer than `LEASE_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

LEASE_S = 30.0
"""A slot's lease; renewed every third of it while the call runs."""
POLL_S = (0.01, 0.2)
UNREACHABLE_S = 60.0
"""How long a call waits for the limits' Redis to come back before it fails (retryably)."""
"""Waiting for a slot: the first and the longest pause between tries."""

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
  return 1
end
return 0
"""
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
  return 1
end
return 0
"""


class SharedLimits:
    """The limits of the providers of one deployment, in the Redis at `url`."""

    def __init__(self, url: str, namespace: str = "plait", *, lease_s: float = LEASE_S):
        self.url = url
        self.lease_s = lease_s
        self._namespace = namespace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._redis: Any = None
        self._windows: Any = None

    def _connected(self) -> None:
        """Clients of the running loop (an asyncio Redis client belongs to the loop it was made on)."""
        import redis.asyncio as aioredis
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import MovingWindowRateLimiter

        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop = loop
        self._redis = aioredis.Redis.from_url(self.url)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._renew = self._redis.register_script(_RENEW)
        storage = RedisStorage("async+" + self.url, implementation="redispy", key_prefix=f"{self._namespace}:limits")
        self._windows = MovingWindowRateLimiter(storage)

    @contextlib.asynccontextmanager
    async def slot(self, provider: str, limit: int) -> AsyncIterator[float]:
        """Hold one of `provider`'s `limit` slots for the block (yields how long it waited)."""
        self._connected()
        key, token = f"{self._namespace}:slots:{provider}", uuid.uuid4().hex
        started, pause = time.monotonic(), POLL_S[0]
        lease_ms = int(self.lease_s * 1000)
        while not await self._reachable(lambda: self._acquire(keys=[key], args=[limit, lease_ms, token])):
            await asyncio.sleep(pause)
            pause = min(POLL_S[1], pause * 2)
        renew = asyncio.create_task(self._keep(key, token))
        try:
            yield time.monotonic() - started
        finally:
            renew.cancel()
            with contextlib.suppress(Exception):  # Redis away: the lease frees the slot anyway
                await self._redis.zrem(key, token)

    async def _keep(self, key: str, token: str) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            with contextlib.suppress(Exception):
                await self._renew(keys=[key], args=[int(self.lease_s * 1000), token])

    async def window_wait(self, provider: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
        """Wait until `provider`'s minute has room for one more request of `tokens` tokens, and
        take it; how long it waited."""
        from limits import RateLimitItemPerMinute

        self._connected()
        started = time.monotonic()
        for limit, cost, what in ((rpm, 1, "rpm"), (tpm, tokens, "tpm")):
            if limit is None:
                continue
            item = RateLimitItemPerMinute(limit)
            cost = min(cost, limit)  # a request larger than the whole minute still goes, alone
            ids = (self._namespace, provider, what)
            while not await self._reachable(lambda: self._windows.hit(item, *ids, cost=cost)):  # noqa: B023
                stats = await self._reachable(lambda: self._windows.get_window_stats(item, *ids))  # noqa: B023
                await asyncio.sleep(max(0.05, min(5.0, stats.reset_time - time.time())))
        return time.monotonic() - started

    async def _reachable(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """`call(...)`, waiting while Redis is away (restarting): a call to the provider waits for
        its limits rather than failing, or going out unlimited. Past `UNREACHABLE_S` it fails,
        retryably, like a provider that does not answer."""
        from plait.llm.types import ProviderError

        since = time.monotonic()
        while True:
            error: Exception
            try:
                return await call()
            except Exception as exc:  # OSError, redis-py's and limits' own connection errors
                if not isinstance(exc, OSError) and "connect" not in f"{type(exc).__name__} {exc}".lower():
                    raise
                error = exc
            if time.monotonic() - since > UNREACHABLE_S:
                raise ProviderError(f"the shared limits' Redis is unreachable: {error}", kind="limits") from None
            await asyncio.sleep(0.5)
            await self.aclose()  # the old clients closed, then connect again
            self._connected()

    async def aclose(self) -> None:
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.aclose()
            self._redis = self._loop = None


def shared_limits_for(broker: str | None, enabled: bool) -> SharedLimits | None:
    """The shared limits of a deployment whose broker is Redis (None otherwise: per process)."""
    if not enabled or broker is None or not broker.startswith(("redis://", "rediss://")):
        return None
    return SharedLimits(broker)
