"""A cgroup per jailed program: a bound on its processes and on the memory of all of them.

Rlimits bound one process each; a program that forks gets a fresh allowance per child. A cgroup
counts every process the program starts, however it starts them: `pids.max` stops a fork bomb at
the limit, and the memory limit holds for all of them together (a process over it is killed by
the kernel, and the node fails saying so). The jail's first process is moved into the cgroup
before it runs the program (bubblewrap waits on `--block-fd` until that is done), so everything it
starts is counted.

Making a cgroup needs a writable cgroup tree: root on cgroup v1 (each controller its own
hierarchy), or a cgroup v2 folder with the memory and pids controllers enabled for its children
(`[jail] cgroup`, delegated to Plait; by default Plait's own cgroup is tried). Where neither works
(an unprivileged user without delegation, most containers), `support` says why, and the callers
fall back to what the kernel gives any user: RLIMIT_NPROC in the jail's own user namespace and
RLIMIT_AS per process (see `plait/sandbox/python.py`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_MOUNTINFO = "/proc/self/mountinfo"
_MEMBERSHIP = "/proc/self/cgroup"


@dataclass(frozen=True, slots=True)
class CgroupTree:
    """Where per-node cgroups are made: one folder (v2), or the memory and pids folders (v1)."""

    version: int
    memory: Path
    pids: Path

    def describe(self) -> str:
        if self.version == 2:
            return f"cgroup v2 under {self.memory}"
        return f"cgroup v1 under {self.memory} and {self.pids}"


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """Whether per-node cgroups can be made here, and where; or why not."""

    tree: CgroupTree | None
    problem: str | None = None


class NodeCgroup:
    """One program's cgroup: made with its limits, joined by the jail's first process, read for
    what happened, then emptied and removed."""

    def __init__(self, tree: CgroupTree, *, processes: int, memory_bytes: int | None) -> None:
        self.tree = tree
        name = f"plait-{os.getpid()}-{time.monotonic_ns()}"
        self.folders = [tree.memory / name] if tree.version == 2 else [tree.memory / name, tree.pids / name]
        made: list[Path] = []
        try:
            for folder in self.folders:
                folder.mkdir()
                made.append(folder)
            self._limit(processes, memory_bytes)
        except OSError:
            for folder in made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise

    @property
    def _memory(self) -> Path:
        return self.folders[0]

    @property
    def _pids(self) -> Path:
        return self.folders[-1]

    def _limit(self, processes: int, memory_bytes: int | None) -> None:
        (self._pids / "pids.max").write_text(str(processes))
        if memory_bytes is None:
            return
        if self.tree.version == 2:
            (self._memory / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # no swap accounting: nothing to switch off
                (self._memory / "memory.swap.max").write_text("0")
        else:
            (self._memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # memsw exists only with swap accounting
                (self._memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))

    def join(self, pid: int) -> None:
        """Move process `pid` (not yet running the program) into the cgroup."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of the program for going over the memory limit."""
        if self.tree.version == 2:
            return _counter(self._memory / "memory.events", "oom_kill") > 0
        return _counter(self._memory / "memory.oom_control", "oom_kill") > 0

    def processes_exhausted(self) -> bool:
        """Whether the program tried to start more processes than its limit."""
        return _counter(self._pids / "pids.events", "max") > 0

    def destroy(self, wait_s: float = 5.0) -> bool:
        """Kill whatever is left in the cgroup and remove it (blocking: call it on a thread).
        False when it could not be removed in `wait_s` (the start-up sweep removes it later)."""
        deadline = time.monotonic() + wait_s
        left = list(self.folders)
        while left:
            self._kill()
            for folder in list(left):
                try:
                    folder.rmdir()
                    left.remove(folder)
                except FileNotFoundError:
                    left.remove(folder)
                except OSError:
                    pass
            if left and time.monotonic() > deadline:
                return False
            if left:
                time.sleep(0.01)
        return True

    def _kill(self) -> None:
        if self.tree.version == 2:
            with contextlib.suppress(OSError):
                (self._memory / "cgroup.kill").write_text("1")
                return
        for folder in self.folders:
            with contextlib.suppress(OSError):
                for line in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(line), signal.SIGKILL)


def _counter(path: Path, key: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


@functools.cache
def support(delegated: str | None = None) -> CgroupSupport:
    """Whether per-node cgroups can be made here (checked once per process by making one)."""
    try:
        tree = _find_tree(delegated)
    except OSError as exc:
        return CgroupSupport(None, f"the cgroup tree cannot be read ({exc.strerror or exc})")
    if isinstance(tree, str):
        return CgroupSupport(None, tree)
    try:
        NodeCgroup(tree, processes=8, memory_bytes=64 * 1024 * 1024).destroy()
    except OSError as exc:
        return CgroupSupport(None, f"{tree.describe()} is not writable by Plait ({exc.strerror or exc})")
    _sweep(tree)
    return CgroupSupport(tree)


def _sweep(tree: CgroupTree) -> None:
    """Remove the cgroups that Plait processes no longer running left behind (a crash, a kill)."""
    for parent in {tree.memory, tree.pids}:
        with contextlib.suppress(OSError):
            for folder in parent.glob("plait-*-*"):
                pid = folder.name.split("-")[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    with contextlib.suppress(OSError):
                        folder.rmdir()


def _find_tree(delegated: str | None) -> CgroupTree | str:
    """Where to make cgroups, or why there is nowhere."""
    if delegated is not None:
        folder = Path(delegated)
        controllers = _read_words(folder / "cgroup.subtree_control")
        if not {"memory", "pids"} <= controllers:
            return f"[jail] cgroup {folder} does not enable memory and pids for its children (cgroup.subtree_control)"
        return CgroupTree(2, folder, folder)
    mounts = _mounts()
    membership = _membership()
    memory, pids = (_join(mounts[n], membership.get(n)) if n in mounts else None for n in ("memory", "pids"))
    if memory is not None and pids is not None:
        return CgroupTree(1, memory, pids)
    if "" in mounts:
        own = _join(mounts[""], membership.get(""))
        if own is not None and {"memory", "pids"} <= _read_words(own / "cgroup.subtree_control"):
            return CgroupTree(2, own, own)
        return (
            "cgroup v2 has no memory and pids controllers enabled below Plait's own cgroup; "
            "delegate a cgroup to Plait and name it in [jail] cgroup"
        )
    return "no cgroup tree with the memory and pids controllers is mounted"


def _mounts() -> dict[str, tuple[str, str]]:
    """controller (v2: "") → (mount point, root of the mount)."""
    found: dict[str, tuple[str, str]] = {}
    for line in Path(_MOUNTINFO).read_text().splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        fstype, options = fields[dash + 1], fields[dash + 3] if len(fields) > dash + 3 else ""
        if fstype == "cgroup2":
            found.setdefault("", (fields[4], fields[3]))
        elif fstype == "cgroup":
            for option in options.split(","):
                if option in ("memory", "pids"):
                    found.setdefault(option, (fields[4], fields[3]))
    return found


def _membership() -> dict[str, str]:
    """controller (v2: "") → this process's cgroup path."""
    found: dict[str, str] = {}
    for line in Path(_MEMBERSHIP).read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _join(mount: tuple[str, str], path: str | None) -> Path | None:
    if path is None:
        return None
    point, root = mount
    relative = path[len(root) :] if root != "/" and path.startswith(root) else path
    return Path(point) / relative.lstrip("/")


def _read_words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()
