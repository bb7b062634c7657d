"""TOOL and CODE nodes: a program from the operator's allow-list, or code in JavaScript or Python.

TOOL runs `command` (an argv; each item a template rendered as one argument, never split, never
seen by a shell) through `plait.sandbox.programs`: a fresh temporary directory, only the
environment plait.toml `[tools] env` lets through plus the node's own `env`, a timeout and a cap
on stdout. Its output is `{"text": stdout}`, or with `parse: json` the JSON it printed, checked
against the out-edge schemas like any output. A non-zero exit fails the node, quoting the end of
stderr; `cleanup` (an argv) then runs once, under the same limits.

CODE in JavaScript runs in the sandbox like a TRANSFORM, as a function body or a program
declaring `main(input, nodes, current)` (`plait.sandbox.code_function`); in Python, in a child
interpreter with limits (`plait.sandbox.python`), only where `[code] python = true`.

Which programs and languages may run is checked before a run starts (`refusal`), so a graph
naming anything else is refused whole instead of failing half-way.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from plait.config import CodeConfig, ToolsConfig, code_settings, tools_settings
from plait.engine.render import NodeView, build_view, js_scope
from plait.engine.results import Timer, checked_output, node_snapshot
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import RunState
from plait.model.nodes import CodeNode, NodeBase, ToolNode
from plait.sandbox import SandboxError
from plait.sandbox.programs import ProgramResult, run_program
from plait.sandbox.python import PythonCodeError, run_python

STDERR_LINES = 5
"""How many of stderr's last lines a failed TOOL's message quotes."""


def refusal(node: NodeBase, tools: ToolsConfig | None = None, code: CodeConfig | None = None) -> str | None:
    """Why this machine will not run `node` (a program not allowed, Python CODE switched off, a
    time limit over the operator's cap), or None."""
    if isinstance(node, ToolNode):
        tools = tools or tools_settings()
        program = node.command[0]
        if "{{" in program or "{%" in program:
            return f"node '{node.id}': the program (command[0]) must be written out, not a template: {program!r}"
        if program_path(program, tools) is None:
            allowed = ", ".join(tools.allow) or "none"
            return (
                f"node '{node.id}' runs {program!r}, which plait.toml [tools] allow does not list "
                f"(allowed: {allowed}); add it there if this machine may run it"
            )
        if node.cleanup and program_path(node.cleanup[0], tools) is None:
            return (
                f"node '{node.id}': its cleanup runs {node.cleanup[0]!r}, which plait.toml [tools] allow does not list"
            )
        if node.cwd is not None:
            return (
                f"node '{node.id}': cwd is not supported, every TOOL run gets a fresh temporary directory; "
                "pass paths as arguments"
            )
        if node.timeout_s is not None and node.timeout_s > tools.max_timeout_s:
            return _over(node, node.timeout_s, "[tools]", tools.max_timeout_s)
    if isinstance(node, CodeNode) and node.language == "python":
        code = code or code_settings()
        if not code.python:
            return (
                f"node '{node.id}' is Python CODE, which this machine does not run: set [code] python = true in "
                "plait.toml to allow it (the code then runs in a child process with limits, which is not a sandbox)"
            )
        if node.timeout_s is not None and node.timeout_s > code.max_timeout_s:
            return _over(node, node.timeout_s, "[code]", code.max_timeout_s)
    return None


def _over(node: NodeBase, timeout: float, table: str, cap: float) -> str:
    return f"node '{node.id}': timeout_s {timeout:g} s is over {table} max_timeout_s ({cap:g} s) in plait.toml"


def program_path(program: str, tools: ToolsConfig) -> str | None:
    """The executable an allowed `program` is (an absolute path, or a name found on PATH), or None."""
    for allowed in tools.allow:
        if program == allowed or (os.path.isabs(allowed) and program == os.path.basename(allowed)):
            found = allowed if os.path.isabs(allowed) else shutil.which(allowed, path=os.environ.get("PATH"))
            if found is not None and os.access(found, os.X_OK):
                return found
    return None


async def run_tool(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """TOOL: run the allow-listed program; its stdout (text, or JSON checked against the schemas)."""
    assert isinstance(node, ToolNode)
    tools = rt.tools or tools_settings()
    timer = Timer()
    view = build_view(state, node)
    argv = [view.render(arg) for arg in node.command]
    env = {name: os.environ[name] for name in tools.env if name in os.environ}
    env.update({name: view.render(value) for name, value in node.env.items()})
    timeout = node.timeout_s or tools.timeout_s
    stdin = view.render(node.stdin) if node.stdin is not None else None
    snapshot = node_snapshot(node, state, view.js_scope, argv=argv, env=sorted(env), timeout_s=timeout, stdin=stdin)
    problem = refusal(node, tools)
    if problem is not None:  # the configuration changed since the run started
        return NodeResult.failed(snapshot, [timer.attempt(error=problem)], kind="refused", message=problem)
    path = program_path(node.command[0], tools)
    assert path is not None
    data = stdin.encode() if stdin is not None else None
    ran = await _run(node, [path, *argv[1:]], env, timeout, tools.max_output_bytes, data)
    if isinstance(ran, str):
        return await _failed(node, view, env, tools, snapshot, timer, "tool", ran)
    attempt = timer.attempt(exit_code=ran.exit_code, stderr=ran.stderr_tail[-1000:] or None)
    problem, kind = _problem(ran, timeout, tools.max_output_bytes)
    if problem is not None:
        return await _failed(node, view, env, tools, snapshot, timer, kind, problem, attempt)
    text = ran.stdout.decode("utf-8", errors="replace")
    if node.parse == "text":
        return checked_output(node, state, {"text": text}, snapshot, [attempt])
    try:
        value = json.loads(text)
    except ValueError as exc:
        message = f"the program's output is not JSON ({exc}); print JSON, or use parse: text"
        return await _failed(node, view, env, tools, snapshot, timer, "parse", message, attempt)
    return checked_output(node, state, value, snapshot, [attempt])


async def _run(
    node: ToolNode, argv: list[str], env: dict[str, str], timeout: float, cap: int, stdin: bytes | None = None
) -> ProgramResult | str:
    try:
        return await run_program(argv, env=env, timeout_s=timeout, max_output_bytes=cap, stdin=stdin)
    except OSError as exc:
        return f"the program {node.command[0]!r} could not be started: {exc.strerror or exc}"


def _problem(ran: ProgramResult, timeout: float, cap: int) -> tuple[str | None, str]:
    if ran.timed_out:
        return f"the program ran longer than {timeout:g} s and was stopped", "timeout"
    if ran.output_over_cap:
        return f"the program printed more than the limit of {cap} bytes and was stopped", "output_too_large"
    if ran.exit_code != 0:
        lines = [line for line in ran.stderr_tail.splitlines() if line.strip()][-STDERR_LINES:]
        said = ": " + " | ".join(lines) if lines else " (it wrote nothing to stderr)"
        return f"the program exited with status {ran.exit_code}{said}", "tool"
    return None, ""


async def _failed(
    node: ToolNode,
    view: NodeView,
    env: dict[str, str],
    tools: ToolsConfig,
    snapshot: dict[str, Any],
    timer: Timer,
    kind: str,
    message: str,
    attempt: dict[str, Any] | None = None,
) -> NodeResult:
    """The node's failure, after its `cleanup` program (if any) ran once; what cleanup did is
    recorded on the attempt."""
    attempt = attempt or timer.attempt(error=message)
    attempt.setdefault("error", message)
    if node.cleanup:
        path = program_path(node.cleanup[0], tools)
        assert path is not None  # `refusal` checked it before the run started
        argv = [path, *(view.render(arg) for arg in node.cleanup[1:])]
        done = await _run(node, argv, env, tools.timeout_s, tools.max_output_bytes)
        attempt["cleanup"] = {"error": done} if isinstance(done, str) else {"exit_code": done.exit_code}
    return NodeResult.failed(snapshot, [attempt], kind=kind, message=message)


async def run_code(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """CODE: the code's output (what its body returns, or its `main`), checked against the schemas."""
    assert isinstance(node, CodeNode)
    timer = Timer()
    scope = js_scope(state, node, node.code)
    snapshot = node_snapshot(node, state, scope, language=node.language)
    try:
        if node.language == "python":
            value = await _python(node, scope, rt)
        else:
            args = (scope["input"], scope["nodes"], scope["current"])
            owner = state.root_run_id or None  # a run and its child runs share one fair share
            value = await rt.sandbox().acall_code(node.code, *args, timeout_s=node.timeout_s, owner=owner)
    except PythonCodeError as exc:
        return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind=f"code_{exc.kind}", message=str(exc))
    except SandboxError as exc:
        return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind="code", message=str(exc))
    return checked_output(node, state, value, snapshot, [timer.attempt(result=value)])


async def _python(node: CodeNode, scope: dict[str, Any], rt: Runtime) -> Any:
    code = rt.code or code_settings()
    problem = refusal(node, code=code)
    if problem is not None:
        raise PythonCodeError("refused", problem)
    return await run_python(
        node.code,
        scope["input"],
        scope["nodes"],
        timeout_s=node.timeout_s or code.timeout_s,
        memory_mb=code.memory_mb,
        max_output_bytes=code.max_output_bytes,
        executable=code.python_executable,
    )
