"""An evaluation only ever gets its own result: after timeouts, memory errors and thrown errors,
in sequence and from many threads at once, every evaluation still gets its own answer."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.sandbox import JsMemoryError, JsSandbox, JsTimeoutError, SandboxError

TAGGED = "input.tag + ':' + nodes.n"
SPIN = "(() => { for (;;) {} })()"
HOG = "(() => { const a = []; for (;;) a.push(new Uint8Array(1 << 20)); })()"
SHORT_S = 0.3
"""The limit the runaway expressions are given; every other evaluation has the box's generous
default, so that on a loaded machine a plain one is never taken for a runaway."""


@pytest.fixture(scope="module")
def box() -> Iterator[JsSandbox]:
    with JsSandbox(timeout_s=10, max_memory_mb=32, workers=2, max_workers=2) as sandbox:
        yield sandbox


def tagged(box: JsSandbox, tag: str, n: int = 0) -> Any:
    return box.evaluate(TAGGED, {"input": {"tag": tag}, "nodes": {"n": n}})


@pytest.mark.parametrize("timeout_s", [2_200_000, math.inf, math.nan, -1.0, 0.0, 31.0])
def test_an_unusable_timeout_is_refused_and_the_sandbox_keeps_answering(box: JsSandbox, timeout_s: float) -> None:
    assert tagged(box, "before") == "before:0"
    with pytest.raises(SandboxError, match=r"timeout_s"):
        box.evaluate("'stale'", {}, timeout_s=timeout_s)
    for n in range(3):
        assert tagged(box, "after", n) == f"after:{n}"


def test_the_cap_is_named_in_the_refusal() -> None:
    with JsSandbox(max_timeout_s=5.0) as sandbox:
        with pytest.raises(SandboxError, match=r"over the sandbox's limit of 5 s .*max_timeout_s"):
            sandbox.evaluate("1", {}, timeout_s=6)
        assert sandbox.evaluate("1", {}, timeout_s=5) == 1


def _disturb(box: JsSandbox, kind: str) -> None:
    if kind == "timeout":
        with pytest.raises(JsTimeoutError):
            box.evaluate(SPIN, {}, timeout_s=SHORT_S)
    elif kind == "memory":
        with pytest.raises(JsMemoryError):
            box.evaluate(HOG, {}, timeout_s=3)
    elif kind == "microtasks":
        with pytest.raises(JsTimeoutError):
            box.evaluate("(async () => { for (;;) await 0 })(), 1", {}, timeout_s=SHORT_S)
    elif kind == "error":
        with pytest.raises(SandboxError):
            box.evaluate("null.x", {})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(["ok", "timeout", "memory", "microtasks", "error"]), min_size=1, max_size=6))
def test_sequential_results_never_cross(box: JsSandbox, steps: list[str]) -> None:
    for index, kind in enumerate(steps):
        if kind == "ok":
            assert tagged(box, f"run{index}", index) == f"run{index}:{index}"
        else:
            _disturb(box, kind)
    assert tagged(box, "last") == "last:0"


def test_concurrent_results_never_cross_while_contexts_are_replaced(box: JsSandbox) -> None:
    results: dict[str, list[Any]] = {}

    def run(owner: str) -> None:
        got = results.setdefault(owner, [])
        for n in range(25):
            got.append((n, box.evaluate(TAGGED, {"input": {"tag": owner}, "nodes": {"n": n}}, owner=owner)))

    def havoc() -> None:
        for kind in ["timeout", "memory", "microtasks", "memory", "timeout"]:
            _disturb(box, kind)

    threads = [threading.Thread(target=run, args=(f"run{k}",)) for k in range(3)]
    threads.append(threading.Thread(target=havoc))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for owner, got in results.items():
        assert got == [(n, f"{owner}:{n}") for n in range(25)]
