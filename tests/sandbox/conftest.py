"""One sandbox per test module: contexts are reused across evaluations, as the engine does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plait.sandbox import JsSandbox

GENEROUS_S = 30.0
"""The default time limit: ordinary evaluations must never meet it, on a host whose cores are all
busy too (a process restarted after a memory bomb, then queued behind other processes). A test of
the limit itself passes its own, short one."""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[JsSandbox]:
    with JsSandbox(timeout_s=GENEROUS_S, max_timeout_s=GENEROUS_S, max_memory_mb=32, max_output_bytes=100_000) as box:
        yield box
