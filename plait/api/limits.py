"""The request body limit: a body over `max_bytes` is refused with 413 before it is read whole,
whether it declares its length (Content-Length) or streams it (chunked)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.api.errors import ApiError, error_response


class BodyLimit:
    """ASGI middleware: no route receives a request body over `max_bytes`; the client gets 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            "payload_too_large",
            f"the request body is over the server's limit of {self.max_bytes} bytes",
            hint="send less (graphs hold definitions, not data), or ask the server's operator for a larger body limit",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            exc = self._too_large()
            await error_response(exc.status, exc.code, exc.message, hint=exc.hint)(scope, receive, send)
            return
        received = 0
        refused = False

        async def counted() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Answer now and tell the app the client left: it stops reading, and
                    # whatever it still tries to send is dropped.
                    refused = True
                    exc = self._too_large()
                    await error_response(exc.status, exc.code, exc.message, hint=exc.hint)(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted, guarded)
