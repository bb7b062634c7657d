"""The bubblewrap command line that confines one TOOL program or one Python CODE run.

A jail has its own pid, network, IPC, UTS, user and cgroup namespaces, and its own mount
namespace holding only:

- the system folders, read-only: `/usr` and what `/bin`, `/sbin`, `/lib*` are on this machine,
  plus the few files of `/etc` that the loader and the time zone need (a program allowed the
  network also gets name resolution and the CA certificates);
- the program's own file when it lives outside those folders, and for Python CODE the
  interpreter's install, read-only at their own paths;
- a fresh `/proc` (the jail's processes only) and a minimal `/dev`;
- `/tmp`, the one writable place: a tmpfs of `[jail] folder_mb`, the program's working folder
  and `HOME`, gone with the jail.

Nothing of the project, the store, plait.toml, `$HOME` or the rest of `/etc` is there, nor the
host's processes or other runs' folders. There is no network unless the deployer allows it for
the program (`[tools] network`). Every process gets no capabilities, cannot make user namespaces
of its own, runs in a new session (no terminal to inject into) and is killed with the jail:
bubblewrap's `--die-with-parent`, and the pid namespace dies with its first process.

Whether a jail can be made here is found once per process (`problem`), by making one.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from plait.config import JailConfig

WORKDIR = "/tmp"
"""The jail's writable folder: its working folder, HOME and TMPDIR."""
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
"""What of /etc every program sees: the loader's cache and `alternatives` (Debian's symlinks for
awk, editors...), the time zone. Not passwd, not shadow, not ssl/private, not the host's names."""
NETWORK_ETC = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "services", "protocols")
NETWORK_ETC_FOLDERS = ("ssl/certs", "ca-certificates", "pki/tls/certs")
"""What a program allowed the network also sees: name resolution and the CA certificates."""
HOSTNAME = "plait-jail"
INSTALL = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
OPT_OUT = 'or set [jail] mode = "none" in plait.toml to run TOOL programs and Python CODE unconfined'


@dataclass(frozen=True, slots=True)
class Jail:
    """How one program is confined: resolved settings plus what this program may see."""

    bwrap: str
    """The bubblewrap executable (an absolute path)."""
    folder_bytes: int
    """Size of the writable /tmp."""
    network: bool = False
    shown: tuple[str, ...] = ()
    """Host paths shown read-only at the same place (the program's file, an interpreter's install)."""

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], *, info_fd: int | None = None, block_fd: int | None = None
    ) -> list[str]:
        """bwrap's argv running `argv` (its first item an absolute path) with exactly `env`."""
        line = [self.bwrap, *_system_folders(), *_etc(self.network)]
        for path in self.shown:
            if not _is_system(path):
                line += ["--ro-bind", path, path]
        line += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.folder_bytes), "--tmpfs", WORKDIR]
        line += ["--chdir", WORKDIR, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
        if self.network:
            line.append("--share-net")
        line += ["--hostname", HOSTNAME, "--die-with-parent", "--new-session", "--clearenv"]
        for name, value in {**env, "HOME": WORKDIR, "TMPDIR": WORKDIR}.items():
            line += ["--setenv", name, value]
        if info_fd is not None:
            line += ["--info-fd", str(info_fd)]
        if block_fd is not None:
            line += ["--block-fd", str(block_fd)]
        return [*line, "--", *argv]


def _system_folders() -> list[str]:
    line: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            line += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            line += ["--ro-bind", folder, folder]
    return line


def _etc(network: bool) -> list[str]:
    names: Iterable[str] = ETC + (NETWORK_ETC + NETWORK_ETC_FOLDERS if network else ())
    line: list[str] = []
    for name in names:
        path = f"/etc/{name}"
        if os.path.exists(path):
            line += ["--ro-bind", path, path]
    return line


def _is_system(path: str) -> bool:
    """Whether `path` is already in the jail (under a system folder, its symlinks resolved)."""
    inside = [f for f in SYSTEM_FOLDERS if os.path.isdir(f)]
    return all(any(p == f or p.startswith(f + "/") for f in inside) for p in (path, os.path.realpath(path)))


def resolve_bwrap(name: str) -> str | None:
    """The bubblewrap executable `[jail] bwrap` names (absolute path, or found on PATH), or None."""
    found = name if os.path.isabs(name) else shutil.which(name)
    return found if found is not None and os.access(found, os.X_OK) else None


def make_jail(config: JailConfig, *, network: bool = False, shown: Iterable[str] = ()) -> Jail:
    """The jail for one program, from `[jail]`; call only where `problem(config)` is None."""
    bwrap = resolve_bwrap(config.bwrap)
    assert bwrap is not None, "checked by problem()"
    return Jail(bwrap, config.folder_mb * 1024 * 1024, network=network, shown=tuple(shown))


def problem(config: JailConfig) -> str | None:
    """Why no program can run here as `[jail]` asks (None: it can). Unconfined mode has none."""
    if config.mode == "none":
        return None
    return _probe(config.bwrap, config.folder_mb)


@functools.cache
def _probe(bwrap_name: str, folder_mb: int) -> str | None:
    """Make one jail and run `true` in it: once per process and setting, ~20 ms."""
    lead = "TOOL programs and Python CODE run in a bubblewrap jail"
    if not sys.platform.startswith("linux"):
        return f"{lead}, which needs Linux (this is {sys.platform}); {OPT_OUT}"
    bwrap = resolve_bwrap(bwrap_name)
    if bwrap is None:
        return f"{lead}, and bubblewrap ({bwrap_name}) is not installed here: {INSTALL}, {OPT_OUT}"
    true = shutil.which("true") or "/bin/true"
    jail = Jail(bwrap, folder_mb * 1024 * 1024, shown=(true,))
    try:
        done = subprocess.run(jail.command([true], {}), env={}, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        said = str(exc)
    else:
        if done.returncode == 0:
            return None
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        said = lines[-1] if lines else f"exit status {done.returncode}"
    return (
        f"{lead}, and {bwrap} cannot make one here ({said}): this machine must allow user namespaces "
        f"(e.g. sysctl kernel.unprivileged_userns_clone=1, or a container started with them), {OPT_OUT}"
    )
