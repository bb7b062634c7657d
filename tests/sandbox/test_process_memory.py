"""The memory limit holds for everything an evaluation allocates (ArrayBuffers included), and one
evaluation never fails because of memory another left behind."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from plait.sandbox import JsMemoryError, ProcessSandbox, SandboxError

LIMIT_MB = 64
SLACK_MB = 32  # the child's own room above the limit (plait/sandbox/_worker.py)
MB = 1024 * 1024

BUFFERS = {
    "typed arrays x8": "(() => { const a = []; for (let i = 0; i < 8; i++) a.push(new Uint8Array(2 ** 28)); "
    "return a.length })()",
    "small typed arrays": "(() => { const a = []; for (let i = 0; i < 64; i++) a.push(new Float64Array(2 ** 19)); "
    "return a.length })()",
    "ArrayBuffer": "(() => { const a = []; for (let i = 0; i < 16; i++) a.push(new ArrayBuffer(2 ** 24)); "
    "return a.length })()",
    "Uint8Array.from": "(() => { const a = []; const src = new Uint8Array(2 ** 20); "
    "for (let i = 0; i < 256; i++) a.push(Uint8Array.from(src)); return a.length })()",
    "slice": "(() => { const a = []; const src = new Uint8Array(2 ** 24); "
    "for (let i = 0; i < 16; i++) a.push(src.slice()); return a.length })()",
    "resizable resize": "(() => { const b = new ArrayBuffer(1, {maxByteLength: 2 ** 30}); b.resize(2 ** 30); "
    "return b.byteLength })()",
    "transfer": "(() => { const b = new ArrayBuffer(2 ** 20); return b.transfer(2 ** 30).byteLength })()",
}
STRINGS = {
    "repeat": "'x'.repeat(2 ** 28).indexOf('y')",  # indexOf flattens the rope repeat builds
    "padEnd": "''.padEnd(2 ** 28, 'ab').indexOf('y')",
    "join": "new Array(2 ** 16).fill('y'.repeat(2 ** 12)).join('').length",
    "split": "'x'.repeat(2 ** 28).split('')",
}


@pytest.fixture(scope="module")
def box() -> Iterator[ProcessSandbox]:
    with ProcessSandbox(timeout_s=10, max_memory_mb=LIMIT_MB, workers=1, max_workers=1) as sandbox:
        yield sandbox


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        match = re.search(rf"^{key}:\s+(\d+) kB", handle.read(), re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


def _assert_peak_under_limit(box: ProcessSandbox, expression: str, error: type[SandboxError]) -> None:
    assert box.evaluate("'warm'", {}) == "warm"
    (pid,) = box.child_pids()
    baseline = _status(pid, "VmRSS")
    with pytest.raises(error):
        box.evaluate(expression, {})
    if box.child_pids() == [pid]:  # the child survived: its peak is readable
        peak = _status(pid, "VmHWM")
        assert peak - baseline < (LIMIT_MB + SLACK_MB + 16) * MB, f"the child peaked at {(peak - baseline) / MB:.0f} MB"
    assert box.evaluate("input.tag", {"input": {"tag": "next"}}) == "next"


@pytest.mark.parametrize("expression", list(BUFFERS.values()), ids=list(BUFFERS))
def test_array_buffer_memory_counts_against_the_limit(box: ProcessSandbox, expression: str) -> None:
    _assert_peak_under_limit(box, expression, JsMemoryError)


@pytest.mark.parametrize("expression", list(STRINGS.values()), ids=list(STRINGS))
def test_large_strings_stay_under_the_limit(box: ProcessSandbox, expression: str) -> None:
    _assert_peak_under_limit(box, expression, SandboxError)  # memory, or V8's own string length limit


def test_the_memory_error_names_the_limit(box: ProcessSandbox) -> None:
    with pytest.raises(JsMemoryError, match=f"memory limit of {LIMIT_MB} MB"):
        box.evaluate(BUFFERS["typed arrays x8"], {})


def test_shared_memory_and_webassembly_stay_unreachable(box: ProcessSandbox) -> None:
    assert box.evaluate("[typeof SharedArrayBuffer, typeof WebAssembly, typeof Atomics]", {}) == ["undefined"] * 3
    for expression in ("new SharedArrayBuffer(2 ** 30)", "new WebAssembly.Memory({initial: 1, maximum: 65536})"):
        with pytest.raises(SandboxError, match="ReferenceError"):
            box.evaluate(expression, {})


def test_memory_left_behind_never_fails_the_next_evaluation(box: ProcessSandbox) -> None:
    """Each evaluation allocates up to ~40 MB (under the limit) and drops it: without recycling,
    the garbage of earlier ones would push later ones over."""
    hog = (
        "(() => { const a = []; for (let i = 0; i < 10; i++) a.push(new Uint8Array(4 * 2 ** 20).fill(1)); return 1 })()"
    )
    for _ in range(12):
        assert box.evaluate(hog, {}) == 1
        assert box.evaluate("({ok: true})", {}) == {"ok": True}


def test_many_evaluations_with_large_scopes_in_one_child(box: ProcessSandbox) -> None:
    scope = {"input": {"rows": [{"id": i, "text": "z" * 30} for i in range(800)]}}  # ~40 KB of JSON
    for n in range(1_000):
        assert box.evaluate("input.rows.length + nodes", {**scope, "nodes": n}) == 800 + n
