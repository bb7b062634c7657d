"""How many prompt scripts the server runs at once, and one preview per editor session.

Previews and generations each have their own number of places (3 and 2 by default). A request
beyond them is refused at once with 503 `sandbox_busy`, never queued: the editor shows the
refusal and the person tries again. A newer preview from the same editor session cancels the
older one (its script stops at its next await; its stream ends with a `cancelled` error); the
same goes for generations (the older one's model call is stopped).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from plait.api.errors import ApiError


@dataclass
class Place:
    """One place held by one script: `cancel` stops it; `release` gives the place back (once)."""

    slots: ScriptSlots
    kind: str
    session: str | None
    cancel: threading.Event = field(default_factory=threading.Event)
    released: bool = False
    on_stop: Callable[[], None] | None = None
    """Called (from any thread) when the place is stopped: what must stop besides the script."""

    def stop(self) -> None:
        """Stop what holds the place: its script at its next await, and whatever `on_stop` ends."""
        self.cancel.set()
        if self.on_stop is not None:
            self.on_stop()

    def release(self) -> None:
        self.slots._release(self)


class ScriptSlots:
    """The places for previews and generations, and the running preview of each session."""

    def __init__(self, previews: int = 3, generations: int = 2):
        self.limits = {"preview": previews, "generate": generations}
        self._busy = {"preview": 0, "generate": 0}
        self._sessions: dict[tuple[str, str], Place] = {}
        self._lock = threading.Lock()

    def take(self, kind: str, session: str | None = None) -> Place:
        """A place of `kind`; 503 `sandbox_busy` when every one is taken. The session's older
        script of that kind, if one runs, is cancelled."""
        with self._lock:
            older = self._sessions.get((kind, session)) if session is not None else None
            if older is not None:  # cancelled even when no place is free: it frees its place soon
                older.stop()
            if self._busy[kind] >= self.limits[kind]:
                raise ApiError(
                    503,
                    "sandbox_busy",
                    f"{self._busy[kind]} {kind}s are running, the most this server runs at once",
                    hint="try again in a moment",
                )
            self._busy[kind] += 1
            place = Place(self, kind, session)
            if session is not None:
                self._sessions[(kind, session)] = place
            return place

    def _release(self, place: Place) -> None:
        with self._lock:
            if place.released:
                return
            place.released = True
            self._busy[place.kind] -= 1
            key = (place.kind, place.session or "")
            if place.session is not None and self._sessions.get(key) is place:
                del self._sessions[key]
