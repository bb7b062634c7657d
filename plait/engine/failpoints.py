"""Crash injection for durability tests: `PLAIT_FAILPOINTS=before_commit:node_a,after_commit:node_b`.

At a named point for a named node the process dies at once (`os._exit`, like SIGKILL: no
cleanup, no flush), so tests can kill a run exactly "during a commit" and prove that
`plait resume` loses nothing committed and re-executes nothing completed.
"""

from __future__ import annotations

import os

ENV = "PLAIT_FAILPOINTS"
_ARMED = frozenset(p.strip() for p in os.environ.get(ENV, "").split(",") if p.strip())


def failpoint(point: str, node_id: str) -> None:
    """End the process at once (status 137, like SIGKILL) when `PLAIT_FAILPOINTS` (read at
    import) names `point:node_id`; otherwise do nothing."""
    if _ARMED and f"{point}:{node_id}" in _ARMED:
        os._exit(137)
