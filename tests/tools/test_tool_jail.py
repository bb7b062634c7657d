"""Graph authors against the jail, through the engine: each reproduction a graph an untrusted
author could write, run with the allow-list of examples/workflow.toml (`wc`) or a program a
deployer might allow (`sort`, `sh`, a bash wrapper). Each is refused before it runs, or runs and
finds nothing of the host. On SQLite: the store is not what is attacked here (the real-server
attacks on both stores are in tests/api/test_abuse_jail.py)."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.compile import compile_file
from plait.config import CodeConfig, ToolsConfig
from plait.engine.program_nodes import refusal
from plait.engine.run_input import StartError
from plait.engine.runner import Engine, EngineError, RunOutcome
from plait.model.enums import RunStatus
from plait.model.nodes import ToolNode
from plait.runs.start import start_run
from plait.store import Store
from tests.jail_support import kill_all, live_processes_naming, processes_naming, require_jail, running_sleeps

SH = shutil.which("sh") or "/bin/sh"
BASH = shutil.which("bash") or "/bin/bash"
WC = shutil.which("wc") or "/usr/bin/wc"
SORT = shutil.which("sort") or "/usr/bin/sort"
PYTHON = CodeConfig(python=True, timeout_s=20)


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'plait.db'}")
    yield store
    store.close()


@pytest.fixture(autouse=True)
def jail() -> None:
    require_jail()


def graph(tmp_path: Path, nodes: list[dict[str, Any]]) -> str:
    edges = [{"source": a["id"], "target": b["id"]} for a, b in itertools.pairwise(nodes)]
    path = tmp_path / f"graph_{len(list(tmp_path.glob('graph_*')))}.yaml"
    path.write_text(yaml.safe_dump({"id": "jail", "nodes": nodes, "edges": edges}, sort_keys=False))
    return str(path)


def run(store: Store, path: str, run_input: dict[str, Any], tools: ToolsConfig, **engine: Any) -> RunOutcome:
    run_id = start_run(store, path, run_input)

    async def go() -> RunOutcome:
        runner = Engine(store, None, tools=tools, code=PYTHON, **engine)
        try:
            return await runner.run(run_id)
        finally:
            await runner.aclose()

    return asyncio.run(go())


def failure(store: Store, outcome: RunOutcome) -> tuple[str, str, str]:
    """(kind, message, stderr of the attempt) of the run's failed node."""
    (row,) = [n for n in store.runs.node_runs(outcome.run_id) if n.error is not None]
    assert row.error is not None
    attempt = row.attempts[0] if row.attempts else {}
    return row.error["kind"], row.error["message"], str(attempt.get("stderr") or "")


