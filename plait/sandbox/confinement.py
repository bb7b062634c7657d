"""What confines one TOOL program or one Python CODE run, decided from plait.toml and this machine.

`[jail] mode = "bwrap"` (the default): the program runs in a bubblewrap jail (`jail.py`), and,
where a cgroup can be made (`cgroups.py`), bounded in processes (TOOL: `[tools] processes`;
Python: `[code] processes`) and, for Python CODE, in the memory of all its processes together
(`[code] memory_mb`). Where no jail can be made, nothing runs (`refusal` says why and how to fix
it) rather than running unconfined.

Python CODE must always be bounded in processes. Without a cgroup the bound is RLIMIT_NPROC,
which the kernel counts per user namespace, so per jail, but never applies to processes of the
host's root: a root Plait without a writable cgroup refuses Python CODE.

`[jail] mode = "none"`: the deployer has opted out; programs run unconfined (`jail=None`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from plait.config import CodeConfig, JailConfig, ToolsConfig
from plait.sandbox import cgroups
from plait.sandbox.folders import sweep_leftovers
from plait.sandbox.jail import Jail, make_jail, problem


@dataclass(frozen=True, slots=True)
class Bounds:
    """The per-program cgroup: where to make it, and its limits."""

    tree: cgroups.CgroupTree
    processes: int
    memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one program runs: in `jail` (None: unconfined), within `bounds` (None: no cgroup)."""

    jail: Jail | None
    bounds: Bounds | None = None


UNCONFINED = Confinement(None)


def refusal(config: JailConfig, *, python: bool = False) -> str | None:
    """Why no TOOL program (or, with `python`, no Python CODE) can run here, or None."""
    why = problem(config)
    if why is not None or config.mode == "none" or not python:
        return why
    if os.geteuid() == 0 and cgroups.support(config.cgroup).tree is None:
        reason = cgroups.support(config.cgroup).problem
        return (
            "Python CODE must be bounded in processes, and Plait runs as root here, where the kernel's per-user "
            f"limit does not apply, without a cgroup it can make ({reason}): run Plait as an unprivileged user, "
            'or give it a writable cgroup ([jail] cgroup), or set [jail] mode = "none" to run Python unconfined'
        )
    return None


def for_tool(path: str, network: bool, tools: ToolsConfig, config: JailConfig) -> Confinement:
    """The confinement of the allowed program at `path` (its file shown read-only in the jail)."""
    if config.mode == "none":
        return UNCONFINED
    tree = cgroups.support(config.cgroup).tree
    bounds = Bounds(tree, tools.processes) if tree is not None else None
    return Confinement(make_jail(config, network=network, shown=(path,)), bounds)


def for_python(executable: str, code: CodeConfig, config: JailConfig) -> tuple[str, Confinement]:
    """The interpreter to start (its real path) and its confinement: its install shown read-only,
    no network, bounded in processes and in the memory of all of them where a cgroup can be made."""
    real, install = python_install(executable)
    if config.mode == "none":
        return real, UNCONFINED
    tree = cgroups.support(config.cgroup).tree
    bounds = Bounds(tree, code.processes, code.memory_mb * 1024 * 1024) if tree is not None else None
    return real, Confinement(make_jail(config, shown=(real, install)), bounds)


def python_install(executable: str) -> tuple[str, str]:
    """(the interpreter's real path, the folder it is installed in): a virtual environment's
    `python` is a link to an interpreter installed elsewhere, which is what runs in the jail."""
    real = os.path.realpath(executable)
    if os.path.realpath(sys.executable) == real:
        return real, sys.base_prefix
    return real, os.path.dirname(os.path.dirname(real))


@dataclass(frozen=True, slots=True)
class ProgramStatus:
    """How this machine confines programs, for `plait config check` and the server's start-up."""

    mode: str
    line: str
    """`describe`'s sentence."""
    problem: str | None
    """Set when plait.toml allows programs or Python CODE that cannot run here for want of a jail."""

    @property
    def unconfined(self) -> bool:
        return self.mode == "none"

    def json(self) -> dict[str, object]:
        return {"jail": self.mode, "status": self.line, "problem": self.problem}


def program_status(config: JailConfig, tools: ToolsConfig, code: CodeConfig) -> ProgramStatus:
    """`describe`, and the problem when plait.toml allows programs that cannot run here."""
    problem = None
    why = refusal(config, python=code.python) if (tools.allow or code.python) else None
    if why is not None:
        problem = f"plait.toml allows TOOL programs or Python CODE, which cannot run here: {why}"
    return ProgramStatus(config.mode, describe(config), problem)


def describe(config: JailConfig) -> str:
    """One line for `plait config check` and the server's start-up: how programs are confined here."""
    if config.mode == "none":
        return (
            'UNCONFINED: [jail] mode = "none": TOOL programs and Python CODE run with this process\'s own rights '
            "(files, network, secrets in reach of every graph author)"
        )
    why = problem(config)
    if why is not None:
        return f"NO JAIL: TOOL and Python CODE nodes are refused here: {why}"
    support = cgroups.support(config.cgroup)
    if support.tree is not None:
        bounded = f"processes and memory bounded per program ({support.tree.describe()})"
    elif os.geteuid() == 0:
        bounded = f"no cgroup ({support.problem}), so Python CODE is refused while Plait runs as root"
    else:
        bounded = f"no cgroup ({support.problem}): Python CODE's processes bounded by RLIMIT_NPROC, memory per process"
    return f"jailed in bubblewrap; {bounded}"


def programs_at_start(config: JailConfig) -> str:
    """`describe`, marked so that nobody misses it when programs are unconfined or refused, after
    removing the folders that crashed processes left (a server's or a worker's start)."""
    sweep_leftovers()
    line = describe(config)
    return line if config.mode == "bwrap" and problem(config) is None else f"*** {line} ***"
