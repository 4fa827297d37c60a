"""Files that hold cluster data: call traces, recorded scenarios, reports, the API server's database, checkpoints.

Such a file is its owner's alone (0600; a directory made for it is 0700) and is never reached through a
symbolic link or taken over from another user: a tool run as root beside a node must not append a trace
through a link someone left at ``/tmp/calls.jsonl``, nor hand the objects of a cluster to every local user.
A file replaced whole is replaced atomically, so a crash leaves the old file or the new one, never half.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
APPEND = os.O_WRONLY | os.O_APPEND
TEMP_ATTEMPTS = 100
OTHER_USER = "the file belongs to another user"
_writes = itertools.count(1)
"""Numbers temp file names within the process: cheaper than ``tempfile``'s random names for a small file."""


def private_dir(path: Path) -> Path:
    """``path``, made 0700 (with its parents) when missing; a directory that exists is left as it is."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    return path


def open_private(path: str | Path, flags: int = APPEND) -> int:
    """A descriptor on ``path`` opened with ``flags``, the file created 0600 when missing and a wider one of ours
    narrowed to 0600. Raises ``OSError``: ``ELOOP`` when ``path`` is a symbolic link, ``EPERM`` when another
    user owns the file (``refusal`` words both)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, PRIVATE_FILE)
    try:
        found = os.fstat(fd)
        if found.st_uid != os.geteuid():
            raise PermissionError(errno.EPERM, OTHER_USER, str(path))
        if stat.S_ISREG(found.st_mode) and found.st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refusal(err: OSError) -> str:
    """Why ``open_private``, ``check_replaceable`` or ``replace_file`` failed, in a user's words."""
    if err.errno == errno.ELOOP:
        return "it is a symbolic link, which is not followed"
    if err.strerror == OTHER_USER:
        return OTHER_USER
    return err.strerror or str(err)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def check_replaceable(path: str | Path) -> None:
    """Raise the ``OSError`` that ``replace_file`` would meet at ``path``, while there is nothing yet to lose: its
    directory must take a new file, and a file already there must be ours."""
    directory = os.path.dirname(os.fspath(path)) or "."
    os.stat(directory)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), directory)
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if found.st_uid != os.geteuid():
        raise PermissionError(errno.EPERM, OTHER_USER, os.fspath(path))


def replace_file(path: str | Path, data: bytes, *, mode: int = PRIVATE_FILE) -> None:
    """Replace ``path`` atomically by a file of ``mode`` holding ``data``: a hidden temp file in the same
    directory, written, fsynced, closed and renamed over ``path`` (the rename replaces a link, never follows it).
    The directory is not fsynced, as the kubelet does not: the rename reaches the disk with the file system's
    next journal commit, and until then a power loss leaves the previous complete file."""
    directory, name = os.path.split(os.fspath(path))
    for _ in range(TEMP_ATTEMPTS):
        temp = os.path.join(directory, f".{name}.{os.getpid()}.{next(_writes)}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            break
        except FileExistsError:
            continue  # a leftover of an earlier process: neither reused nor in the way
    else:
        raise FileExistsError(errno.EEXIST, f"{TEMP_ATTEMPTS} temp file names taken", directory)
    try:
        try:
            if mode != PRIVATE_FILE:
                os.fchmod(fd, mode)  # a wider mode than the umask lets os.open give
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
