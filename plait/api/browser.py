"""What a web page in a browser on the same machine may make the server do.

A server bound to loopback asks for no token, so any page the browser opens could reach it:
a page on another site can send a "simple" request (a `text/plain` POST needs no CORS
preflight) that acts although its answer is never read, and a site whose name is rebound to
127.0.0.1 (DNS rebinding) can read the answers too. `BrowserGuard`, the outermost middleware,
closes both ways for every route:

- the `Host` a request names must be one of this server's: loopback names and addresses on a
  loopback bind; any IP address and loopback names beyond it (a rebound *name* is the attack,
  an address cannot be rebound); and the names the deployer allows (`--allow-host`);
- a state-changing request (POST, PUT, PATCH, DELETE) sent by a browser must come from the
  server's own origin or one the deployer allows (`--cors-origin`). Browsers send `Origin`
  with every such request; one without it is trusted only when `Sec-Fetch-Site` (sent by
  browsers, never forged by a page) does not say another site sent it. The CLI, curl and
  other programs send neither header and are not affected;
- every response carries a Content-Security-Policy, `X-Frame-Options: DENY`, `nosniff`, a
  Referrer-Policy and a Cross-Origin-Resource-Policy, and a redirect's `Location` is relative:
  it never repeats the `Host` a request named.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.api.errors import error_response
from plait.api.settings import ServerSettings, is_loopback

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods that act; GET, HEAD and OPTIONS only read (no route changes state on them)."""
FOREIGN_FETCH = frozenset({b"cross-site", b"same-site"})
"""`Sec-Fetch-Site` values of a request another site's page made."""

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every response: the workbench's bundle loads its scripts,
styles and layout worker from this server and runs no inline script and no `eval`; no page
may frame any of it. Inline styles are allowed because the code editor (CodeMirror) writes its
theme into a `<style>` element and sets `style` attributes; a style can still load nothing
from elsewhere (images, fonts and style sheets come from this server only), so it cannot send
anything out."""
DOCS_PATHS = frozenset({"/docs"})
"""Pages whose HTML (Swagger UI's, from fastapi-offline) starts the UI with an inline script:
their policy allows exactly that script, by its hash."""
HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)
_POLICY = POLICY.encode()


@dataclass(frozen=True, slots=True)
class BrowserPolicy:
    """Which `Host` names and which browser origins this server answers."""

    loopback_bind: bool
    hosts: frozenset[str]
    """Names the deployer allows besides the built-in ones (lower case, no port)."""
    any_host: bool
    """`--allow-host '*'`: a proxy in front checks the Host itself."""
    origins: frozenset[str]
    """Foreign origins allowed to call the API (lower case, no trailing slash)."""

    @classmethod
    def of(cls, settings: ServerSettings) -> BrowserPolicy:
        hosts = frozenset(h.strip().lower().rstrip(".") for h in settings.allowed_hosts)
        return cls(
            loopback_bind=is_loopback(settings.host),
            hosts=hosts - {"*"},
            any_host="*" in hosts,
            origins=frozenset(_origin(o) for o in settings.cors_origins),
        )

    def host_allowed(self, host: str) -> bool:
        """Whether `host` (a `Host` header: a name or an address, maybe with a port) is this server."""
        name = _host_name(host)
        if self.any_host or name in self.hosts or name == "localhost" or name.endswith(".localhost"):
            return True  # browsers resolve *.localhost to loopback themselves: it cannot be rebound
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or not self.loopback_bind

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Whether a page of `origin` may change state on the server a request named `host` reached."""
        origin = _origin(origin)
        own = host.strip().lower()
        return origin in (f"http://{own}", f"https://{own}") or origin in self.origins


class BrowserGuard:
    """ASGI middleware applying a `BrowserPolicy` to every HTTP request (see the module doc)."""

    def __init__(self, app: ASGIApp, policy: BrowserPolicy) -> None:
        self.app = app
        self.policy = policy
        self._hosts: dict[str, bool] = {}
        """`host_allowed` by `Host` header: clients name a handful, and parsing an address costs."""

    def _host_allowed(self, host: str) -> bool:
        allowed = self._hosts.get(host)
        if allowed is None:
            allowed = self.policy.host_allowed(host)
            if len(self._hosts) < 1024:  # a client inventing names gets no memory of them
                self._hosts[host] = allowed
        return allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        if host and not self._host_allowed(host):
            await _refuse(scope, receive, send, 400, "host_not_allowed", *_foreign_host(host))
            return
        if scope["method"] in STATE_CHANGING:
            refusal = self._foreign_origin(headers, host)
            if refusal is not None:
                await _refuse(scope, receive, send, 403, "cross_origin_refused", *refusal)
                return
        if scope["path"] in DOCS_PATHS:
            await self.app(scope, receive, _HashedInlineScripts(send))
            return
        await self.app(scope, receive, _secured(send))

    def _foreign_origin(self, headers: dict[bytes, bytes], host: str) -> tuple[str, str] | None:
        """Why a state-changing request must be refused (message, hint), or None when it may act."""
        origin = headers.get(b"origin")
        if origin is not None:
            text = origin.decode("latin-1")
            if self.policy.origin_allowed(text, host):
                return None
            return (
                f"this server does not act on requests sent by pages of another origin ({text or 'none'})",
                _ORIGIN_HINT,
            )
        if headers.get(b"sec-fetch-site", b"").lower() in FOREIGN_FETCH:
            return ("this server does not act on requests another site's page sent", _ORIGIN_HINT)
        return None


_ORIGIN_HINT = (
    "use the workbench this server serves itself, or call the API from a program (it sends no Origin); "
    "a page of another origin needs that origin allowed by the server's operator"
)


def _foreign_host(host: str) -> tuple[str, str]:
    return (
        f"this server does not answer to the name '{_host_name(host)}' (a site whose name now points at "
        "this machine could read it)",
        "connect with the address or name the server was started for (127.0.0.1 or localhost on this "
        "machine), or ask the server's operator to allow that name",
    )


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str, hint: str) -> None:
    await error_response(status, code, message, hint=hint)(scope, receive, _secured(send))


