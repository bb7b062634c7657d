"""The garbage collector tuned for a process running an engine (see `tune_collector`)."""

from __future__ import annotations

import atexit
import gc

_startup_frozen = False


GC_THRESHOLDS = (10_000, 20, 100)
"""The collector's thresholds in a process running an engine (raised only, never lowered)."""


def tune_collector() -> None:
    """Tune the garbage collector for an engine, once per process.

    With hundreds of runs in flight, objects survive the young generations and full
    collections follow; each walks every object in the process and stops the event loop.
    Two measures (their effect is measured in docs/performance.md, "Run 6"):
    - everything alive when the first engine is built (modules, models, compiled graphs) moves
      out of the collector's reach (`gc.freeze`), so full collections walk only the runs' state;
    - the thresholds are raised to `GC_THRESHOLDS`: a young collection every 10,000
      allocations instead of 700, so a node's short-lived objects die before they are promoted,
      and a full one after 100 middle ones instead of 10, whose pauses found no garbage.
      Cycles are still collected, later.
    Frozen objects are still freed by reference counting; cycles among them wait for the exit.
    """
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.freeze()
        gc.set_threshold(*(max(now, tuned) for now, tuned in zip(gc.get_threshold(), GC_THRESHOLDS, strict=True)))
        atexit.register(_thaw)


def _thaw() -> None:
    """At exit, while modules are intact: collect what freezing kept (finalizers of native
    objects must not run during interpreter teardown)."""
    gc.unfreeze()
    gc.collect()
