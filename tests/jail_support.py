"""What the jail tests need from the machine: bubblewrap that can make a jail, and for the memory
bound a writable cgroup. Missing on a developer's machine: the test skips saying what to install.
Missing in CI (`CI` set): the test fails, because .ci/run installs bubblewrap and CI runs as root."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import psutil

from plait.config import JailConfig
from plait.sandbox import cgroups
from plait.sandbox.jail import problem
from plait.testing import skip_or_fail


def require_jail(config: JailConfig | None = None) -> JailConfig:
    """`config` (default: the default `[jail]`) once a jail can be made here."""
    config = config or JailConfig()
    why = problem(config)
    if why is not None:
        skip_or_fail(why, in_ci="CI must run the jail tests: .ci/run installs bubblewrap")
    return config


def require_cgroups(config: JailConfig) -> None:
    """Fail (CI) or skip unless per-program cgroups can be made here."""
    support = cgroups.support(config.cgroup)
    if support.tree is None:
        skip_or_fail(f"no writable cgroup here: {support.problem}", in_ci="CI must run the cgroup tests, as root")


def processes_naming(marker: str) -> list[psutil.Process]:
    """The host's processes whose command line holds `marker` (this process excepted)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if process.pid != os.getpid() and marker in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def live_processes_naming(marker: str, within_s: float = 15.0) -> list[psutil.Process]:
    """The processes naming `marker` still running (zombies count as ended) once they have all
    ended or `within_s` has passed: the kernel ends a jail's processes at once, but a loaded host
    may take a moment to show it."""
    deadline = time.monotonic() + within_s
    while (left := [p for p in processes_naming(marker) if p.status() != "zombie"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_all(processes: Iterator[psutil.Process] | list[psutil.Process]) -> None:
    """Leave nothing behind, even when the code under test did."""
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()


def running_sleeps(marker: str, expected: int) -> str:
    """A shell snippet, run inside the jail, that prints how many `sleep 600.<marker>...` processes
    run there, once `expected` of them do (or after 20 s): proof that they were alive."""
    count = f"for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^sleep 600[.]{marker}'"
    return (
        f"i=0; while [ $i -lt 200 ]; do n=$({count}); [ $n -ge {expected} ] && break; sleep 0.1; i=$((i+1)); done; "
        "echo $n"
    )
