"""The tap's Unix sockets, put in place without replacing a live one and removed only while they are still its own.

gRPC unlinks whatever is at a Unix socket's path before it binds, and again, by path, when its server stops: in a
kubelet's registry dir that path may by then hold a driver's own registration socket (the driver registers there
again when the tap is being put away), or another tap's. So the server binds a private dot-name beside the path
(the kubelet's plugin watcher ignores dot-names), which is then hard-linked to the path: ``link`` never replaces
what is there. The socket's identity (device and inode) is kept; it is removed only while the path still holds
exactly that socket. A socket something listens on is never replaced; a stale one (nothing listens, as after a
crash) is, with a warning.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat

import attrs
import grpc

from kubelet_dra.peers.driver.settings import SOCKET_PATH_MAX
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import Logger

PRIVATE_NAME_MIN = 6
"""Random characters at least in the private name: a final name of fewer bytes gets a private one a little longer."""


class SocketRefused(ConfigError):
    """The tap will not put a socket at this path: something listens there, another file is there, or the path is
    longer than a Unix socket allows."""


@attrs.frozen
class OwnedSocket:
    """A socket file the tap created: removable only while ``path`` is still this very socket."""

    path: str
    device: int
    inode: int

    @property
    def in_place(self) -> bool:
        try:
            found = os.lstat(self.path)
        except FileNotFoundError:
            return False
        return (found.st_dev, found.st_ino) == (self.device, self.inode)

    def remove(self) -> None:
        """Unlink the path if it is still this socket; a path something else now holds is left alone."""
        if self.in_place:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def check_length(path: str, flag: str) -> None:
    """Refuse a path the kubelet could not dial: ``sun_path`` holds 107 bytes and a NUL."""
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        raise SocketRefused(
            f"the socket path is {size} bytes, over the {SOCKET_PATH_MAX} a Unix socket allows; nothing could dial it",
            where=path,
            fix=f"give a shorter {flag}",
        )


def listening(path: str | os.PathLike[str]) -> bool:
    """Whether something accepts connections on ``path`` (a refused connection: a stale socket; can't tell: yes)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError:  # EACCES, EAGAIN (a full backlog): something may be there
        return True
    finally:
        probe.close()
    return True


def refuse_if_taken(path: str) -> None:
    """Raise ``SocketRefused`` when ``path`` holds anything but a stale socket (or nothing)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(found.st_mode):
        raise SocketRefused(
            "a file that is not a socket is there; the tap replaces no file it did not create",
            where=path,
            fix="move it away, or give the tap other dirs",
        )
    if listening(path):
        raise SocketRefused(
            "a socket something listens on is there (a driver registered directly, or another tap);"
            " the tap never replaces it",
            where=path,
            fix="stop what serves it, or give the tap other dirs",
        )


async def bind(server: grpc.aio.Server, path: str, log: Logger) -> OwnedSocket:
    """Start ``server`` on a socket put at ``path`` (see the module's docstring); ``SocketRefused`` leaves ``path``
    as it was and ``server`` stopped."""
    refuse_if_taken(path)
    private = _private_path(path)
    server.add_insecure_port(f"unix:{private}")
    await server.start()
    try:
        found = os.lstat(private)
        _put_in_place(private, path, log)
    except BaseException:
        await server.stop(grace=None)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(private)
    return OwnedSocket(path, found.st_dev, found.st_ino)


def _put_in_place(private: str, path: str, log: Logger) -> None:
    try:
        os.link(private, path)
    except FileExistsError:  # a stale socket, or one that came since the first look: look again
        refuse_if_taken(path)
        log.warning("Replacing a stale socket nothing listens on", socket=path)
        os.rename(private, path)


def _private_path(path: str) -> str:
    """A dot-name not in use beside ``path``, no longer than its name (unless that is under 7 bytes)."""
    directory, name = os.path.split(path)
    width = max(len(name) - 1, PRIVATE_NAME_MIN)
    while True:
        candidate = os.path.join(directory, "." + secrets.token_hex(width)[:width])
        if not os.path.lexists(candidate):
            return candidate
