"""The `plait` command's entry point: start-up with the cyclic garbage collector paused.

Loading Plait's modules (SQLAlchemy, pydantic, typer, rich, the graph models) allocates a few
hundred thousand objects that live until the process exits; the collector walks them again
and again while they load, ~10 % of a short command's time (`bench/cli_startup.py`). So it is
paused for the first `PAUSE_S` seconds of the process, then runs as usual: a long command
(`plait run`, `plait serve`) is collected normally from then on.
"""

from __future__ import annotations

import gc
import threading

PAUSE_S = 0.5
"""Longer than any read-only command takes; short enough that what a long command allocates
before the collector resumes is of no account."""


def main() -> None:
    """`plait`: pause the collector, then load and run the command-line interface."""
    if gc.isenabled():
        gc.disable()
        resume = threading.Timer(PAUSE_S, gc.enable)
        resume.daemon = True
        resume.start()
    from plait.cli.app import main as run

    run()
