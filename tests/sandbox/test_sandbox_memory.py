"""The memory limit holds for everything an evaluation allocates (ArrayBuffers included), and one
evaluation never fails because of memory another left behind.

The peak is read from the evaluator process that evaluates the expression: its resident memory
may not grow by much more than the limit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from plait.sandbox import JsMemoryError, JsSandbox, SandboxError

LIMIT_MB = 64
SLACK_MB = 24  # the child's own work beyond the context: the result, Python's allocator

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
    "repeat": "'x'.repeat(2 ** 28).indexOf('y')",
    "padEnd": "''.padEnd(2 ** 28, 'ab').indexOf('y')",
    "join": "new Array(2 ** 16).fill('y'.repeat(2 ** 12)).join('').length",
    "split": "'x'.repeat(2 ** 28).split('')",
}

PEAK_SCRIPT = """
import re, sys
from plait.sandbox import JsSandbox, SandboxError

def rss(pid, key):
    with open(f"/proc/{pid}/status") as handle:
        return int(re.search(rf"^{key}:\\s+(\\d+) kB", handle.read(), re.M).group(1)) * 1024

with JsSandbox(timeout_s=120, max_timeout_s=120, max_memory_mb=LIMIT, workers=1, max_workers=1) as box:
    assert box.evaluate("'warm'", {}) == "warm"
    [pid] = box.child_pids()
    baseline = rss(pid, "VmHWM")
    try:
        box.evaluate(sys.argv[1], {})
        print("no error")
    except SandboxError as error:
        print(type(error).__name__)
    assert box.child_pids() == [pid], "the evaluator process was replaced"
    print((rss(pid, "VmHWM") - baseline) // (1024 * 1024))
    print(box.evaluate("input.tag", {"input": {"tag": "next"}}))
""".replace("LIMIT", str(LIMIT_MB))


def _peak(expression: str) -> tuple[str, int, str]:
    proc = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, expression], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    error, peak_mb, after = proc.stdout.split()
    return error, int(peak_mb), after


@pytest.mark.parametrize("expression", list(BUFFERS.values()), ids=list(BUFFERS))
def test_array_buffer_memory_counts_against_the_limit(expression: str) -> None:
    error, peak_mb, after = _peak(expression)
    assert error == "JsMemoryError"
    assert peak_mb < LIMIT_MB + SLACK_MB, f"the process grew by {peak_mb} MB"
    assert after == "next"


@pytest.mark.parametrize("expression", list(STRINGS.values()), ids=list(STRINGS))
def test_large_strings_stay_under_the_limit(expression: str) -> None:
    error, peak_mb, after = _peak(expression)
    assert error in {"JsMemoryError", "JsRuntimeError"}  # memory, or QuickJS's own string length limit
    assert peak_mb < LIMIT_MB + SLACK_MB, f"the process grew by {peak_mb} MB"
    assert after == "next"


@pytest.fixture(scope="module")
def box() -> Iterator[JsSandbox]:
    with JsSandbox(timeout_s=30, max_memory_mb=LIMIT_MB, workers=1, max_workers=1) as sandbox:
        yield sandbox


def test_the_memory_error_names_the_limit(box: JsSandbox) -> None:
    with pytest.raises(JsMemoryError, match=f"memory limit of {LIMIT_MB} MB"):
        box.evaluate(BUFFERS["typed arrays x8"], {})


def test_shared_memory_and_webassembly_stay_unreachable(box: JsSandbox) -> None:
    assert box.evaluate("[typeof SharedArrayBuffer, typeof WebAssembly, typeof Atomics]", {}) == ["undefined"] * 3
    for expression in ("new SharedArrayBuffer(2 ** 30)", "new WebAssembly.Memory({initial: 1, maximum: 65536})"):
        with pytest.raises(SandboxError, match="ReferenceError"):
            box.evaluate(expression, {})


def test_memory_left_behind_never_fails_the_next_evaluation(box: JsSandbox) -> None:
    """Each evaluation allocates ~40 MB (under the limit) and drops it; the garbage of earlier
    ones must not push later ones over."""
    hog = (
        "(() => { const a = []; for (let i = 0; i < 10; i++) a.push(new Uint8Array(4 * 2 ** 20).fill(1)); return 1 })()"
    )
    for _ in range(12):
        assert box.evaluate(hog, {}) == 1
        assert box.evaluate("({ok: true})", {}) == {"ok": True}


def test_a_cycle_left_behind_never_fails_the_next_evaluation(box: JsSandbox) -> None:
    """Reference cycles are not freed by counting: QuickJS's collector must find them."""
    cycles = (
        "(() => { for (let i = 0; i < 20000; i++) { const a = {b: new Uint8Array(1024)}; a.self = a; } return 1 })()"
    )
    for _ in range(8):
        assert box.evaluate(cycles, {}) == 1


def test_many_evaluations_with_large_scopes_in_one_context(box: JsSandbox) -> None:
    scope = {"input": {"rows": [{"id": i, "text": "z" * 30} for i in range(800)]}}  # ~40 KB of JSON
    for n in range(1_000):
        assert box.evaluate("input.rows.length + nodes", {**scope, "nodes": n}) == 800 + n
