"""Bad prompt scripts sent to a real server: each ends its preview with its own clear error, and
while it runs the server keeps answering (a health check during the attack answers quickly).
Ten previews at once: three run, seven are refused with 503 `sandbox_busy`, health answers."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import Api, sse_post

BAD = [
    ("syntax", "async function main( {", "syntax", "SyntaxError"),
    ("no main", "async function helper() { return 'x' }", "no_main", "defines no `async function main()`"),
    ("not async", "function main() { return 'x' }", "not_async", "must be an async function"),
    ("throw", "async function main() { throw new Error('boom') }", "thrown", "Error: boom"),
    ("non-string", "async function main() { return {a: 1} }", "not_string", "returned a dict"),
    ("over-sized", "async function main() { return 'x'.repeat(70000) }", "too_large", "over the limit of 65536"),
    ("sync loop", "async function main() { while (true) {} }", "timeout", "time limit of 5 s"),
    ("async loop", "async function main() { while (true) await 0 }", "timeout", "time limit of 5 s"),
    ("memory bomb", "async function main() { const a = []; for (;;) a.push(new ArrayBuffer(1 << 20)) }", "memory",
     "MB of memory"),
    ("host-call flood", "async function main() { for (;;) await getVar('input.x') }", "host_calls",
     "more than 20 host calls"),
    ("route off the list", "async function main() { return await readRoute('/api/tokens') }", "thrown",
     "is not allowed"),
    ("missing path", "async function main() { return await getVar('input.nowhere') }", "thrown",
     "no value at 'input.nowhere'"),
]  # fmt: skip


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """SQLite only: what is tested here is the sandbox and the stream, the same on every store."""
    return f"sqlite:///{tmp_path / 'plait.db'}"


@pytest.mark.parametrize(("case", "code", "kind", "says"), BAD, ids=[case for case, *_ in BAD])
def test_a_bad_script_gets_its_own_error_while_the_server_keeps_answering(
    api: Api, case: str, code: str, kind: str, says: str
) -> None:
    ended: list[list[tuple[str, dict[str, Any]]]] = []

    def attack() -> None:
        with httpx.Client(base_url=api.url, timeout=30) as client:
            ended.append(sse_post(client, "/api/templates/preview", {"script_code": code, "input": {"x": 1}})[1])

    thread = threading.Thread(target=attack)
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    health = api.client.get("/api/health", timeout=5)
    answered_in = time.monotonic() - started
    thread.join(timeout=20)
    assert health.status_code == 200
    assert answered_in < 1.0, f"health took {answered_in:.2f} s during the {case} attack"
    last, data = ended[0][-1]
    assert last == "error", ended[0]
    assert data["error"]["kind"] == kind
    assert says in data["error"]["message"]


def test_ten_previews_at_once_run_three_and_refuse_the_rest(api: Api) -> None:
    statuses: list[int] = []
    lock = threading.Lock()
    slow = {"script_code": "async function main() { for (;;) { await 0 } }"}

    def one() -> None:
        with httpx.Client(base_url=api.url, timeout=30) as client:
            status, _ = sse_post(client, "/api/templates/preview", slow)
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one) for _ in range(10)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    health = api.client.get("/api/health", timeout=5)
    for thread in threads:
        thread.join(timeout=30)
    assert health.status_code == 200
    assert sorted(statuses) == [200, 200, 200] + [503] * 7
