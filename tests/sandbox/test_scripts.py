"""Prompt scripts in the sandbox: the contract (`async function main()` returns the prompt), the
host APIs through the bridge, and every limit crossed, each a clear error of its own kind."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from plait.sandbox.scripts import HostError, ScriptEvent, ScriptLimits, run_script

FAST = ScriptLimits(soft_s=0.3, hard_s=0.8)  # for the tests of the time limits themselves
ROOMY = ScriptLimits(soft_s=10.0, hard_s=20.0)
"""For the tests whose point is not time: a loaded host never reaches these limits."""


class Host:
    """Answers getVar from a dict; counts the calls it saw."""

    def __init__(self, values: dict[str, Any] | None = None):
        self.values = values or {"input.topic": "birds"}
        self.calls: list[tuple[str, Any]] = []

    def get_var(self, path: str) -> Any:
        self.calls.append(("getVar", path))
        if path not in self.values:
            raise HostError(f"no value at '{path}'")
        return self.values[path]

    def schema_hint(self, target: str) -> str:
        self.calls.append(("getSchemaHint", target))
        return f"{target}: an object with a title"

    def read_route(self, route: str, params: dict[str, Any]) -> Any:
        self.calls.append(("readRoute", route))
        raise HostError(f"route {route} is not on the allow-list")


def test_main_returns_the_prompt_with_host_values_and_console_events() -> None:
    code = """
async function main() {
  const topic = await getVar("input.topic");
  console.log("topic is", topic, {n: 1});
  console.warn("careful");
  return `Write about ${topic}. ${await getSchemaHint("summary")}`;
}"""
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.error is None
    assert outcome.prompt == "Write about birds. summary: an object with a title"
    assert [(e.type, e.level, e.args) for e in outcome.events] == [
        ("log", "log", ["topic is", "birds", {"n": 1}]),
        ("warning", "warn", ["careful"]),
        ("result", "script", [outcome.prompt]),
    ]
    assert outcome.host_calls == [
        {"api": "getVar", "args": ["input.topic"], "value": "birds"},
        {"api": "getSchemaHint", "args": ["summary"], "value": "summary: an object with a title"},
    ]  # enough to replay the prompt without the host


def test_a_host_refusal_rejects_the_promise_and_the_script_may_catch_it() -> None:
    code = 'async function main() { try { await readRoute("/admin") } catch (e) { return "no: " + e.message } }'
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.prompt == "no: readRoute: route /admin is not on the allow-list"
    assert outcome.host_calls == [
        {"api": "readRoute", "args": ["/admin", {}], "error": "route /admin is not on the allow-list"}
    ]


@pytest.mark.parametrize(
    ("code", "kind", "line"),
    [
        ("async function main( { return 1 }", "syntax", 1),
        ("const x = 1;", "no_main", None),
        ('function main() { return "x" }', "not_async", None),
        ("async function main() {\n  const a = 1;\n  throw new Error('boom');\n}", "thrown", 3),
        ("async function main() {\n  return missing();\n}", "thrown", 2),
        ("async function main() { return 42 }", "not_string", None),
        ('async function main() { return "x".repeat(70000) }', "too_large", None),
    ],
)
def test_each_way_a_script_fails_is_its_own_error_with_its_position(code: str, kind: str, line: int | None) -> None:
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.prompt is None
    assert outcome.error is not None
    assert outcome.error.kind == kind, outcome.error
    assert outcome.error.line == line
    assert outcome.events[-1].type == "error"


@pytest.mark.parametrize(
    "loop", ["while (true) {}", "while (true) await 0", "for (;;) { await getVar('input.topic') }"]
)
def test_a_script_that_never_ends_is_stopped_at_the_hard_limit_after_a_warning(loop: str) -> None:
    events: list[ScriptEvent] = []
    started = time.monotonic()
    host = Host()
    outcome = run_script(f"async function main() {{ {loop} }}", host, FAST, on_event=events.append)
    elapsed = time.monotonic() - started
    assert outcome.error is not None
    assert outcome.error.kind in ("timeout", "host_calls")  # the getVar loop hits the call quota first
    assert elapsed < FAST.hard_s + 1.0
    if outcome.error.kind == "timeout":
        assert [e.args for e in events if e.level == "time"] == [
            ["the script has run for 0.3 s; it is stopped at 0.8 s"]
        ]


def test_memory_is_bounded_array_buffers_included() -> None:
    code = "async function main() { const a = []; for (;;) a.push(new ArrayBuffer(1 << 20)) }"
    outcome = run_script(code, Host(), ScriptLimits(soft_s=1, hard_s=3, memory_mb=32))
    assert outcome.error is not None
    assert outcome.error.kind == "memory"
    assert "32 MB" in outcome.error.message


def test_host_calls_are_bounded_and_the_flood_fails_the_script() -> None:
    host = Host()
    code = "async function main() { for (let i = 0; i < 100; i++) await getVar('input.topic'); return 'x' }"
    outcome = run_script(code, host, ROOMY)
    assert outcome.error is not None
    assert outcome.error.kind == "host_calls"
    assert len(host.calls) == ROOMY.max_host_calls  # the 21st never reached the host


def test_console_entries_and_bytes_are_bounded_and_the_excess_counted() -> None:
    many = run_script(
        "async function main() { for (let i = 0; i < 80; i++) console.log(i); return 'x' }", Host(), ROOMY
    )
    assert len([e for e in many.events if e.type == "log"]) == 50
    assert many.dropped_console == 30
    code = "async function main() { for (let i = 0; i < 15; i++) console.log('y'.repeat(1000)); return 'x' }"
    big = run_script(code, Host(), ROOMY)
    assert len([e for e in big.events if e.type == "log"]) == 10  # 10 KB in all, each entry 1,006 bytes
    assert big.dropped_console == 5


def test_a_host_value_over_the_limit_is_cut_with_a_marker() -> None:
    host = Host({"input.text": "z" * 50_000})
    outcome = run_script("async function main() { return await getVar('input.text') }", host, ROOMY)
    assert outcome.prompt is not None
    assert len(outcome.prompt) < 17_000
    assert "…[truncated: " in outcome.prompt
    assert any(e.type == "warning" and "getVar returned more than" in e.args[0] for e in outcome.events)


def test_runs_share_nothing_and_reach_no_network_or_host_objects() -> None:
    first = run_script("var leaked = 1; async function main() { return String(typeof fetch) }", Host(), ROOMY)
    second = run_script("async function main() { return String(typeof leaked) + ' ' + typeof process }", Host(), ROOMY)
    assert first.prompt == "undefined"
    assert second.prompt == "undefined undefined"


def test_cancelling_stops_the_script_at_its_next_yield() -> None:
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    code = "async function main() { for (;;) { await 0; for (let i = 0; i < 1e5; i++) {} } }"
    started = time.monotonic()
    outcome = run_script(code, Host(), ScriptLimits(soft_s=5, hard_s=10), cancel=cancel)
    assert outcome.error is not None
    assert outcome.error.kind in ("cancelled", "timeout")
    assert time.monotonic() - started < 5


class SlowHost(Host):
    """Answers getVar after `delay` seconds (a route read on a busy server)."""

    def __init__(self, delay: float):
        super().__init__()
        self.delay = delay

    def get_var(self, path: str) -> Any:
        time.sleep(self.delay)
        return super().get_var(path)


def test_two_host_calls_in_flight_then_awaited_both_settle() -> None:
    code = """
