"""The frames between Plait and an evaluator process (`_process.py` writes requests and reads
replies, `_child.py` the other way round), over the child's stdin and stdout.

A request is one header and three byte strings:

    REQUEST  id, op, limit (s), max_output (chars), len a, len b, len c     then a | b | c

- `EVALUATE`/`CALL`: a = the source, b = the scope's names joined by commas, c = the JSON
  arguments;
- `SCRIPT`: a = the prompt script's function source, b = its bridge's name, c = the context's
  memory limit in bytes (decimal);
- `ANSWERS`: a = the host's answers to a script's requests, `[[request id, ok, text], ...]`;
- `STOP`: ends the script in progress (its time is up, or it was cancelled).

A reply is one header and one byte string, `REPLY id, status, len` then the body; its id repeats
the request's (a reply whose id differs is never used). Text is UTF-8 (`surrogatepass`: a lone
surrogate in a thrown message survives the trip). Frames are written whole, so one write and
one read carry a small evaluation each way.
"""

from __future__ import annotations

import struct

REQUEST = struct.Struct("<IBdIIII")
REPLY = struct.Struct("<IBI")

# ops
EVALUATE = 1
CALL = 2
SCRIPT = 3
ANSWERS = 4
STOP = 5

# statuses
READY = 0
"""Sent once, unasked, when the process can evaluate (its id is 0)."""
OK = 1
"""The result's JSON text."""
THROWN = 2
"""What the script threw, `{name, message, stack}` as JSON."""
TIMEOUT = 3
"""QuickJS interrupted the evaluation at its limit."""
MEMORY = 4
"""The context's memory limit was reached."""
MEMORY_NULL = 5
"""The same, seen as a thrown `null` (QuickJS could not even allocate its error)."""
FAILED = 6
"""QuickJS itself failed; the body says how."""
HOST = 7
"""A script's pending host requests and console entries, `[requests, logs]`: answers expected."""
NOTE = 8
"""The same, no answers expected: console entries on their way, or what is left at the end."""
STOPPED = 9
"""A script ended by `STOP`."""
ERROR = 10
"""The process could not do what was asked (a bug, or a limit of the process); the body says what."""

TEXT = "surrogatepass"


def request(request_id: int, op: int, limit: float, max_output: int, a: str, b: str = "", c: str | bytes = "") -> bytes:
    """One request frame (`c` may come encoded already: a payload is encoded once)."""
    first, second = a.encode("utf-8", TEXT), b.encode("utf-8", TEXT)
    third = c if isinstance(c, bytes) else c.encode("utf-8", TEXT)
    head = REQUEST.pack(request_id, op, limit, max_output, len(first), len(second), len(third))
    return b"".join((head, first, second, third))


def reply(request_id: int, status: int, body: bytes = b"") -> bytes:
    """One reply frame."""
    return REPLY.pack(request_id, status, len(body)) + body
