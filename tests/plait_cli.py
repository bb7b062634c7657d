"""`python -m plait ...` for the tests, as a real process, without paying for its start-up each time.

The suite runs the `plait` command several hundred times. Each fresh interpreter spends about a
second of CPU loading Plait and its libraries before the command does anything, and on a 2-core
CI machine that was a large share of the suite's time. So each test process keeps one warm
*start server*: an interpreter that has loaded Plait's packages once and, for every command,
forks a child that becomes `python -m plait ARGS`: its own process, with the test's arguments,
working directory, environment, stdin, stdout and stderr, its own exit code, killed at the
timeout. What the command does is unchanged; only the imports are shared. `run_plait` stands
for `subprocess.run`, `start_plait` for `subprocess.Popen` (servers, workers).

A command starts in a fresh interpreter instead when:
- its environment sets something read while modules load (Python's and Typer's own variables):
  a warm interpreter has already read it;
- `PLAIT_TEST_COLD_START=1` is set (to check the suite does not depend on the server), or the
  server could not start (a warning says why).
The tests of start-up itself, of Ctrl-C and of crashes use `subprocess` directly.
"""

from __future__ import annotations

import contextlib
import json
import locale
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
COLD = "PLAIT_TEST_COLD_START"
READ_AT_IMPORT = ("TYPER_USE_RICH", "TERMINAL_WIDTH", "_TYPER_FORCE_DISABLE_TERMINAL", "FORCE_COLOR", "PY_COLORS",
                  "GITHUB_ACTIONS")  # fmt: skip
"""Environment variables that Plait or its libraries read when a module loads: a command whose
environment differs from the server's in any of them (or in a `PYTHON*` variable) starts cold."""
PRELOAD = ("cli", "runs", "evolve", "engine", "store", "compile", "llm", "sandbox", "tools", "model", "api", "web",
           "worker")  # fmt: skip
"""Plait's packages the server loads, with their libraries."""
LIBRARIES = ("openai",)
"""Libraries Plait imports only when a command first needs them, loaded too: the OpenAI client
(some 500 modules, most of a second of CPU) serves the loopback providers of many tests."""


def run_plait(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None, input: str | None = None,
              timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`subprocess.run([python, "-m", "plait", *args], capture_output=True, text=True, ...)`: the
    same result, the same `TimeoutExpired` (the process killed first) and, with `check`, the same
    `CalledProcessError`."""
    command = [sys.executable, "-m", "plait", *args]
    environment = _environment(env)
    server = None if _starts_cold(environment) else _server()
    if server is None:
        return subprocess.run(command, cwd=cwd, env=environment, input=input, capture_output=True, text=True,
                              timeout=timeout, check=check)  # fmt: skip
    done = server.run(command, os.path.abspath(cwd or os.getcwd()), environment, input, timeout)
    if check:
        done.check_returncode()
    return done


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    """The command's environment: `env` (or this process's), and always the test's own per-user
    store (`PLAIT_HOME`), so a command given a bare environment does not use the runner's."""
    environment = dict(os.environ if env is None else env)
    if "PLAIT_HOME" in os.environ:
        environment.setdefault("PLAIT_HOME", os.environ["PLAIT_HOME"])
    return environment


def bare_env(**variables: str) -> dict[str, str]:
    """An environment of `variables` only, for a command that must not see the runner's settings,
    but with this process's `PYTHON*` variables: the interpreter reads them as it starts, so a
    command without them (where the runner sets some, as CI machines do) would start cold, in a
    fresh interpreter paying seconds of imports."""
    return {**{k: v for k, v in os.environ.items() if k.startswith("PYTHON")}, **variables}


def start_plait(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
                stdout: Any = None, stderr: Any = None, text: bool = False) -> Any:  # fmt: skip
    """`subprocess.Popen([python, "-m", "plait", *args], ...)` for a long-running command (a server,
    a worker): a `Popen`, or a `WarmProcess` that answers the same calls (`pid`, `poll`, `wait`,
    `send_signal`, `terminate`, `kill`, `returncode`, `stdout`/`stderr` pipes). `stdout` and
    `stderr` as for `Popen`: None, `DEVNULL`, `PIPE`, a file, or `STDOUT` for stderr."""
    command = [sys.executable, "-m", "plait", *args]
    environment = _environment(env)
    server = None if _starts_cold(environment) else _server()
    if server is None:
        return subprocess.Popen(command, cwd=cwd, env=environment, stdout=stdout, stderr=stderr, text=text)
    return WarmProcess(server, command, os.path.abspath(cwd or os.getcwd()), environment, stdout, stderr, text)