def _secured(send: Send) -> Send:
    """`send` with the security headers added to the response's start (and a relative `Location`)."""

    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": _with_headers(message.get("headers", ()), _POLICY)}
        await send(message)

    return secured


class _HashedInlineScripts:
    """Buffers one HTML page and sends it with a policy that allows its own inline scripts, by hash."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None
        self._body: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            return
        if message["type"] != "http.response.body" or self._start is None:
            await self._send(message)
            return
        self._body.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(self._body)
        policy = _docs_policy(_INLINE_SCRIPT.findall(body))
        await self._send({**self._start, "headers": _with_headers(self._start.get("headers", ()), policy)})
        await self._send({"type": "http.response.body", "body": body})


def _docs_policy(scripts: Iterable[bytes]) -> bytes:
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in scripts)
    return POLICY.replace("script-src 'self'", f"script-src 'self' {hashes}").encode()


def _with_headers(headers: Iterable[tuple[bytes, bytes]], policy: bytes) -> list[tuple[bytes, bytes]]:
    """`headers` (a redirect's `Location` made relative) and the security headers they lack."""
    kept = [(k, _relative(v) if k.lower() == b"location" else v) for k, v in headers]
    present = {k.lower() for k, _ in kept}
    return kept + [(k, v) for k, v in ((b"content-security-policy", policy), *HEADERS) if k not in present]


def _relative(location: bytes) -> bytes:
    """A redirect's target without scheme and host: where it goes never depends on the `Host`
    header a client sent (Starlette builds the trailing-slash redirect from it)."""
    found = re.match(rb"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*(.*)$", location)
    if found is None:
        return location
    return b"/" + found.group(1).lstrip(b"/\\")  # one slash: `//name` would leave for another host


def _host_name(host: str) -> str:
    """The name or address in a `Host` header, without its port, brackets and final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _origin(origin: str) -> str:
    return origin.strip().lower().rstrip("/")
