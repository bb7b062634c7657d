"""What every Server-Sent Events stream of the API shares: the keep-alive period, and how a
client's `Last-Event-ID` is declared and read (a run's events, a chat session's, an evaluation's)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header

from plait.api.errors import ApiError

PING_S = 15
MAX_EVENT_ID = 2**63 - 1
"""The largest Last-Event-ID accepted (no stream numbers this many events)."""


LastEventId = Annotated[
    str | None, Header(description=f"Resume after this event id (a whole number, 0 to {MAX_EVENT_ID}).")
]
"""The `Last-Event-ID` header of a stream's request, as every stream declares it."""


def parse_last_event_id(value: str | None) -> int:
    """An id a stream could have sent: digits only, at most `MAX_EVENT_ID` (a longer number
    is no id of ours, and converting thousands of digits is work a client must not impose)."""
    text = (value or "").strip()
    if not text:
        return 0
    if len(text) > len(str(MAX_EVENT_ID)) or not text.isascii() or not text.isdigit() or int(text) > MAX_EVENT_ID:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ApiError(
            422,
            "invalid_request",
            f"Last-Event-ID must be an event id this stream sent (a whole number from 0 to {MAX_EVENT_ID}), "
            f"not {shown!r}",
            hint="omit it to receive the stream from its start",
        )
    return int(text)
