"""Waiting for a condition, and "skip here, fail in CI" for a test whose service is missing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

T = TypeVar("T")

CI_ENV = "CI"
"""Set (to anything but empty) on CI machines, where every service a test needs is provided."""


def skip_or_fail(reason: str, *, in_ci: str | None = None) -> NoReturn:
    """Skip the calling test, saying why, when a service it needs (a database, a broker, a
    browser, bubblewrap) is missing here; fail it instead when `CI` is set, because there the
    service is part of the job and a skip would hide that the test never ran. `in_ci` is added
    to the failure, e.g. what should have provided the service. Needs pytest."""
    import pytest

    if os.environ.get(CI_ENV):
        pytest.fail(f"{reason} ({in_ci})" if in_ci else reason)
    pytest.skip(reason)


def wait_for(
    condition: Callable[[], T | None], *, timeout: float = 20.0, what: str = "condition", interval_s: float = 0.02
) -> T:
    """Poll `condition` until it returns something truthy, and return that. After `timeout`
    seconds an AssertionError names `what`: the bound is for a test that would otherwise hang,
    so make it generous; how fast the condition came true is not measured here."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval_s)
