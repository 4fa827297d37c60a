"""Every Unix socket where a kubelet or a driver might put one, and whether anything listens on it.

A driver that "is not registered" has often put its registration socket where the kubelet never
looks (a moved ``--root-dir``, a dot-name), or left stale sockets behind that the kubelet keeps
dialling (USERS.md #1, #13). The inventory walks the registry dir and a few other dirs, and probes
each socket with one plain ``connect``: no gRPC, nothing a driver would notice.
"""

from __future__ import annotations

import enum
import errno
import os
import socket
import stat
from collections.abc import Iterable, Iterator

import attrs

KUBELET_REGISTRY_DIR = "/var/lib/kubelet/plugins_registry"
KUBELET_DIRS = (KUBELET_REGISTRY_DIR, "/var/lib/kubelet/plugins")
"""Where a default kubelet keeps registration sockets and drivers keep their service sockets."""
MAX_DEPTH = 3
MAX_ENTRIES = 2000
"""A walk stops after this many directory entries: a wrong --look-in must not hang the view."""
CONNECT_TIMEOUT = 0.2


class Liveness(enum.StrEnum):
    LIVE = "live"
    """Something accepted the connection."""
    DEAD = "dead"
    """Nobody listens: a stale socket left by a process that is gone."""
    NO_ACCESS = "no access"
    """This user may not connect (permissions, SELinux)."""
    UNKNOWN = "unknown"


@attrs.frozen
class FoundSocket:
    path: str
    liveness: Liveness
    detail: str = ""
    """The connect error behind ``DEAD``, ``NO_ACCESS`` or ``UNKNOWN``."""
    in_registry: bool = False
    """Under the watched registry dir (not necessarily registered: see the node's state)."""


def probe(path: str) -> tuple[Liveness, str]:
    """Connect once to ``path`` and hang up; whether something listens there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(CONNECT_TIMEOUT)
        try:
            client.connect(path)
        except OSError as err:
            code = err.errno
            if code in (errno.ECONNREFUSED, errno.ENOENT):
                return Liveness.DEAD, os.strerror(code)
            if code in (errno.EACCES, errno.EPERM):
                return Liveness.NO_ACCESS, os.strerror(code)
            return Liveness.UNKNOWN, str(err)
    return Liveness.LIVE, ""


def socket_paths(root: str, *, max_depth: int = MAX_DEPTH) -> Iterator[str]:
    """Unix sockets at most ``max_depth`` directories below ``root`` (symlinks followed for the type only)."""
    seen = 0
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < max_depth:
                        pending.append((entry.path, depth + 1))
                elif stat.S_ISSOCK(os.stat(entry.path).st_mode):
                    yield entry.path
            except OSError:
                continue


def inside(path: str, directory: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(directory)]) == os.path.abspath(directory)


def inventory(registry_dir: str, elsewhere: Iterable[str]) -> list[FoundSocket]:
    """The sockets under the registry dir and under each existing dir of ``elsewhere``, probed, sorted by path."""
    paths = {os.path.abspath(path) for root in (registry_dir, *elsewhere) for path in socket_paths(root)}
    found = []
    for path in sorted(paths):
        liveness, detail = probe(path)
        found.append(FoundSocket(path, liveness, detail, inside(path, registry_dir)))
    return found


def default_elsewhere(registry_dir: str) -> list[str]:
    """The kubelet's default dirs and the registry dir's parent (its root dir), without the registry dir."""
    candidates = [*KUBELET_DIRS, os.path.dirname(os.path.abspath(registry_dir))]
    registry = os.path.abspath(registry_dir)
    unique = dict.fromkeys(os.path.abspath(path) for path in candidates)
    return [path for path in unique if path != registry and os.path.isdir(path)]
