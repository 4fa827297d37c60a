"""A simulated node's state dir, owned: a marker beside the checkpoint it wrote and a lock while it runs.

A node's DRA manager adopts the checkpoint (``dra_manager_state``) it finds in its state dir, asks the
drivers to unprepare every claim of it that no pod of its own needs, then rewrites the file without
them. In a real kubelet's root dir that would unprepare the real pods' devices and wipe the real
kubelet's record of them. So a tool starts a node only on a state dir it owns: one where it left
``MARKER``, or one that holds no DRA state at all (it writes the marker then); and it holds
``LOCK`` (``flock``) while the node runs, so two nodes, or a node and another tool, never share one.
The kubelet's own code knows nothing of this: it is how the workbench prepares a node.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

from kubelet_dra.kubelet.cm.dra.healthinfo import STATE_FILE_NAME as HEALTH_STATE
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint
from kubelet_dra.peers.errors import UsageError

MARKER = "kubelet-dra-state"
"""Written beside the checkpoint by the first node that used the dir: the DRA state here is kubelet-dra's."""
MARKER_TEXT = "The DRA state in this dir was written by kubelet-dra (a simulated kubelet), not by a kubelet.\n"
LOCK = "kubelet-dra-state.lock"
"""Locked (``flock``, exclusive) by the process whose node runs on the dir."""
KUBELET_ROOT_DIR = Path("/var/lib/kubelet")
"""A kubelet's default root dir: its checkpoint and registry dir live here."""
DRA_STATE_FILES = (Checkpoint.FILE_NAME, HEALTH_STATE)
"""The files of a kubelet's DRA manager in its root dir."""
OWN_DIR = "pass an explicit --state-dir of kubelet-dra's own (a new or empty dir)"


def check_owned(state_dir: Path, *, where: str, fix: str = OWN_DIR) -> None:
    """Refuse a state dir that holds DRA state kubelet-dra did not write (a kubelet's), before anything is written."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        if stat.S_ISREG(os.lstat(state_dir / MARKER).st_mode):  # a link is no marker of ours
            return
    for name in DRA_STATE_FILES:
        if os.path.lexists(state_dir / name):
            raise UsageError(
                f"{state_dir / name} was not written by kubelet-dra (no {MARKER} beside it): it is never adopted",
                where=where,
                fix=fix,
            )


def in_kubelet_root(path: Path) -> bool:
    """Whether ``path`` is a kubelet's default root dir or below it (links followed)."""
    return path.resolve().is_relative_to(KUBELET_ROOT_DIR.resolve())


class StateDirClaim:
    """``with StateDirClaim(dir, where=…):`` around a node's run, or ``acquire()`` before it starts and ``release()``
    after it stopped. The lock file and the marker stay in the dir: they make it kubelet-dra's the next time."""

    def __init__(self, state_dir: Path, *, where: str, fix: str = OWN_DIR) -> None:
        self.state_dir = state_dir
        self.where = where
        self.fix = fix
        self._lock: int | None = None

    def __enter__(self) -> StateDirClaim:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Check the dir is ours, lock it, mark it; ``UsageError`` when it is a kubelet's or in use."""
        check_owned(self.state_dir, where=self.where, fix=self.fix)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        lock = os.open(self.state_dir / LOCK, flags, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            raise UsageError(
                f"the state dir {self.state_dir} is in use by another kubelet-dra node or tool",
                where=self.where,
                fix="give each node its own state dir, or stop the other one first",
            ) from None
        self._lock = lock
        self._mark()

    def _mark(self) -> None:
        with contextlib.suppress(FileExistsError):
            marker = os.open(self.state_dir / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(marker, "w") as file:
                file.write(MARKER_TEXT)

    def release(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            os.close(lock)  # closing the last descriptor drops the flock
