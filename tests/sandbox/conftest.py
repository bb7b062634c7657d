"""One sandbox per test module: contexts are reused across evaluations, as the engine does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plait.sandbox import JsSandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[JsSandbox]:
    with JsSandbox(timeout_s=0.5, max_memory_mb=32, max_output_bytes=100_000) as box:
        yield box
