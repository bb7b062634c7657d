"""Host folders for programs that run unconfined (`[jail] mode = "none"`), and their removal.

In the jail a program's writable folder is a tmpfs of its own mount namespace: it vanishes with
the jail and nothing is left on the host. Unconfined, a program needs a real folder. Every such
folder lives under one Plait-owned parent, in a subfolder per process (`<pid>-<start time>`), so
that what a crashed process left behind can be found and removed at the next start without
touching the folders of processes still running.

A program decides the shape of what it leaves: thousands of levels deep, hundreds of thousands of
files. `remove_tree` works without recursion, without building paths longer than one name, and
holding at most two descriptors, and callers run it on a thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import tempfile
import threading
from pathlib import Path

import psutil

_sweep_lock = threading.Lock()
_swept: list[bool] = []


def parent_folder() -> Path:
    """The Plait-owned folder under which unconfined programs get their folders (mode 0700)."""
    parent = Path(tempfile.gettempdir()) / f"plait-programs-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    info = parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(f"{parent} is not a folder owned by this user; remove it")
    return parent


@functools.cache
def _process_folder_name() -> str:
    return f"{os.getpid()}-{int(psutil.Process().create_time() * 1000)}"


def new_folder() -> Path:
    """A fresh, empty folder for one program, under this process's own subfolder."""
    mine = parent_folder() / _process_folder_name()
    mine.mkdir(mode=0o700, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=mine))


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove `path` and everything under it, whatever its depth or width; symlinks are removed,
    never followed. Blocking: call it on a thread."""
    top = os.fspath(path)
    try:
        info = os.lstat(top)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(top)
        return
    root = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _empty(root)
    finally:
        os.close(root)
    os.rmdir(top)


def _empty(root: int) -> None:
    """Empty the folder open as `root`: files are unlinked; a folder that is not empty has its
    entries moved up into `root` (one level nearer), then is removed. Each pass over `root` takes
    one level off every tree below it, so depth costs passes, never recursion or path length."""
    hoisted = 0
    while True:
        with os.scandir(root) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        if not names:
            return
        for name, is_dir in names:
            if not is_dir:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=root)
                continue
            try:
                os.rmdir(name, dir_fd=root)
                continue
            except OSError:
                pass
            hoisted = _hoist(root, name, hoisted)


def _hoist(root: int, name: str, counter: int) -> int:
    """Move the entries of `root/name` into `root` (under new names), then remove `root/name`."""
    child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
    try:
        os.chmod(child, 0o700)  # a folder the program made read-only is still ours to empty
        with os.scandir(child) as entries:
            inner = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for entry, is_dir in inner:
            if is_dir:  # moving a folder rewrites its `..`: it must be writable
                with contextlib.suppress(OSError):
                    os.chmod(entry, 0o700, dir_fd=child)
            while True:
                counter += 1
                try:
                    os.rename(entry, f".plait-up-{counter}", src_dir_fd=child, dst_dir_fd=root)
                    break
                except OSError as exc:  # the program made an entry of that name: take the next
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                        raise
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=root)
    return counter


def sweep_leftovers() -> list[str]:
    """Remove the program folders of Plait processes that are no longer running (a crash, a kill);
    once per process. Returns what was removed. Blocking: call it on a thread."""
    with _sweep_lock:
        if _swept:
            return []
        _swept.append(True)
        removed: list[str] = []
        try:
            parent = parent_folder()
            subfolders = list(parent.iterdir())
        except OSError:
            return removed
        for folder in subfolders:
            if folder.name != _process_folder_name() and not _still_running(folder.name):
                with contextlib.suppress(OSError):
                    remove_tree(folder)
                    removed.append(str(folder))
        return removed


def _still_running(name: str) -> bool:
    """Whether the process that named its folder `name` (`<pid>-<start ms>`) still runs."""
    pid, _, started = name.partition("-")
    if not pid.isdigit() or not started.isdigit():
        return True  # not ours to judge: leave it
    try:
        return int(psutil.Process(int(pid)).create_time() * 1000) == int(started)
    except psutil.Error:
        return False
