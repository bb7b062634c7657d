"""The provider that follows the settings (plait/llm/following.py): a new call goes to the provider
of the newest revision while a call already running finishes on the one it started on, which is
closed once that call ends; the store's revision is looked at only when the source says it is due
(an injected clock, no sleeping); without a provider, a call is refused as without one."""

from __future__ import annotations

import asyncio

import pytest

from plait.llm.following import FollowingProvider, serving
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, Usage


class Gated(Provider):
    """Answers with its own name, once `release` is set; records its calls and closing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.closed = False

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.started.set()
        await self.release.wait()
        return ChatResponse(content=self.name, usage=Usage(1, 1), provider=self.name, model="m")

    async def aclose(self) -> None:
        self.closed = True


class Source:
    """A settings source with a revision the test moves and a clock it turns."""

    def __init__(self, interval: float = 1.0) -> None:
        self.revision = 1
        self.now = 0.0
        self.looked = 0.0
        self.interval = interval
        self.checks = 0
        self.stored = 1
        """The store's revision: taken up only by `check`."""

    def current(self) -> tuple[int, str]:
        return self.revision, f"rev{self.revision}"

    def due(self) -> bool:
        return self.now - self.looked >= self.interval

    def check(self) -> None:
        self.checks += 1
        self.looked = self.now
        self.revision = self.stored


def request() -> ChatRequest:
    return ChatRequest("n", [{"role": "user", "content": "hi"}])


def test_a_call_in_flight_finishes_on_its_provider_and_new_calls_go_to_the_newest() -> None:
    asyncio.run(_in_flight_and_new())


async def _in_flight_and_new() -> None:
    built: dict[str, Gated] = {}

    def build(settings: str) -> Provider:
        built[settings] = Gated(settings)
        return built[settings]

    source = Source()
    following = FollowingProvider(source, build)
    assert following.serving is not None  # built from revision 1's settings
    first = asyncio.create_task(following.complete(request()))
    await built["rev1"].started.wait()

    source.stored = 2  # a change recorded elsewhere: taken up at the next look, once it is due
    source.now = 0.5
    assert serving(following) is built["rev1"]
    source.now = 1.0
    second = asyncio.create_task(following.complete(request()))
    while "rev2" not in built:
        await asyncio.sleep(0)
    await built["rev2"].started.wait()
    assert source.checks == 1
    built["rev2"].release.set()
    assert (await second).content == "rev2"
    assert not built["rev1"].closed  # its call is still running

    built["rev1"].release.set()
    assert (await first).content == "rev1"
    assert built["rev1"].closed  # replaced, and idle now
    assert not built["rev2"].closed
    assert following.name == "rev2"
    await following.aclose()
    assert built["rev2"].closed


def test_without_a_provider_a_call_is_refused_as_without_one() -> None:
    asyncio.run(_without_a_provider())


async def _without_a_provider() -> None:
    following = FollowingProvider(Source(interval=60), lambda settings: None)
    assert "no provider is configured" in (following.refusal("chat") or "")
    with pytest.raises(ProviderError) as refused:
        await following.complete(request())
    assert refused.value.kind == "config"
    assert following.config is None
    assert following.load() == []