@pytest.mark.parametrize(
    "value",
    ["--files0-from=/proc/self/stat", "--files0-from={config}", f"--files0-from=/proc/{os.getpid()}/environ"],
    ids=["proc_self_stat", "plait_toml", "server_environ"],
)
def test_a_templated_value_is_never_read_as_an_option(
    sqlite: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    config = tmp_path / "plait.toml"
    config.write_text('[[providers]]\napi_key = "SECRET-IN-PLAIT-TOML"\n')
    monkeypatch.setenv("PLAIT_CANARY", "SECRET-IN-THE-ENVIRONMENT")
    node = {"id": "count", "type": "TOOL", "command": ["wc", "-l", "{{ input.f }}"]}
    outcome = run(sqlite, graph(tmp_path, [node]), {"f": value.format(config=config)}, ToolsConfig(allow=("wc",)))
    assert outcome.status == RunStatus.FAILED
    kind, message, stderr = failure(sqlite, outcome)
    assert kind == "refused", message
    assert "which the program would read as an option" in message
    assert "'--'" in message
    for secret in ("SECRET-IN-PLAIT-TOML", "SECRET-IN-THE-ENVIRONMENT", "(wc)"):
        assert secret not in message + stderr


@pytest.mark.parametrize("name", ["plait_toml", "server_environ"])
def test_a_path_to_the_hosts_files_names_nothing_in_the_jail(
    sqlite: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """After a literal `--` a templated value is an operand: the file it names is not there."""
    config = tmp_path / "plait.toml"
    config.write_text("api_key = 'SECRET-IN-PLAIT-TOML'\n")
    monkeypatch.setenv("PLAIT_CANARY", "SECRET-IN-THE-ENVIRONMENT")
    path = str(config) if name == "plait_toml" else f"/proc/{os.getpid()}/environ"
    nodes = [
        {"id": "files", "type": "TOOL", "command": ["wc", "-c", "--", "{{ input.f }}"]},
        {"id": "names", "type": "TOOL", "command": ["wc", "-c", "--", "--files0-from={{ input.f }}"]},
    ]
    for node in nodes:
        outcome = run(sqlite, graph(tmp_path, [node]), {"f": path}, ToolsConfig(allow=("wc",)))
        assert outcome.status == RunStatus.FAILED, outcome
        kind, message, stderr = failure(sqlite, outcome)
        assert kind == "tool"
        assert "No such file or directory" in message
        assert "SECRET" not in message + stderr


def test_sort_running_a_shell_on_its_input_finds_nothing_of_the_host(
    sqlite: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sort --compress-program=sh` runs the lines it sorts as shell commands: they run, in the jail,
    where the host's files, environment and network are not."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-IN-A-HOST-FILE\n")
    monkeypatch.setenv("PLAIT_CANARY", "SECRET-IN-THE-ENVIRONMENT")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        commands = [  # a leading space sorts them first: they run in the first chunk sort compresses
            " echo RAN-IN-$(hostname) >&2",
            f" cat {secret} > {tmp_path}/leaked",
            f" tr '\\0' ' ' < /proc/{os.getpid()}/environ > {tmp_path}/environ",
            f" bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'",
        ]
        lines = commands + [f"# padding line {i:05d} " + "x" * 40 for i in range(500)]
        node = {"id": "s", "type": "TOOL", "command": ["sort", "--compress-program=sh", "--buffer-size=16k", "-T", "."],
                "stdin": "{{ input.text }}"}  # fmt: skip
        outcome = run(sqlite, graph(tmp_path, [node]), {"text": "\n".join(lines)}, ToolsConfig(allow=("sort",)))
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected
    assert not (tmp_path / "leaked").exists()
    assert not (tmp_path / "environ").exists()
    said = str([(n.error, n.attempts) for n in sqlite.runs.node_runs(outcome.run_id)])
    assert "SECRET" not in said
    assert "RAN-IN-plait-jail" in said  # the shell did run: inside the jail


@pytest.mark.parametrize("language", ["tool", "python"])
def test_a_setsid_grandchild_or_a_double_fork_does_not_outlive_its_node(
    sqlite: Store, tmp_path: Path, language: str
) -> None:
    marker = f"{os.getpid() % 1000}{time.monotonic_ns() % 10**6}"  # digits: sleep takes 600.<marker>
    if language == "tool":
        count = running_sleeps(marker, 2)
        node = {"id": "t", "type": "TOOL",
                "command": ["sh", "-c", f"setsid sleep 600.{marker}1 >/dev/null 2>&1 & "
                                        f"(sh -c 'sleep 600.{marker}2 >/dev/null 2>&1 &' &); {count}"]}  # fmt: skip
        running = {"text": "2\n"}
    else:
        count = running_sleeps(marker, 1)
        code = (
            "import os, subprocess\n"
            "def main(input, nodes):\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        if os.fork() == 0:\n"
            f"            os.execv('/bin/sleep', ['sleep', '600.{marker}3'])\n"
            "        os._exit(0)\n"
            "    os.wait()\n"
            f"    counted = subprocess.run(['/bin/sh', '-c', {count!r}], capture_output=True, text=True)\n"
            "    return {'text': counted.stdout}\n"
        )
        node = {"id": "t", "type": "CODE", "language": "python", "code": code}
        running = {"text": "1\n"}
    try:
        outcome = run(sqlite, graph(tmp_path, [node]), {}, ToolsConfig(allow=("sh",)))
        assert outcome.output == running, outcome  # they were running when the node ended
        left = live_processes_naming(f"600.{marker}")
        assert left == [], [p.cmdline() for p in left]
    finally:
        kill_all(processes_naming(f"600.{marker}"))


@pytest.mark.parametrize("looker_language", ["tool", "python"])
def test_a_run_cannot_read_or_overwrite_another_live_runs_folder(
    sqlite: Store, tmp_path: Path, looker_language: str
) -> None:
    marker = f"marker-{os.getpid()}-{time.monotonic_ns()}"
    holder = {"id": "holder", "type": "TOOL", "command": ["sh", "-c",
              f"echo mine > {marker}; while [ ! -e go ]; do sleep 0.05; done; cat {marker}"]}  # fmt: skip
    looker: dict[str, Any] = {"id": "looker", "type": "TOOL", "command": ["sh", "-c",
              f"for f in /tmp/*/{marker} /tmp/*/*/{marker} /tmp/{marker}; do "
              "[ -e \"$f\" ] && cat \"$f\" && echo pwned > \"$f\"; done; printf looked"]}  # fmt: skip
    if looker_language == "python":
        code = (
            "import glob\n"
            "def main(input, nodes):\n"
            f"    for path in glob.glob('/tmp/**/{marker}', recursive=True) + glob.glob('/proc/*/cwd/{marker}'):\n"
            "        open(path, 'w').write('pwned')\n"
            "    return {'text': 'looked'}\n"
        )
        looker = {"id": "looker", "type": "CODE", "language": "python", "code": code}
    tools = ToolsConfig(allow=("sh",))

    async def both() -> tuple[RunOutcome, RunOutcome]:
        engine = Engine(sqlite, None, tools=tools, code=PYTHON)
        try:
            first = asyncio.ensure_future(engine.run(start_run(sqlite, graph(tmp_path, [holder]), {})))
            folder = await _folder_holding(marker, first)
            second = await engine.run(start_run(sqlite, graph(tmp_path, [looker]), {}))
            (folder / "go").write_text("")
            return await first, second
        finally:
            await engine.aclose()

    first, second = asyncio.run(both())
    assert first.output == {"text": "mine\n"}, first  # nobody overwrote it
    assert second.output == {"text": "looked"}, second  # it found nothing


async def _folder_holding(marker: str, running: asyncio.Future[RunOutcome]) -> Path:
    """The working folder of the live program that wrote `marker`, seen from the host."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not running.done():
        for process in processes_naming(marker):
            folder = Path(f"/proc/{process.pid}/cwd")
            if (folder / marker).exists():
                return folder
        await asyncio.sleep(0.05)
    pytest.fail(f"the first program never wrote its marker ({running})")


@pytest.mark.parametrize(
    ("program", "env"),
    [("wrapper", {"BASH_ENV": "$(id > f)"}), ("wc", {"LD_PRELOAD": "/tmp/evil.so"}), ("wc", {"PYTHONSTARTUP": "x"})],
    ids=["bash_env_on_a_bash_wrapper", "ld_preload_on_wc", "pythonstartup"],
)
def test_loader_and_interpreter_variables_are_refused_at_validate_and_before_the_run(
    sqlite: Store, tmp_path: Path, program: str, env: dict[str, str]
) -> None:
    wrapper = tmp_path / "count-words"
    wrapper.write_text("#!/bin/bash\nexec wc -w\n")
    wrapper.chmod(0o755)
    name = str(wrapper) if program == "wrapper" else program
    path = graph(tmp_path, [{"id": "t", "type": "TOOL", "command": [name], "env": env, "stdin": "a b"}])
    (variable,) = env
    result = compile_file(path)
    assert [(d.code, d.node_id) for d in result.errors] == [("unsafe_env", "t")]
    assert variable in result.errors[0].message
    with pytest.raises(StartError, match="is not a valid graph") as refused:
        run(sqlite, path, {}, ToolsConfig(allow=(str(wrapper), "wc")))
    assert f"env sets {variable} is read by the loader" in str(refused.value.details)
    node = ToolNode(id="t", command=[name], env=env)  # a graph stored before the rule: refused at run start
    tools = ToolsConfig(allow=(str(wrapper), "wc"), node_env=("GREETING",))
    assert f"env sets {variable} is read by the loader, a shell or an interpreter" in str(refusal(node, tools))
    with pytest.raises(ValueError, match=f"{variable} is read by the loader"):
        ToolsConfig(allow=("wc",), node_env=(variable,))  # no plait.toml can allow it either


def test_a_node_sets_only_the_variables_the_deployer_allows(sqlite: Store, tmp_path: Path) -> None:
    path = graph(tmp_path, [{"id": "t", "type": "TOOL", "command": ["sh", "-c", "echo $GREETING"],
                             "env": {"GREETING": "hi {{ input.who }}"}}])  # fmt: skip
    with pytest.raises(EngineError, match=r"env sets GREETING, which plait.toml \[tools\] node_env does not list"):
        run(sqlite, path, {"who": "there"}, ToolsConfig(allow=("sh",)))
    outcome = run(sqlite, path, {"who": "there"}, ToolsConfig(allow=("sh",), node_env=("GREETING",)))
    assert outcome.output == {"text": "hi there\n"}


def test_a_program_reaches_the_network_only_where_tools_network_names_it(sqlite: Store, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo unreachable"
        path = graph(tmp_path, [{"id": "t", "type": "TOOL", "command": ["bash", "-c", probe]}])
        closed = run(sqlite, path, {}, ToolsConfig(allow=("bash",)))
        opened = run(sqlite, path, {}, ToolsConfig(allow=("bash",), network=("bash",)))
    assert closed.output == {"text": "unreachable\n"}
    assert opened.output == {"text": "reached\n"}


def test_without_a_jail_tool_and_python_nodes_are_refused_before_the_run_starts(sqlite: Store, tmp_path: Path) -> None:
    from plait.config import JailConfig

    missing = JailConfig(bwrap=str(tmp_path / "no-bwrap"))
    tool = graph(tmp_path, [{"id": "t", "type": "TOOL", "command": ["wc", "-l"]}])
    with pytest.raises(EngineError, match=r"node 't' is a TOOL node, which cannot run here: .*bubblewrap"):
        run(sqlite, tool, {}, ToolsConfig(allow=("wc",)), jail=missing)
    python = {"id": "p", "type": "CODE", "language": "python", "code": "def main(i, n):\n    return 1\n"}
    code = graph(tmp_path, [python])
    with pytest.raises(EngineError, match=r'node .p. is Python CODE, which cannot run here: .*\[jail\] mode = "none"'):
        run(sqlite, code, {}, ToolsConfig(), jail=missing)
    unconfined = run(sqlite, tool, {}, ToolsConfig(allow=("wc",)), jail=JailConfig(mode="none", bwrap="no-bwrap"))
    assert unconfined.status == RunStatus.COMPLETED  # the deployer's explicit choice
