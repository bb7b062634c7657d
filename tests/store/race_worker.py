"""A second (third, ...) process for the store's concurrency tests; prints one JSON line.

    python race_worker.py open  URL GATE                 → Store(URL) once the gate opens, print the revision
    python race_worker.py claim URL GATE RUN_ID OWNER N  → claim n0..n{N-1} (finishing each win)

GATE is a directory: each worker, once its slow start-up is done (imports, connecting), creates
`ready-<pid>` there and waits for `go` to appear, so their first statements really do collide.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def _wait(gate: Path) -> None:
    (gate / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while not (gate / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the gate never opened")
        time.sleep(0.001)


def main(argv: list[str]) -> None:
    mode, url, gate = argv[0], argv[1], Path(argv[2])
    from plait.model.enums import NodeStatus
    from plait.store import Store
    from plait.store.db import current_revision

    if mode == "open":
        _wait(gate)
        store = Store(url)
        print(json.dumps({"revision": current_revision(store.db)}))
        store.close()
        return
    run_id, owner, count = argv[3], argv[4], int(argv[5])
    store = Store(url)
    won, finished = [], []
    _wait(gate)
    for i in range(count):
        claim = store.runs.claim_node(run_id, f"n{i}", 0, owner)
        if claim is not None:
            won.append(claim.node_id)
            if store.runs.finish_node(claim.id, owner, status=NodeStatus.COMPLETED, output={"by": owner, "i": i}):
                finished.append(claim.node_id)
    store.close()
    print(json.dumps({"won": won, "finished": finished}))


if __name__ == "__main__":
    main(sys.argv[1:])
