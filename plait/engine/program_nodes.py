"""TOOL and CODE nodes: a program from the deployer's allow-list, or code in JavaScript or Python.

TOOL runs `command` (an argv; each item a template rendered as one argument, never split, never
seen by a shell) through `plait.sandbox.programs`, in a bubblewrap jail (`plait/sandbox/jail.py`):
only the environment plait.toml `[tools] env` lets through plus the node's own `env` (names
`[tools] node_env` allows), a timeout and a cap on stdout. Its output is `{"text": stdout}`, or
with `parse: json` the JSON it printed, checked against the out-edge schemas like any output. A
non-zero exit fails the node, quoting the end of stderr; `cleanup` (an argv) then runs once, in a
jail of its own, under the same limits.

A value rendered from a template is data, never an option: an argument that a template begins
and that renders to something starting with `-` fails the node, unless a literal `--` comes
before it in the command (after which the program reads operands only) or the graph wrote the
`-` itself (`--name={{ value }}`).

CODE in JavaScript runs in the sandbox like a TRANSFORM, as a function body or a program
declaring `main(input, nodes, current)` (`plait.sandbox.code_function`); in Python, in a child
interpreter in the jail (`plait.sandbox.python`), only where `[code] python = true`.

What may run is checked before a run starts (`refusal`): the programs, the node's environment
names, Python CODE being on, a jail being available here. A graph naming anything else is refused
whole instead of failing half-way.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from plait.config import CodeConfig, JailConfig, ToolsConfig, code_settings, jail_settings, tools_settings
from plait.config.variables import unsafe_variable
from plait.engine.render import NodeView, build_view, for_the_record, js_scope
from plait.engine.results import Timer, checked_output, node_snapshot
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import RunState
from plait.model.nodes import CodeNode, NodeBase, ToolNode
from plait.sandbox import SandboxError
from plait.sandbox.confinement import for_python, for_tool
from plait.sandbox.confinement import refusal as jail_refusal
from plait.sandbox.programs import ProgramResult, run_program
from plait.sandbox.python import PythonCodeError, run_python

STDERR_LINES = 5
"""How many of stderr's last lines a failed TOOL's message quotes."""
_TAGS = ("{{", "{%", "{#")


def refusal(
    node: NodeBase, tools: ToolsConfig | None = None, code: CodeConfig | None = None, jail: JailConfig | None = None
) -> str | None:
    """Why this machine will not run `node` (a program not allowed, an environment variable not
    allowed, Python CODE switched off, no jail here, a time limit over the deployer's cap), or None."""
    if isinstance(node, ToolNode):
        return _tool_refusal(node, tools or tools_settings(), jail or jail_settings())
    if isinstance(node, CodeNode) and node.language == "python":
        code = code or code_settings()
        if not code.python:
            return (
                f"node '{node.id}' is Python CODE, which this machine does not run: set [code] python = true in "
                "plait.toml to allow it (the code then runs in a jail, see docs/security.md)"
            )
        if node.timeout_s is not None and node.timeout_s > code.max_timeout_s:
            return _over(node, node.timeout_s, "[code]", code.max_timeout_s)
        why = jail_refusal(jail or jail_settings(), python=True)
        if why is not None:
            return f"node '{node.id}' is Python CODE, which cannot run here: {why}"
    return None


def _tool_refusal(node: ToolNode, tools: ToolsConfig, jail: JailConfig) -> str | None:
    program = node.command[0]
    if any(tag in program for tag in _TAGS):
        return f"node '{node.id}': the program (command[0]) must be written out, not a template: {program!r}"
    if program_path(program, tools) is None:
        allowed = ", ".join(tools.allow) or "none"
        return (
            f"node '{node.id}' runs {program!r}, which plait.toml [tools] allow does not list "
            f"(allowed: {allowed}); add it there if this machine may run it"
        )
    if node.cleanup and program_path(node.cleanup[0], tools) is None:
        return f"node '{node.id}': its cleanup runs {node.cleanup[0]!r}, which plait.toml [tools] allow does not list"
    if node.cwd is not None:
        return (
            f"node '{node.id}': cwd is not supported, every TOOL run gets a fresh temporary directory; "
            "pass paths as arguments"
        )
    if node.timeout_s is not None and node.timeout_s > tools.max_timeout_s:
        return _over(node, node.timeout_s, "[tools]", tools.max_timeout_s)
    for name in node.env:
        unsafe = unsafe_variable(name)
        if unsafe is not None:
            return f"node '{node.id}': env sets {unsafe}; remove it from the node's env"
        if name not in tools.node_env:
            allowed = ", ".join(tools.node_env) or "none"
            return (
                f"node '{node.id}': env sets {name}, which plait.toml [tools] node_env does not list "
                f"(allowed: {allowed}); add it there if programs here may be given it"
            )
    why = jail_refusal(jail)
    return f"node '{node.id}' is a TOOL node, which cannot run here: {why}" if why is not None else None


def _over(node: NodeBase, timeout: float, table: str, cap: float) -> str:
    return f"node '{node.id}': timeout_s {timeout:g} s is over {table} max_timeout_s ({cap:g} s) in plait.toml"


def allow_entry(program: str, tools: ToolsConfig) -> str | None:
    """The `[tools] allow` entry that lets `program` run, or None."""
    for allowed in tools.allow:
        if program == allowed or (os.path.isabs(allowed) and program == os.path.basename(allowed)):
            return allowed
    return None


def program_path(program: str, tools: ToolsConfig) -> str | None:
    """The executable an allowed `program` is (an absolute path, or a name found on PATH), or None."""
    allowed = allow_entry(program, tools)
    if allowed is None:
        return None
    found = allowed if os.path.isabs(allowed) else shutil.which(allowed, path=os.environ.get("PATH"))
    return found if found is not None and os.access(found, os.X_OK) else None


def argument_problem(node_id: str, field: str, items: list[str], rendered: list[str]) -> str | None:
    """Why a rendered argv may not run: a value from a template that the program would read as an
    option, or a NUL (None: it may run)."""
    operands = False
    for index, (item, value) in enumerate(zip(items, rendered, strict=True)):
        if "\0" in value:
            return f"node '{node_id}': {field}[{index}] renders to a value holding a NUL character"
        if index == 0 or operands or not any(tag in item for tag in _TAGS):
            operands = operands or (index > 0 and item == "--")
            continue
        written = item[: min(i for i in (item.find(tag) for tag in _TAGS) if i >= 0)]
        if value.startswith("-") and not written.startswith("-"):
            return (
                f"node '{node_id}': {field}[{index}] renders to {value[:80]!r}, which the program would read as an "
                "option; a value from a template may not start with '-'. Put a literal '--' before it in the "
                "command if the program takes operands after '--', or write the option itself in the graph "
                "(e.g. --name={{ value }})"
            )
    return None


async def run_tool(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """TOOL: run the allow-listed program; its stdout (text, or JSON checked against the schemas)."""
    assert isinstance(node, ToolNode)
    tools = rt.tools or tools_settings()
    timer = Timer()
    view = build_view(state, node)
    argv = [await view.arender(arg) for arg in node.command]
    env = {name: os.environ[name] for name in tools.env if name in os.environ}
    env.update({name: await view.arender(value) for name, value in node.env.items()})
    timeout = node.timeout_s or tools.timeout_s
    stdin = await view.arender(node.stdin) if node.stdin is not None else None
    recorded = {"argv": [for_the_record(arg) for arg in argv], "stdin": for_the_record(stdin)}
    snapshot = node_snapshot(node, state, view.js_scope, **recorded, env=sorted(env), timeout_s=timeout)
    problem = refusal(node, tools, jail=rt.jail) or argument_problem(node.id, "command", node.command, argv)
    if problem is None and any("\0" in value for value in env.values()):
        problem = f"node '{node.id}': env renders to a value holding a NUL character"
    if problem is not None:  # the configuration changed since the run started, or the input is hostile
        return NodeResult.failed(snapshot, [timer.attempt(error=problem)], kind="refused", message=problem)
    data = stdin.encode() if stdin is not None else None
    ran = await _run(node, node.command[0], argv[1:], env, rt, timeout, data)
    if isinstance(ran, str):
        return await _failed(node, view, env, rt, snapshot, timer, "tool", ran)
    attempt = timer.attempt(exit_code=ran.exit_code, stderr=ran.stderr_tail[-1000:] or None)
    problem, kind = _problem(ran, timeout, tools)
    if problem is not None:
        return await _failed(node, view, env, rt, snapshot, timer, kind, problem, attempt)
    text = ran.stdout.decode("utf-8", errors="replace")
    if node.parse == "text":
        return checked_output(node, state, {"text": text}, snapshot, [attempt])
    try:
        value = json.loads(text)
    except ValueError as exc:
        message = f"the program's output is not JSON ({exc}); print JSON, or use parse: text"
        return await _failed(node, view, env, rt, snapshot, timer, "parse", message, attempt)
    return checked_output(node, state, value, snapshot, [attempt])


async def _run(
    node: ToolNode,
    program: str,
    args: list[str],
    env: dict[str, str],
    rt: Runtime,
    timeout: float,
    stdin: bytes | None = None,
) -> ProgramResult | str:
    tools = rt.tools or tools_settings()
    path = program_path(program, tools)
    assert path is not None  # `refusal` checked it before the run started
    network = allow_entry(program, tools) in tools.network
    confinement = for_tool(path, network, tools, rt.jail or jail_settings())
    try:
        return await run_program(
            [path, *args],
            env=env,
            timeout_s=timeout,
            max_output_bytes=tools.max_output_bytes,
            confinement=confinement,
            stdin=stdin,
        )
    except OSError as exc:
        return f"the program {program!r} could not be started: {exc.strerror or exc}"


def _problem(ran: ProgramResult, timeout: float, tools: ToolsConfig) -> tuple[str | None, str]:
    if ran.timed_out:
        return f"the program ran longer than {timeout:g} s and was stopped", "timeout"
    if ran.output_over_cap:
        return f"the program printed more than the limit of {tools.max_output_bytes} bytes and was stopped", (
            "output_too_large"
        )
    if ran.exit_code != 0:
        lines = [line for line in ran.stderr_tail.splitlines() if line.strip()][-STDERR_LINES:]
        said = ": " + " | ".join(lines) if lines else " (it wrote nothing to stderr)"
        if ran.processes_exhausted:
            said += f" (it tried to run more than [tools] processes = {tools.processes} processes at once)"
        return f"the program exited with status {ran.exit_code}{said}", "tool"
    return None, ""


async def _failed(
    node: ToolNode,
    view: NodeView,
    env: dict[str, str],
    rt: Runtime,
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
        tools = rt.tools or tools_settings()
        args = [await view.arender(arg) for arg in node.cleanup[1:]]
        problem = argument_problem(node.id, "cleanup", node.cleanup, [node.cleanup[0], *args])
        done = problem or await _run(node, node.cleanup[0], args, env, rt, tools.timeout_s)
        attempt["cleanup"] = {"error": done} if isinstance(done, str) else {"exit_code": done.exit_code}
    return NodeResult.failed(snapshot, [attempt], kind=kind, message=message)


async def run_code(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """CODE: the code's output (what its body returns, or its `main`), checked against the schemas."""
    assert isinstance(node, CodeNode)
    timer = Timer()
    scope = js_scope(state, node)
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
    jail = rt.jail or jail_settings()
    problem = refusal(node, code=code, jail=jail)
    if problem is not None:
        raise PythonCodeError("refused", problem)
    executable, confinement = for_python(code.python_executable or sys.executable, code, jail)
    try:
        return await run_python(
            node.code,
            scope["input"],
            scope["nodes"],
            timeout_s=node.timeout_s or code.timeout_s,
            memory_mb=code.memory_mb,
            max_output_bytes=code.max_output_bytes,
            processes=code.processes,
            confinement=confinement,
            executable=executable,
        )
    except OSError as exc:
        problem = f"the Python interpreter could not be started: {exc.strerror or exc}"
        raise PythonCodeError("crashed", problem) from None
