"""One error shape for every failure: `{"error": {"code", "message", "details", "hint"}}`.

Domain errors keep no HTTP knowledge: every one is a `PlaitError`, whose `kind` (conflict /
invalid / not found / forbidden) decides the status code here, in one table, and whose `code`
is the body's `code`, so a route never builds an error body by hand. FastAPI's own errors
(validation, unknown route, wrong method) are reshaped the same way, so clients parse one
format.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from plait.api.schemas import VALUE_LIMIT
from plait.api.wording import for_http
from plait.compile import GraphInvalid
from plait.errors import PlaitError, Refusal
from plait.evolve.migration_errors import MigrationError
from plait.model.limits import MAX_DEPTH, MAX_INT_DIGITS

log = logging.getLogger("plait.api")

_REFUSAL_STATUS = {Refusal.CONFLICT: 409, Refusal.INVALID: 422, Refusal.NOT_FOUND: 404, Refusal.FORBIDDEN: 403}
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid",
    503: "unavailable",
}


class ApiError(Exception):
    """An error a route raises directly, already with its status and code."""

    def __init__(
        self, status: int, code: str, message: str, *, hint: str | None = None, details: list[Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.details = details or []


def error_body(
    code: str, message: str, details: list[Any] | None = None, hint: str | None = None, hidden: Iterable[str] = ()
) -> dict[str, Any]:
    """The body of an error, in HTTP terms (see wording.py), without any of `hidden`."""
    hidden = tuple(hidden)
    return {
        "error": {
            "code": code,
            "message": for_http(message, hidden),
            "details": [_worded(d, hidden) for d in details or []],
            "hint": for_http(hint, hidden) if hint is not None else None,
        }
    }


def _worded(detail: Any, hidden: tuple[str, ...]) -> Any:
    """A `details` entry with its texts (a diagnostic's message and hint) in HTTP terms."""
    if isinstance(detail, str):
        return for_http(detail, hidden)
    if isinstance(detail, dict):
        return {k: for_http(v, hidden) if isinstance(v, str) and k != "where" else v for k, v in detail.items()}
    return detail


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[Any] | None = None,
    hint: str | None = None,
    headers: Mapping[str, str] | None = None,
    hidden: Iterable[str] = (),
) -> JSONResponse:
    """An error in the one shape every route answers with; nothing of `hidden` is in it."""
    sent = dict(headers or {})
    if status == 401:
        sent["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(code, message, details, hint, hidden), status_code=status, headers=sent or None)


def translate(exc: Exception, hidden: Iterable[str] = ()) -> JSONResponse:
    """The response for an exception a route let through (see the table in the module doc);
    nothing of `hidden` (the database's URL) is in it."""
    respond = partial(error_response, hidden=tuple(hidden))
    if isinstance(exc, ApiError):
        return respond(exc.status, exc.code, exc.message, exc.details, exc.hint)
    if isinstance(exc, GraphInvalid):
        return respond(
            422,
            "graph_invalid",
            f"the graph is not valid ({len(exc.diagnostics)} errors); nothing was stored",
            [d.to_json() for d in exc.diagnostics],
            "fix every listed problem (POST /api/graphs/validate reports the same ones)",
        )
    if isinstance(exc, MigrationError):
        return respond(409, exc.code, exc.message, [], f"{exc.hint} (?raw=true shows the originals)")
    if isinstance(exc, PlaitError):
        return respond(_REFUSAL_STATUS[exc.kind], exc.code, exc.message, list(exc.details), exc.hint)
    if isinstance(exc, DataError):
        # A value of the request the database cannot hold or compare (PostgreSQL: a NUL
        # character in a text, an integer out of range): the client's value, not a failure.
        log.info("the database refused a value: %s", exc.orig)
        return respond(
            422,
            "invalid",
            "a value in the request cannot be stored or looked up by the database",
            [str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__],
            "remove NUL characters from texts; keep numbers within 32-bit integers",
        )
    if isinstance(exc, OperationalError):
        log.warning("store unavailable: %s", exc)
        return respond(503, "store_unavailable", "the database did not answer; try again shortly")
    log.exception("internal error", exc_info=exc)
    return respond(500, "internal_error", f"internal error ({type(exc).__name__}); see the server log")


def _detail(err: Mapping[str, Any]) -> dict[str, Any]:
    """One `details` entry of a 422 `invalid_request`; a value Plait cannot store names its own
    place (`body.input.text`), which is deeper than where the body's validator sits."""
    ctx = err.get("ctx") or {}
    if err["type"] == VALUE_LIMIT and "where" in ctx:
        return {"where": ctx["where"], "problem": ctx["problem"], "type": VALUE_LIMIT}
    return {"where": ".".join(str(p) for p in err.get("loc", ())), "problem": err.get("msg", ""), "type": err["type"]}


def _unparsable(cause: BaseException) -> str:
    if isinstance(cause, RecursionError):
        return f"it is nested deeper than the limit of {MAX_DEPTH} levels"
    if "integer string conversion" in str(cause):
        return f"it holds an integer with more than {MAX_INT_DIGITS} digits"
    return str(cause)


def install(app: FastAPI, hidden: Iterable[str] = ()) -> None:
    """Route every error through `translate` and reshape FastAPI's own errors; `hidden`: texts
    no error body may contain (the database's URL and file)."""
    hidden = tuple(h for h in hidden if h)

    async def on_exception(_request: Request, exc: Exception) -> JSONResponse:
        return translate(exc, hidden)

    methods_by_path: list[tuple[re.Pattern[str], str]] = []

    def allowed(path: str) -> str | None:
        """Every method the API has at `path`. Starlette's 405 names only the methods of the
        first route matching the path, but FastAPI makes one route per method, so its `Allow`
        would omit e.g. POST /api/graphs on a DELETE /api/graphs. The document lists them all
        (the first path that matches: FastAPI declares `/api/graphs/import` before `{ref}`)."""
        if not methods_by_path:
            for template, operations in app.openapi().get("paths", {}).items():
                pattern = re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$")
                methods_by_path.append((pattern, ", ".join(sorted(m.upper() for m in operations))))
        return next((methods for pattern, methods in methods_by_path if pattern.match(path)), None)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        status = exc.status_code
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if status == 400 and isinstance(exc.__cause__, ValueError | RecursionError):
            # FastAPI answers 422 for a body that is not JSON but 400 for one that is not even
            # text (UnicodeDecodeError), nests past the parser's depth (RecursionError) or holds
            # an integer too long to convert: all the same client mistake, so all are 422.
            problem = _unparsable(exc.__cause__)
            return error_response(
                422,
                "invalid_request",
                f"the request body is not valid JSON (UTF-8): {problem}",
                [{"where": "body", "problem": problem, "type": "json_invalid"}],
                f"send a JSON document encoded in UTF-8, nested at most {MAX_DEPTH} levels",
            )
        if status == 404 and message == "Not Found":
            message = "no such route; GET /docs lists the API"
        # The headers matter: a 405 carries `Allow` (RFC 9110), a 401 `WWW-Authenticate`.
        headers = dict(exc.headers or {})
        if status == 405 and (methods := allowed(request.url.path)) is not None:
            headers["Allow"] = methods
        return error_response(status, _HTTP_CODES.get(status, "error"), message, headers=headers)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        details = [_detail(err) for err in exc.errors()]
        where = ", ".join(d["where"] for d in details[:5])
        return error_response(
            422, "invalid_request", f"the request does not match the API ({where})", details, "see /docs for the shape"
        )

    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    for kind in (ApiError, PlaitError, DataError, OperationalError):
        app.add_exception_handler(kind, on_exception)
    app.add_exception_handler(Exception, on_exception)
