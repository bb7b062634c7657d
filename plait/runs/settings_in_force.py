"""The settings in force in a process that executes runs (the HTTP server, a worker), following
the store: a change made anywhere applies here without a restart.

`SettingsInForce` holds the settings of the newest revision it has seen. It looks at the store's
revision (one cheap query) when a run starts (`check`, through `RunEngines`' `before_run`) and,
before a model call, when `interval_s` has passed since it last looked (`due`); a server's own
change is taken up at once (`adopt`). While it follows, every table read through
`plait.config` (`tools_settings`, `sandbox_settings`, `context_settings`, ...) is the followed
one, and its `FollowingProvider` (`plait.llm.following`) sends each new model call to a pool
built from the newest settings, while calls already running finish on theirs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from plait.config import PlaitConfig, ResourcesConfig, follow_settings, followed
from plait.errors import PlaitError
from plait.llm.following import FollowingProvider
from plait.llm.provider import Provider
from plait.runs.settings import Effective, base_config, effective
from plait.store import Store
from plait.store.faults import transient

CHECK_S = 1.0
"""How long a process goes, at most, between two looks at the settings' revision before a
model call (a run's start always looks)."""
log = logging.getLogger("plait.runs")


class SettingsInForce:
    """The settings in force in this process, following the store's revision (module docstring).
    Safe to call from any thread; `current`, `config`, `due` and `resources` do no I/O."""

    def __init__(
        self,
        store: Store,
        config_path: str | None,
        *,
        interval_s: float = CHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`config_path`: plait.toml (None: `$PLAIT_CONFIG`, else `./plait.toml`, else the
        built-in configuration), read once: the deployer's part changes with a restart."""
        self.store = store
        self.config_path = config_path
        self.base = base_config(config_path)
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._effective = self._read()
        self._looked = clock()

    def current(self) -> tuple[int, Effective]:
        """The revision in force here and its settings."""
        held = self._effective
        return held.revision, held

    def config(self) -> PlaitConfig:
        """The configuration in force here (plait.toml with the stored settings over it)."""
        return self._effective.config

    def resources(self) -> ResourcesConfig:
        """`[resources]` in force (the resource gate reads it at each decision)."""
        return self._effective.config.resources

    def due(self) -> bool:
        """Whether `interval_s` has passed since the revision was last looked at."""
        return self._clock() - self._looked >= self.interval_s

    def check(self) -> None:
        """Look at the store's revision now; take up the settings of a newer one. A database
        that cannot answer leaves the settings as they are (the next look tries again)."""
        with self._lock:
            self._looked = self._clock()
            try:
                revision = self.store.settings_changes.revision()
                if revision != self._effective.revision:
                    self._effective = self._read()
            except Exception as exc:
                if not (isinstance(exc, PlaitError) or transient(exc)):
                    raise
                log.warning("the settings' revision could not be read (%s); keeping revision %d", exc,
                            self._effective.revision)  # fmt: skip

    def adopt(self, settings: Effective) -> None:
        """Take up settings this process has just recorded (a server's own change), unless newer
        ones are held already."""
        with self._lock:
            if settings.revision > self._effective.revision:
                self._effective = settings
            self._looked = self._clock()

    def _read(self) -> Effective:
        found = effective(self.store, self.config_path, base=self.base, with_sources=False)
        if found.problem is not None:
            log.warning("%s; plait.toml alone is in force", found.problem)
        return found

    def follow(self) -> Callable[[], None]:
        """Make these the settings `plait.config` gives this process from now on; the returned
        call stops that (if nothing else took over meanwhile)."""
        follow_settings(self.config)
        mine = followed()

        def stop() -> None:
            if followed() == mine:
                follow_settings(None)

        return stop


def following_provider(settings: SettingsInForce) -> FollowingProvider[Effective]:
    """The provider of a process whose settings follow the store: a pool of the settings in force
    (without plait.toml, and until the settings change, the model the process would use anyway)."""
    return FollowingProvider(settings, _provider_of)


def _provider_of(settings: Effective) -> Provider | None:
    """The provider a revision's settings make."""
    if settings.base.source is None and not settings.overlay.data():
        from plait.llm import local

        return local.LocalProvider() if local.available() else None  # as without a plait.toml
    from plait.llm.pool import ProviderPool
    from plait.llm.shared_limits import shared_limits_for

    workers = settings.config.workers
    return ProviderPool(settings.config, shared=shared_limits_for(workers.broker, workers.shared_limits))
