"""The jail around TOOL programs and Python CODE, crossed from inside: real bubblewrap, real
processes, the host's /proc checked from outside. Node-level reproductions are in
tests/tools/test_tool_jail.py."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from plait.config import CodeConfig, JailConfig, ToolsConfig, unsafe_variable
from plait.sandbox import folders
from plait.sandbox.confinement import Confinement, for_python, for_tool, refusal
from plait.sandbox.jail import problem
from plait.sandbox.programs import ProgramResult, run_program
from plait.sandbox.python import PythonCodeError, run_python
from tests.jail_support import (
    kill_all,
    live_processes_naming,
    processes_naming,
    require_cgroups,
    require_jail,
    running_sleeps,
)

SH = shutil.which("sh") or "/bin/sh"
BASH = shutil.which("bash") or "/bin/bash"


def jailed(
    argv: list[str], config: JailConfig, *, network: bool = False, timeout_s: float = 30, **kw: object
) -> ProgramResult:
    tools = ToolsConfig(allow=(argv[0],), network=(argv[0],) if network else ())
    confinement = for_tool(argv[0], network, tools, config)
    return asyncio.run(
        run_program(argv, env={"LANG": "C.UTF-8"}, timeout_s=timeout_s, max_output_bytes=1_000_000,
                    confinement=confinement, **kw)  # type: ignore[arg-type]
    )  # fmt: skip


def python(code: str, config: JailConfig, **limits: int) -> object:
    settings = CodeConfig(python=True, **limits)  # type: ignore[arg-type]
    executable, confinement = for_python(sys.executable, settings, config)
    return asyncio.run(
        run_python(code, {}, {}, timeout_s=30, memory_mb=settings.memory_mb, max_output_bytes=100_000,
                   processes=settings.processes, confinement=confinement, executable=executable)
    )  # fmt: skip


def test_a_jailed_program_sees_the_system_folders_read_only_and_nothing_of_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = require_jail()
    secret = tmp_path / "plait.toml"
    secret.write_text("api_key = 'SECRET-IN-A-HOST-FILE'\n")
    monkeypatch.setenv("PLAIT_CANARY", "SECRET-IN-THE-ENVIRONMENT")
    script = f"""
        echo "root: $(ls -A / | tr '\\n' ' ')"
        echo "etc: $(ls -A /etc | tr '\\n' ' ')"
        cat {secret} 2>&1
        cat /proc/{os.getpid()}/environ 2>&1
        echo "pids: $(ls /proc | grep -c '^[0-9]')"
        touch /usr/written 2>/dev/null && echo "usr: writable" || echo "usr: read-only"
        echo data > /tmp/mine && echo "tmp: $(cat /tmp/mine)"
        echo "cwd: $(pwd) home: $HOME host: $(hostname)"
    """
    ran = jailed([SH, "-c", script], config)
    text = ran.stdout.decode()
    assert ran.exit_code == 0, ran
    lines = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line and not line.startswith("cat"))
    assert set(lines["root"].split()) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin",
                                          "tmp", "usr"}  # fmt: skip
    assert set(lines["etc"].split()) <= {"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"}
    assert "SECRET-IN-A-HOST-FILE" not in text
    assert "SECRET-IN-THE-ENVIRONMENT" not in text
    assert int(lines["pids"]) < 10  # the jail's own processes, not the host's
    assert lines["usr"] == "read-only"
    assert lines["tmp"] == "data"
    assert lines["cwd"] == "/tmp home: /tmp host: plait-jail"


def test_a_jailed_program_reaches_the_network_only_where_the_deployer_allows_it() -> None:
    config = require_jail()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        probe = [BASH, "-c", f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo unreachable"]
        assert jailed(probe, config).stdout.decode().strip() == "unreachable"
        assert jailed(probe, config, network=True).stdout.decode().strip() == "reached"


def test_the_writable_folder_is_bounded_and_never_on_the_host() -> None:
    config = require_jail(JailConfig(folder_mb=1))
    name = f"plait-jail-test-{os.getpid()}"
    ran = jailed([SH, "-c", f"echo x > /tmp/{name} && head -c 3000000 /dev/zero > /tmp/big"], config)
    assert ran.exit_code != 0
    assert "No space left on device" in ran.stderr_tail
    assert not (Path("/tmp") / name).exists()


@pytest.mark.parametrize("ends", ["exits", "times_out"])
def test_every_process_the_program_started_dies_with_it(ends: str) -> None:
    """A `setsid` grandchild and a double fork escape a process-group kill; the jail's pid
    namespace ends them all."""
    config = require_jail()
    marker = f"{os.getpid() % 1000}{time.monotonic_ns() % 10**6}"  # digits: sleep takes 600.<marker>
    script = (
        f"setsid sleep 600.{marker}1 >/dev/null 2>&1 & "
        f"(sh -c 'sleep 600.{marker}2 >/dev/null 2>&1 &' &) ; {running_sleeps(marker, 2)}; "
        + ("sleep 600" if ends == "times_out" else "exit 0")
    )
    try:
        ran = jailed([SH, "-c", script], config, timeout_s=3 if ends == "times_out" else 30)
        assert ran.timed_out == (ends == "times_out"), ran
        assert ran.stdout == b"2\n"  # both were running
        left = live_processes_naming(f"600.{marker}")
        assert left == [], [p.cmdline() for p in left]
    finally:
        kill_all(processes_naming(f"600.{marker}"))


def test_where_no_jail_can_be_made_programs_are_refused_saying_why_and_how_to_fix_it(tmp_path: Path) -> None:
    missing = JailConfig(bwrap=str(tmp_path / "bwrap"))
    said = problem(missing)
    assert said is not None
    assert "bubblewrap" in said
    assert "is not installed" in said
    assert "apt-get install bubblewrap" in said
    assert '[jail] mode = "none"' in said
    counter = tmp_path / "calls"
    failing = tmp_path / "failing-bwrap"
    said = "bwrap: No permissions to create new namespace"
    failing.write_text(f"#!/bin/sh\necho . >> {counter}\necho '{said}' >&2\nexit 1\n")
    failing.chmod(0o755)
    config = JailConfig(bwrap=str(failing))
    first = refusal(config)
    assert first is not None
    assert "No permissions to create new namespace" in first
    assert "user namespaces" in first
    assert refusal(config, python=True) == first
    assert counter.read_text().count(".") == 1  # found once per process, then remembered
    assert refusal(JailConfig(mode="none", bwrap=str(failing))) is None  # the deployer opted out


def test_python_code_is_bounded_in_processes() -> None:
    config = require_jail()
    code = (
        "import os, time\n"
        "def main(input, nodes):\n"
        "    forked = 0\n"
        "    try:\n"
        "        for _ in range(500):\n"
        "            if os.fork() == 0:\n"
        "                time.sleep(60)\n"
        "                os._exit(0)\n"
        "            forked += 1\n"
        "    except OSError as exc:\n"
        "        return {'forked': forked, 'error': type(exc).__name__}\n"
        "    return {'forked': forked}\n"
    )
    value = python(code, config, processes=16)
    assert value == {"forked": value["forked"], "error": "BlockingIOError"}, value  # type: ignore[index]
    assert value["forked"] < 16  # type: ignore[index]


def test_python_code_memory_is_bounded_across_all_its_processes() -> None:
    """Each child stays under the per-process limit; together they are over it."""
    config = require_jail()
    require_cgroups(config)
    code = (
        "import os, time\n"
        "def main(input, nodes):\n"
        "    children = []\n"
        "    for _ in range(3):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            block = b'x' * (100 * 1024 * 1024)\n"
        "            time.sleep(3)\n"
        "            os._exit(0)\n"
        "        children.append(pid)\n"
        "    return {'statuses': [os.waitpid(pid, 0)[1] for pid in children]}\n"
    )
    with pytest.raises(PythonCodeError) as raised:
        python(code, config, memory_mb=160)
    assert raised.value.kind == "memory"
    assert "processes together used more than the memory limit of 160 MB" in str(raised.value)


def test_python_code_sees_nothing_of_the_host_and_cannot_signal_it(monkeypatch: pytest.MonkeyPatch) -> None:
    config = require_jail()
    monkeypatch.setenv("PLAIT_CANARY", "SECRET-IN-THE-ENVIRONMENT")
    code = (
        "import os, signal, socket\n"
        "def main(input, nodes):\n"
        "    seen = {}\n"
        f"    for name, action in [('environ', lambda: open('/proc/{os.getpid()}/environ').read()),\n"
        f"                         ('kill', lambda: os.kill({os.getpid()}, signal.SIGKILL)),\n"
        "                         ('parent', lambda: os.kill(os.getppid(), signal.SIGKILL)),\n"
        f"                         ('folder', lambda: os.listdir({str(Path.cwd())!r})),\n"
        "                         ('net', lambda: socket.create_connection(('127.0.0.1', 5432), timeout=2))]:\n"
        "        try:\n"
        "            seen[name] = str(action())[:200]\n"
        "        except Exception as exc:\n"
        "            seen[name] = type(exc).__name__\n"
        "    return seen\n"
    )
    seen = python(code, config)
    assert "SECRET-IN-THE-ENVIRONMENT" not in str(seen)
    assert seen == {
        "environ": "FileNotFoundError",
        "kill": "ProcessLookupError",
        "parent": "None",  # the jail's own first process, which ignores it
        "folder": "FileNotFoundError",
        "net": "ConnectionRefusedError",  # PostgreSQL listens there on the host, not in the jail
    }, seen


def test_unconfined_folders_of_any_shape_are_removed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """`[jail] mode = "none"`: a host folder 2,500 levels deep is removed, on a thread."""
    threads: list[str] = []
    remove = folders.remove_tree

    def recording(path: str) -> None:
        threads.append(threading.current_thread().name)
        remove(path)

    monkeypatch.setattr("plait.sandbox.programs.remove_tree", recording)
    deep = (
        "import os\nprint(os.getcwd())\n"
        "for _ in range(2500):\n    os.mkdir('d'); os.chdir('d'); open('f', 'w').close()\n"
    )
    ran = asyncio.run(
        run_program([sys.executable, "-c", deep], env={}, timeout_s=60, max_output_bytes=10_000,
                    confinement=Confinement(None))
    )  # fmt: skip
    assert ran.exit_code == 0, ran
    folder = Path(ran.stdout.decode().strip())
    assert folder.parent.parent == folders.parent_folder()
    assert not folder.exists()
    assert threads
    assert threading.main_thread().name not in threads


def test_removing_a_tree_never_follows_its_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "link").symlink_to(outside)
    (tree / "a" / "file-link").symlink_to(outside / "keep")
    (tree / "a" / "b").chmod(0o500)
    folders.remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep").read_text() == "mine"


def test_leftovers_of_a_process_that_died_are_removed_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    crashed = subprocess.run(
        [sys.executable, "-c", "import os, signal\nfrom plait.sandbox.folders import new_folder\n"
         "folder = new_folder()\n(folder / 'left').write_text('x')\nprint(folder, flush=True)\n"
         "os.kill(os.getpid(), signal.SIGKILL)\n"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    left = Path(crashed.stdout.strip())
    assert left.exists()
    mine = folders.new_folder()
    monkeypatch.setattr(folders, "_swept", [])
    removed = folders.sweep_leftovers()
    assert str(left.parent) in removed
    assert not left.parent.exists()
    assert mine.exists()  # a running process's folders are its own
    folders.remove_tree(mine)
    assert folders.sweep_leftovers() == []  # once per process


@pytest.mark.parametrize(
    "name",
    ["LD_PRELOAD", "LD_LIBRARY_PATH", "ld_audit", "BASH_ENV", "ENV", "BASH_FUNC_f%%", "PYTHONSTARTUP", "PYTHONPATH",
     "PERL5OPT", "PERLLIB", "NODE_OPTIONS", "GCONV_PATH", "LOCPATH", "GLIBC_TUNABLES", "IFS", "RUBYOPT",
     "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SHELLOPTS", "PS4", "PROMPT_COMMAND", "MALLOC_CHECK_", "HOSTALIASES",
     "RES_OPTIONS", "NLSPATH", "TAR_OPTIONS", "GIT_SSH_COMMAND", "LESSOPEN", "OPENSSL_CONF", "LUA_INIT"],
)  # fmt: skip
def test_loader_shell_and_interpreter_variables_are_never_given(name: str) -> None:
    assert unsafe_variable(name) is not None
    with pytest.raises(ValueError, match=r"no program is ever given it|is not a variable name"):
        ToolsConfig(node_env=(name,))


@pytest.mark.parametrize("name", ["GREETING", "LANG", "LC_ALL", "TZ", "REPORT_TITLE"])
def test_ordinary_variables_may_be_allowed(name: str) -> None:
    assert unsafe_variable(name) is None
    assert ToolsConfig(node_env=(name,)).node_env == (name,)
