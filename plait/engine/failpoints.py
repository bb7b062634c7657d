"""Crash injection for durability tests: `PLAIT_FAILPOINTS=before_commit:node_a,after_commit:node_b#3`.

At a named point for a named node the process dies at once (`os._exit`, like SIGKILL: no
cleanup, no flush), so tests can kill a run exactly "during a commit" and prove that
`plait resume` loses nothing committed and re-executes nothing completed. The points:
`execute` (as the node starts executing: a node that takes its process down), `before_commit`
and `after_commit` (around the commit of its result), and `embedded` (an INDEX node, after
each batch of vectors it kept). `#N` fires at the
N-th time the point is reached for that node id in this process (the node of the third MAP
item, of the third LOOP iteration); without it, the first time.
"""

from __future__ import annotations

import os
from collections import Counter

ENV = "PLAIT_FAILPOINTS"
_ARMED: dict[str, int] = {}
for _spec in os.environ.get(ENV, "").split(","):
    _name, _, _nth = _spec.strip().partition("#")
    if _name:
        _ARMED[_name] = int(_nth) if _nth.isdigit() else 1
_reached: Counter[str] = Counter()


def failpoint(point: str, node_id: str) -> None:
    """End the process at once (status 137, like SIGKILL) when `PLAIT_FAILPOINTS` (read at
    import) names `point:node_id` and this is the time it names; otherwise do nothing."""
    if not _ARMED:
        return
    name = f"{point}:{node_id}"
    nth = _ARMED.get(name)
    if nth is not None:
        _reached[name] += 1
        if _reached[name] == nth:
            os._exit(137)
