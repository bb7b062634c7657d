"""A sandbox child's reply only ever reaches the request it answers: after timeouts, crashes,
kills and exceptions raised mid-request, every evaluation still gets its own result."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.sandbox import JsMemoryError, JsTimeoutError, ProcessSandbox, SandboxError

TAGGED = "input.tag + ':' + nodes.n"
SPIN = "(() => { for (;;) {} })()"
FATAL = "'x'.repeat(2 ** 28).split('')"


@pytest.fixture(scope="module")
def box() -> Iterator[ProcessSandbox]:
    with ProcessSandbox(timeout_s=0.3, workers=2, max_workers=2) as sandbox:
        yield sandbox


def tagged(box: ProcessSandbox, tag: str, n: int = 0) -> Any:
    return box.evaluate(TAGGED, {"input": {"tag": tag}, "nodes": {"n": n}})


@pytest.mark.parametrize("timeout_s", [2_200_000, math.inf, math.nan, -1.0, 0.0, 31.0])
def test_an_unusable_timeout_is_refused_and_the_child_keeps_answering(box: ProcessSandbox, timeout_s: float) -> None:
    assert tagged(box, "before") == "before:0"
    with pytest.raises(SandboxError, match=r"timeout_s"):
        box.evaluate("'stale'", {}, timeout_s=timeout_s)
    for n in range(3):
        assert tagged(box, "after", n) == f"after:{n}"


def test_the_cap_is_named_in_the_refusal() -> None:
    with ProcessSandbox(max_timeout_s=5.0) as sandbox:
        with pytest.raises(SandboxError, match=r"over the sandbox's limit of 5 s .*max_timeout_s"):
            sandbox.evaluate("1", {}, timeout_s=6)
        assert sandbox.evaluate("1", {}, timeout_s=5) == 1


class _Boom(BaseException):
    pass


@pytest.mark.parametrize("exception", [KeyboardInterrupt, OverflowError, _Boom])
def test_an_exception_raised_mid_request_replaces_the_child(
    box: ProcessSandbox, monkeypatch: pytest.MonkeyPatch, exception: type[BaseException]
) -> None:
    """The request was sent and its reply will arrive: the child must not serve anyone again."""
    assert tagged(box, "warm") == "warm:0"
    real_poll = Connection.poll
    calls = {"n": 0}

    def poll_once_then_raise(self: Connection, timeout: float = 0.0) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            real_poll(self, 2.0)  # the reply is in the pipe now
            raise exception()
        return real_poll(self, timeout)

    monkeypatch.setattr(Connection, "poll", poll_once_then_raise)
    with pytest.raises(exception):
        box.evaluate("'the stale reply'", {})
    monkeypatch.undo()
    for n in range(4):  # both children, whichever serves
        assert tagged(box, "next", n) == f"next:{n}"


def test_an_unpicklable_argument_is_refused_before_it_reaches_a_child(box: ProcessSandbox) -> None:
    with pytest.raises(SandboxError, match="not JSON"):
        box.evaluate("input", {"input": threading.Lock()})
    with pytest.raises(SandboxError, match="not JSON"):
        box.call("x => x", object())
    assert tagged(box, "fine") == "fine:0"


def test_a_reply_with_another_requests_id_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    with ProcessSandbox(workers=1) as sandbox:
        assert sandbox.evaluate("1", {}) == 1
        real_send = Connection.send

        def stray_first(self: Connection, message: Any) -> None:
            real_send(self, (10_000, "evaluate", "'stray'", [], "[]", 1.0))  # answered before ours
            real_send(self, message)

        monkeypatch.setattr(Connection, "send", stray_first)
        with pytest.raises(SandboxError, match="answered another request"):
            sandbox.evaluate("'mine'", {})
        monkeypatch.undo()
        assert sandbox.evaluate("'mine'", {}) == "mine"
        assert sandbox.evaluate("'and mine'", {}) == "and mine"


def _kill_children(box: ProcessSandbox) -> None:
    """SIGKILL every child and wait until each has really exited (all its threads)."""
    for child in box._pool.items():
        process = child._process
        if process is not None and process.pid is not None and process.exitcode is None:
            os.kill(process.pid, signal.SIGKILL)
            process.join(5)


def _disturb(box: ProcessSandbox, kind: str) -> None:
    if kind == "timeout":
        with pytest.raises(JsTimeoutError):
            box.evaluate(SPIN, {})
    elif kind == "crash":
        with pytest.raises(JsMemoryError):
            box.evaluate(FATAL, {}, timeout_s=3)
    elif kind == "kill":
        _kill_children(box)
    elif kind == "error":
        with pytest.raises(SandboxError):
            box.evaluate("null.x", {})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(["ok", "timeout", "crash", "kill", "error"]), min_size=1, max_size=6))
def test_sequential_results_never_cross(box: ProcessSandbox, steps: list[str]) -> None:
    for index, kind in enumerate(steps):
        if kind == "ok":
            assert tagged(box, f"run{index}", index) == f"run{index}:{index}"
        else:
            _disturb(box, kind)
    assert tagged(box, "last") == "last:0"


def test_concurrent_results_never_cross_while_children_die(box: ProcessSandbox) -> None:
    results: dict[str, list[Any]] = {}
    stop = threading.Event()

    def run(owner: str) -> None:
        got = results.setdefault(owner, [])
        for n in range(25):
            try:
                got.append((n, box.evaluate(TAGGED, {"input": {"tag": owner}, "nodes": {"n": n}}, owner=owner)))
            except SandboxError as exc:  # its child was killed under it: an error, never another's value
                got.append((n, type(exc).__name__))

    def havoc() -> None:
        kinds = ["timeout", "kill", "crash", "kill", "timeout"]
        for kind in kinds:
            if stop.is_set():
                return
            with contextlib.suppress(SandboxError):  # the kill of another thread's child reached it: fine
                _disturb(box, kind)

    threads = [threading.Thread(target=run, args=(f"run{k}",)) for k in range(3)]
    threads.append(threading.Thread(target=havoc))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    stop.set()
    for owner, got in results.items():
        for n, value in got:
            assert value == f"{owner}:{n}" or value in {"JsRuntimeError", "JsMemoryError", "JsTimeoutError"}, (
                owner,
                n,
                value,
            )
        assert sum(value == f"{owner}:{n}" for n, value in got) >= 10
