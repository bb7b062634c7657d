"""How `plait serve` is configured: where it listens, which store and models it uses, and the
limits it enforces. One frozen value, built by the CLI (or a test) and handed to `create_app`."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 60.0


def is_loopback(host: str) -> bool:
    """Only this machine can connect (127.0.0.0/8, ::1, localhost); `0.0.0.0` is every interface."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything `create_app` needs to know. A server bound beyond loopback always asks for a
    token (`auth_required`)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    db: str | None = None
    """Database URL (None: $PLAIT_DB, else the store found from the current folder, `default_store`)."""
    config: str | None = None
    """plait.toml (None: $PLAIT_CONFIG, else ./plait.toml when it exists)."""
    llm: str | None = None
    """`--llm` spec (`scripted:FILE`, `local`); None: from the config, else the embedded model."""
    require_auth: bool = False
    """Ask for a bearer token on loopback too (beyond loopback it is always asked for)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the API from a browser, state-changing requests included; empty:
    no CORS headers at all, and only the server's own pages may change state."""
    allowed_hosts: tuple[str, ...] = ()
    """`Host` names this server answers besides loopback names (and, beyond loopback, any IP
    address); `*`: any (a proxy in front checks it). See plait/api/browser.py."""
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    """A request's headers must arrive whole within this long (`plait serve` only)."""
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    """A request's body must arrive whole within this long after its headers (`plait serve` only)."""
    resume_on_start: bool = True
    """Continue the runs a stopped or crashed process left `running`/`pending` (see executor.py)."""
    cache: bool = True
    """Answer identical model requests from the response cache."""
    queue: str | None = None
    """A broker URL: runs execute on `plait worker`s (None: `[workers] broker`, else here; `none`: here)."""
    schedules: bool = True
    """Fire the cron schedules that are due (`plait.runs.schedules`); with several servers on one
    database each firing still happens once."""

    @property
    def auth_required(self) -> bool:
        """Whether requests need a bearer token: asked for, or the server listens beyond loopback."""
        return self.require_auth or not is_loopback(self.host)
