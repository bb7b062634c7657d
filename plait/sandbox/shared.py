"""One lazily started `JsSandbox` per process, for readers outside a run (migrating stored
outputs on read): each `GET` of a run must not start its own evaluator processes. Bounded by its
pool (`workers`/`max_workers`), and so is a reader's wait for a place (`SHARED_WAIT_S`: then
`JsBusyError`), so readers queueing behind slow migrations give up instead of waiting without
end. Closed at interpreter exit or by `close_shared_sandbox()`."""

from __future__ import annotations

import atexit
import threading

from plait.sandbox.sandbox import JsSandbox

SHARED_WORKERS = 1
SHARED_MAX_WORKERS = 2
SHARED_WAIT_S = 10.0
"""The longest a reader waits for an evaluator before its read fails, saying to try again."""

_lock = threading.Lock()
_shared: JsSandbox | None = None


def shared_sandbox() -> JsSandbox:
    """The process's shared sandbox, started on first use (its processes start on first evaluation)."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = JsSandbox(workers=SHARED_WORKERS, max_workers=SHARED_MAX_WORKERS, wait_s=SHARED_WAIT_S)
            atexit.register(close_shared_sandbox)
        return _shared


def close_shared_sandbox() -> None:
    """Close the shared sandbox (a later `shared_sandbox()` starts a new one)."""
    global _shared
    with _lock:
        sandbox, _shared = _shared, None
    if sandbox is not None:
        sandbox.close()
