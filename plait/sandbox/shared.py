"""One lazily started `ProcessSandbox` per process, for readers outside a run (migrating stored
outputs on read): each `GET` of a run must not spawn its own sandbox process. Bounded by its
pool (`workers`/`max_workers`), closed at interpreter exit or by `close_shared_sandbox()`."""

from __future__ import annotations

import atexit
import threading

from plait.sandbox.process import ProcessSandbox

SHARED_WORKERS = 1
SHARED_MAX_WORKERS = 2

_lock = threading.Lock()
_shared: ProcessSandbox | None = None


def shared_sandbox() -> ProcessSandbox:
    """The process's shared sandbox, started on first use (its children start on first evaluation)."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = ProcessSandbox(workers=SHARED_WORKERS, max_workers=SHARED_MAX_WORKERS)
            atexit.register(close_shared_sandbox)
        return _shared


def close_shared_sandbox() -> None:
    """Kill the shared sandbox's children (a later `shared_sandbox()` starts a new one)."""
    global _shared
    with _lock:
        sandbox, _shared = _shared, None
    if sandbox is not None:
        sandbox.close()
