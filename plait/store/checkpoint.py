"""WAL checkpoints on a background thread, so that the engine's commits never do them.

In WAL mode SQLite copies the log back into the database file (a *checkpoint*, with an fsync)
in whichever connection's COMMIT pushes the log past 1,000 pages. Under load that is an
engine commit on the event loop: a 4-8 ms stall every second or so, during which no model
call can start. A thread that checkpoints every 100 ms keeps the log short, so the commits'
own threshold is never reached (it stays as a safety net). `PASSIVE` never waits for, or
blocks, readers and writers; a checkpoint that finds the log busy just tries again next time.
The sqlite3 module releases the GIL while SQLite works, so the event loop keeps running.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

from sqlalchemy import Engine

INTERVAL_S = 0.1


class Checkpointer:
    """Runs `PRAGMA wal_checkpoint(PASSIVE)` every `interval_s` until `close()`."""

    def __init__(self, engine: Engine, interval_s: float = INTERVAL_S) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="plait-wal-checkpoint", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:  # a finalizer may run on any thread
            self._thread.join()

    def _loop(self) -> None:
        connection = None
        try:
            while not self._stop.wait(self._interval_s):
                if connection is None:
                    connection = self._engine.raw_connection()
                raw = connection.driver_connection
                assert isinstance(raw, sqlite3.Connection)
                # busy (another process checkpoints) or locked: the next round catches up
                with contextlib.suppress(sqlite3.Error):
                    raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            if connection is not None:
                connection.close()
