"""The plugin watcher: inotify on the registry directory and its sub-directories → desired state.

Rules are the kubelet's (docs/protocol.md#registration): at start the directory tree is walked (dot-named
directories included) and every socket in it counts as created; at run time a created or
moved-in socket is added (never when its name starts with a dot), a created directory is
walked, a removed path is dropped, and a socket moved *out* is ignored, so it stays registered.
Nothing polls: the event loop wakes only when the kernel reports a change. Every watcher of a
process shares one inotify instance (``inotify.InotifyHub``), so a thousand nodes need no sysctl.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from asyncinotify import Event, Mask, Watch

from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import DesiredStateOfWorld
from kubelet_dra.kubelet.pluginmanager.inotify import InotifyHub, limit_error
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import Logger

WATCH_MASK = Mask.CREATE | Mask.MOVED_TO | Mask.DELETE | Mask.DELETE_SELF | Mask.MOVED_FROM
REGISTRY_DIR_MODE = 0o755

IgnoredCallback = Callable[[str, str], None]
"""Called with (path, reason) for sockets the kubelet would never register."""


class _WalkAborted(Exception):
    """The directory walk stopped early, as the kubelet's does."""


def _ignore(path: str, reason: str) -> None:
    return None


def is_socket(path: str) -> bool:
    """Whether ``path`` is (or, following symlinks, points to) a Unix-domain socket."""
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


class PluginWatcher:
    """Keeps ``desired`` in step with the sockets under ``path``."""

    def __init__(
        self, path: str, desired: DesiredStateOfWorld, *, log: Logger, on_ignored: IgnoredCallback = _ignore
    ) -> None:
        self.path = os.path.abspath(path)
        self._desired = desired
        self._log = log
        self._on_ignored = on_ignored
        self._hub: InotifyHub | None = None
        self._watches: list[Watch] = []

    async def start(self) -> None:
        """Create and watch the directory, register what is already there, then follow changes."""
        self._log.info("Plugin Watcher Start", path=self.path)
        try:
            os.makedirs(self.path, REGISTRY_DIR_MODE, exist_ok=True)
            self._hub = InotifyHub.shared()
            self._watch(self.path)
            self._traverse(self.path)
        except (OSError, _WalkAborted) as err:
            self._release()
            cause = err.__cause__ if isinstance(err, _WalkAborted) else err
            if isinstance(cause, OSError) and (limit := limit_error(cause, self.path)) is not None:
                raise limit from err
            raise ConfigError(
                f"cannot watch the plugin registry directory: {err}",
                where=self.path,
                fix="pass a --registry-dir this user can create and read",
            ) from err

    async def stop(self) -> None:
        self._release()

    def _watch(self, directory: str) -> None:
        assert self._hub is not None
        self._watches.append(self._hub.add_watch(directory, WATCH_MASK, self._handle))

    def _release(self) -> None:
        if self._hub is not None:
            self._hub.release(self._watches, self._handle)
            self._hub = None
            self._watches = []

    def _handle(self, event: Event) -> None:
        if Mask.Q_OVERFLOW in event.mask:
            self._log.error("inotify event queue overflowed; socket changes were lost", path=self.path)
            return
        path = event.path
        if path is None or Mask.IGNORED in event.mask:
            return
        name = str(path)
        if event.mask & (Mask.CREATE | Mask.MOVED_TO):
            self._handle_create(name)
        elif event.mask & (Mask.DELETE | Mask.DELETE_SELF):
            self._log.v(6).info("Handling delete event", path=name)
            self._desired.remove(name)
        elif Mask.MOVED_FROM in event.mask:
            self._log.v(5).info("Ignoring rename (moved out)", path=name)
            if self._desired.get(name) is not None:
                self._on_ignored(name, "moved out of its path; the kubelet ignores renames, so it stays registered")

    def _handle_create(self, path: str) -> None:
        self._log.v(6).info("Handling create event", path=path)
        try:
            mode = os.stat(path).st_mode
        except OSError as err:
            self._log.error("Error when handling create event", err, path=path)
            return
        if os.path.basename(path).startswith("."):
            self._log.v(5).info("Ignoring file (starts with '.')", path=path)
            if stat.S_ISSOCK(mode):
                self._on_ignored(path, "its name starts with '.'")
            return
        if stat.S_ISDIR(mode):
            try:
                self._traverse(path)
            except _WalkAborted as err:
                self._log.error("Error when traversing a new directory", err, path=path)
        elif stat.S_ISSOCK(mode):
            self._log.v(2).info("Adding socket path or updating timestamp to desired state cache", path=path)
            self._desired.add_or_update(path)
        else:
            self._log.v(5).info("Ignoring non socket file", path=path)

    def _traverse(self, directory: str, *, top: bool = True) -> None:
        """Watch ``directory`` and its sub-directories, registering sockets, in lexical order.

        As in the kubelet, an unreadable top directory or a sub-directory that cannot be watched
        aborts the rest of the walk (``_WalkAborted``); other unreadable entries are skipped.
        """
        if directory != self.path:
            try:
                self._watch(directory)
            except OSError as err:
                raise _WalkAborted(f"failed to watch {directory}, err: {err.strerror}") from err
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as err:
            if top:
                raise _WalkAborted(f"error accessing path: {directory} error: {err.strerror}") from err
            self._log.error("Error accessing path", err, path=directory)
            return
        for entry in entries:
            path = str(Path(directory) / entry.name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as err:
                self._log.error("Error accessing path", err, path=path)
                continue
            if is_dir:
                self._traverse(path, top=False)
            elif is_socket(path):
                self._handle_create(path)
            else:
                self._log.v(5).info("Ignoring file", path=path)