class WarmProcess:
    """A command the start server runs, seen as `subprocess.Popen` sees its child."""

    def __init__(self, server: _Server, command: list[str], cwd: str, env: dict[str, str], stdout: Any,
                 stderr: Any, text: bool) -> None:  # fmt: skip
        self.args = command
        self.returncode: int | None = None
        self.stdin = None
        ours: list[int] = []  # our ends of pipes, and /dev/null: closed once the child has them
        theirs = [os.open(os.devnull, os.O_RDONLY)]
        ours.append(theirs[0])
        self.stdout, out = self._stream(stdout, 1, ours, text)
        theirs.append(out)
        if stderr == subprocess.STDOUT:
            self.stderr, err = None, out
        else:
            self.stderr, err = self._stream(stderr, 2, ours, text)
        theirs.append(err)
        try:
            self._connection, self.pid = server.start(command[3:], cwd, env, theirs)
        finally:
            for fd in ours:
                os.close(fd)
        self._pending = b""

    @staticmethod
    def _stream(spec: Any, inherited: int, ours: list[int], text: bool) -> tuple[IO[Any] | None, int]:
        """The parent's end (for `PIPE`) and the descriptor the child writes to."""
        if spec is None:
            return None, inherited
        if spec == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_WRONLY)
            ours.append(fd)
            return None, fd
        if spec == subprocess.PIPE:
            read, write = os.pipe()
            ours.append(write)
            return (open(read, encoding=locale.getpreferredencoding(False)) if text else open(read, "rb")), write
        return None, spec if isinstance(spec, int) else spec.fileno()

    def poll(self) -> int | None:
        if self.returncode is None:
            self._connection.setblocking(False)
            try:
                self._read_status()
            except BlockingIOError:
                pass
            finally:
                if self.returncode is None:
                    self._connection.setblocking(True)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._connection.settimeout(timeout)
            try:
                self._read_status()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        assert self.returncode is not None
        return self.returncode

    def _read_status(self) -> None:
        while not self._pending.endswith(b"\n"):
            byte = self._connection.recv(64)
            if not byte:
                raise RuntimeError("the start server closed the connection before the command ended")
            self._pending += byte
        self.returncode = os.waitstatus_to_exitcode(int(json.loads(self._pending)["status"]))
        self._connection.close()

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """What the pipes gave until the command ended (read whole: enough for what tests print)."""
        self.wait(timeout)
        return (self.stdout.read() if self.stdout else None), (self.stderr.read() if self.stderr else None)

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            _signal(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> WarmProcess:
        return self

    def __exit__(self, *_: object) -> None:
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


def _starts_cold(env: dict[str, str]) -> bool:
    if os.environ.get(COLD) == "1" or env.get(COLD) == "1":
        return True
    base = _server_env()
    keys = {k for k in {*env, *base} if k.startswith("PYTHON") or k in READ_AT_IMPORT}
    return any(env.get(k) != base.get(k) for k in keys)


def _server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in READ_AT_IMPORT}


class _Server:
    """The client side: one start server per test process, started on first use."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="plait-start-")
        self.path = os.path.join(self.folder, "socket")
        code = (
            f"import sys; base = sys.path[1:]; sys.path.insert(0, {str(ROOT)!r}); "
            f"from tests.plait_cli import _serve; _serve({self.path!r}, base)"
        )
        self.log = open(os.path.join(self.folder, "log"), "w+")  # noqa: SIM115 (kept open while it runs)
        self.process = subprocess.Popen([sys.executable, "-c", code], env=_server_env(), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, text=True)  # fmt: skip
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            self.process.wait()
            self.log.seek(0)
            raise RuntimeError(f"the start server did not come up: {self.log.read()[-2000:]}")

    def start(self, args: list[str], cwd: str, env: dict[str, str], fds: list[int]) -> tuple[socket.socket, int]:
        """Start `plait ARGS` on descriptors `fds` (stdin, stdout, stderr): the connection on
        which its wait status will come, and its pid."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.path)
            request = json.dumps({"argv": args, "cwd": cwd, "env": env}).encode()
            socket.send_fds(connection, [b"%015d\n" % len(request)], fds)
            connection.sendall(request)
            return connection, int(_reply(connection)["pid"])
        except BaseException:
            connection.close()
            raise

    def run(self, command: list[str], cwd: str, env: dict[str, str], input: str | None,
            timeout: float) -> subprocess.CompletedProcess[str]:  # fmt: skip
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            stdin.write((input or "").encode())
            stdin.seek(0)
            connection, pid = self.start(command[3:], cwd, env, [stdin.fileno(), out.fileno(), err.fileno()])
            with connection:
                connection.settimeout(timeout)
                try:
                    status, timed_out = int(_reply(connection)["status"]), False
                except TimeoutError:
                    _kill(pid)
                    connection.settimeout(None)
                    status, timed_out = int(_reply(connection)["status"]), True
            output, errors = _text(out), _text(err)
        if timed_out:
            raise subprocess.TimeoutExpired(command, timeout, output=output, stderr=errors)
        return subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(status), output, errors)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # the server exits when its stdin closes
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _reply(connection: socket.socket) -> dict[str, Any]:
    """One line the server's waiter sent (its replies are a few bytes: read byte by byte)."""
    line = b""
    while not line.endswith(b"\n"):
        byte = connection.recv(1)
        if not byte:
            raise RuntimeError("the start server closed the connection before the command ended")
        line += byte
    reply: dict[str, Any] = json.loads(line)
    return reply


