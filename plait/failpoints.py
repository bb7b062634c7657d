"""Crash injection for durability tests: `PLAIT_FAILPOINTS=before_commit:node_a,mid_commit:node_b#3`.

At a named point for a named node the process dies at once (`os._exit`, like SIGKILL: no
cleanup, no flush), so tests can kill a run exactly "during a commit" and prove that
`plait resume` loses nothing committed and re-executes nothing completed. It sits below every
layer because the points are in the engine and in the store. The points:

- `execute`: as the node starts executing (a node that takes its process down);
- `before_commit` and `after_commit`: around the commit of its result (the engine);
- `before_claim`: just before the INSERT of its claim row, inside the claim's transaction (the
  store). A root node's claim is in the transaction that creates the run; any other node's is in
  the transaction of its predecessor's result (its successors' claims are written with it, one
  unit), so dying there rolls the predecessor's result back too, and its call is paid again;
- `mid_commit`: inside the transaction that commits its result, every write sent, before COMMIT
  (the store): nothing of it is kept;
- `embedded`: an INDEX node, after each batch of vectors it kept.

`#N` fires at the N-th time the point is reached for that node id in this process (the node of
the third MAP item, of the third LOOP iteration); without it, the first time. The variable is
read when a point is first reached, not at import, so that a process forked from one that had
loaded Plait already (the tests' warm start server) obeys its own environment.
"""

from __future__ import annotations

import os
from collections import Counter

ENV = "PLAIT_FAILPOINTS"
_armed: dict[str, int] | None = None
"""`point:node_id` -> the time it fires; None until first asked."""
_reached: Counter[str] = Counter()


def _points() -> dict[str, int]:
    global _armed
    if _armed is None:
        _armed = {}
        for spec in os.environ.get(ENV, "").split(","):
            name, _, nth = spec.strip().partition("#")
            if name:
                _armed[name] = int(nth) if nth.isdigit() else 1
    return _armed


def armed() -> bool:
    """Whether any point is armed: a caller that must look for node ids first (a transaction's
    writes) does nothing when none is."""
    return bool(_armed if _armed is not None else _points())


def failpoint(point: str, node_id: str) -> None:
    """End the process at once (status 137, like SIGKILL) when `PLAIT_FAILPOINTS` names
    `point:node_id` and this is the time it names; otherwise do nothing."""
    points = _armed if _armed is not None else _points()
    if not points:
        return
    name = f"{point}:{node_id}"
    nth = points.get(name)
    if nth is not None:
        _reached[name] += 1
        if _reached[name] == nth:
            os._exit(137)