async function main() {
  const topic = getVar("input.topic");
  const hint = getSchemaHint("summary");
  return `${await topic} / ${await hint}`;
}"""
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.error is None, outcome.error
    assert outcome.prompt == "birds / summary: an object with a title"
    assert [call["api"] for call in outcome.host_calls] == ["getVar", "getSchemaHint"]


def test_queued_host_calls_stop_at_the_deadline_between_answers() -> None:
    """Twenty calls queued at once, each answered in 0.3 s: 6 s of answers, a 0.8 s limit."""
    code = """
async function main() {
  const asked = [];
  for (let i = 0; i < 20; i++) asked.push(getVar("input.topic"));
  for (const one of asked) await one;
  return "all answered";
}"""
    host = SlowHost(0.3)
    started = time.monotonic()
    outcome = run_script(code, host, FAST)
    elapsed = time.monotonic() - started
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert elapsed < FAST.hard_s + 1.0, f"the script ended after {elapsed:.2f} s"
    assert len(host.calls) <= 4  # the calls after the deadline were never asked


def test_one_slow_host_call_is_waited_for_only_until_the_deadline() -> None:
    started = time.monotonic()
    outcome = run_script("async function main() { return await getVar('input.topic') }", SlowHost(5.0), FAST)
    elapsed = time.monotonic() - started
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert elapsed < FAST.hard_s + 1.0, f"the script ended after {elapsed:.2f} s"
    assert outcome.host_calls == [
        {"api": "getVar", "args": ["input.topic"], "error": "the script's time ran out during this call"}
    ]


UNINTERRUPTIBLE = "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')"


def test_a_script_in_an_uninterruptible_builtin_ends_at_the_hard_limit() -> None:
    started = time.monotonic()
    outcome = run_script(f"async function main() {{ return String({UNINTERRUPTIBLE}) }}", Host(), FAST)
    elapsed = time.monotonic() - started
    assert outcome.error is not None
    assert outcome.error.kind == "timeout"
    assert elapsed < FAST.hard_s + 1.0, f"the script ended after {elapsed:.2f} s"
    assert run_script("async function main() { return 'next' }", Host(), FAST).prompt == "next"


def test_cancelling_a_script_in_an_uninterruptible_builtin_stops_it_at_once() -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    code = f"async function main() {{ await 0; return String({UNINTERRUPTIBLE}) }}"
    outcome = run_script(code, Host(), ScriptLimits(soft_s=20, hard_s=30), cancel=cancel)
    assert outcome.error is not None
    assert outcome.error.kind == "cancelled"
    assert time.monotonic() - started < 0.5 + 1.5


def test_the_designs_exported_main_runs_and_promise_all_gathers_host_calls() -> None:
    code = """// as the scripts' design writes it
export async function main() {
  const [topic, hint] = await Promise.all([getVar("input.topic"), getSchemaHint("summary")]);
  return `Write about ${topic}. ${hint}`;
}"""
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.error is None, outcome.error
    assert outcome.prompt == "Write about birds. summary: an object with a title"
    assert [c["api"] for c in outcome.host_calls] == ["getVar", "getSchemaHint"]


def test_an_error_in_an_exported_main_names_the_scripts_own_line_and_column() -> None:
    code = "export async function main() {\n  return undefinedName;\n}"
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.error is not None
    assert (outcome.error.line, outcome.error.column) == (2, 10)


def test_a_console_entry_over_1_kb_is_cut_with_a_note_and_later_entries_still_show() -> None:
    code = """
async function main() {
  console.log("x".repeat(5000), {n: 1});
  console.log("after");
  return "p";
}"""
    outcome = run_script(code, Host(), ROOMY)
    assert outcome.error is None
    logged = [e.args for e in outcome.events if e.type == "log"]
    assert len(logged) == 2
    (cut,) = logged[0]
    assert cut.startswith("x" * 1000)
    assert cut.endswith("… [cut at 1024 bytes: the entry had 5014]")  # as JSON: ["x…", {"n": 1}]
    assert len(cut.encode()) < 1100
    assert logged[1] == ["after"]