def _kill(pid: int) -> None:
    _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _text(file: IO[bytes]) -> str:
    """What `text=True` gives: the locale's encoding, newlines made `\\n`."""
    file.seek(0)
    return file.read().decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_lock = threading.Lock()
_started: list[_Server | None] = []


def _server() -> _Server | None:
    with _lock:
        if not _started:
            try:
                _started.append(_Server())
            except (OSError, RuntimeError) as exc:  # correct without it, only slower: say so
                warnings.warn(f"plait commands start cold: {exc}", stacklevel=3)
                _started.append(None)
        return _started[0]


def close_server() -> None:
    """Stop this test process's start server, if it started (at the end of the session)."""
    with _lock:
        if _started and _started[0] is not None:
            _started[0].close()
        _started.clear()


HEAD = 16
"""Bytes of a request's first part: its size, in digits, and a newline."""

# --- the server side: runs in its own interpreter, never in a test process ---


def _serve(path: str, base_path: list[str]) -> None:
    """Load Plait, then fork a child per command. Returns only in such a child, which then
    becomes the command (so the interpreter's own shutdown runs at its end, as in a fresh one).
    `base_path`: `sys.path` as the interpreter set it, without the `-c` entry."""
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters are reaped by the kernel
    print("ready", flush=True)
    request = _loop(listener)
    _become(request, base_path)


def _preload() -> None:
    import gc
    import importlib
    import pkgutil

    import plait

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for package in PRELOAD:
            module = importlib.import_module(f"plait.{package}")
            for found in pkgutil.walk_packages(module.__path__, f"plait.{package}."):
                if not found.name.endswith("__main__") and ".migrations" not in found.name:  # Alembic's scripts
                    importlib.import_module(found.name)
        for library in LIBRARIES:
            importlib.import_module(library)
    assert plait.__file__ is not None
    if threading.active_count() != 1:  # a thread would be missing, and its locks held, in a fork
        raise SystemExit("the start server loaded a module that starts a thread")
    gc.collect()
    gc.freeze()  # the children's collector leaves the loaded objects alone: their pages stay shared


def _loop(listener: socket.socket) -> dict[str, Any]:
    """Accept commands until stdin closes; in a command's child, return its request."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is sys.stdin:
                raise SystemExit(0)
            connection, _ = listener.accept()
            fds: list[int] = []
            try:
                head, fds, _, _ = socket.recv_fds(connection, HEAD, 3)  # the request's size, and its files
                size = int(head + _receive(connection, HEAD - len(head)))
                request = json.loads(_receive(connection, size))
            except (OSError, ValueError):  # a client that went away: the next one is served
                request = None
            if request is not None and os.fork() == 0:  # the waiter: starts the command, reports its end
                selector.close()
                listener.close()
                return _wait_for_command(connection, fds, request)
            connection.close()
            for fd in fds:
                os.close(fd)


def _receive(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise OSError("the client closed the connection in the middle of its request")
        data += chunk
    return data


def _wait_for_command(connection: socket.socket, fds: list[int], request: dict[str, Any]) -> dict[str, Any]:
    """In the waiter: fork the command's process (which returns `request`), tell the client its
    pid, wait for it and tell its wait status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        connection.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        return request
    for fd in fds:
        os.close(fd)
    try:
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        connection.sendall(json.dumps({"status": status}).encode() + b"\n")
    finally:
        os._exit(0)


def _become(request: dict[str, Any], base_path: list[str]) -> None:
    """Turn this child into `python -m plait ARGS` as a fresh interpreter would start it. Its
    standard streams are the server's own objects, now on the command's files (descriptors 0-2):
    set up as a fresh interpreter sets up non-terminal streams, and empty."""
    import runpy

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.path[:] = [request["cwd"], *base_path]
    sys.argv = ["-m", *request["argv"]]
    runpy.run_module("plait", run_name="__main__", alter_sys=True)
