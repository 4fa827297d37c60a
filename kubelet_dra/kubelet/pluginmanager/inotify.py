"""One inotify instance per process (and event loop), shared by every plugin watcher in it.

The kernel limits inotify *instances* per user (``fs.inotify.max_user_instances``, 128 by default)
far more tightly than *watches* (``fs.inotify.max_user_watches``, tens of thousands): a process
running a thousand nodes, each watching its own registry dir, must not open an instance per node.
So the watchers share one instance: each adds its watches to it and gets the events of its own
watch descriptors. Two watchers of the same directory share the kernel's one watch (inotify gives
the same descriptor); it is removed when the last of them lets it go.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import weakref
from collections.abc import Callable

from asyncinotify import Event, Inotify, Mask, Watch

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import get_logger

Listener = Callable[[Event], None]

_HUBS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, InotifyHub] = weakref.WeakKeyDictionary()

LIMITS = {
    errno.EMFILE: (
        "the inotify instances of this user are used up (fs.inotify.max_user_instances) or this process has no file"
        " descriptor left (ulimit -n)",
        "stop other programs that watch files as this user, or raise the limit:"
        " sysctl fs.inotify.max_user_instances=1024, or ulimit -n",
    ),
    errno.ENFILE: (
        "the system has no file descriptor left (fs.file-max)",
        "stop programs that hold many files open, or raise fs.file-max",
    ),
    errno.ENOSPC: (
        "the inotify watches of this user are used up (fs.inotify.max_user_watches)",
        "stop other programs that watch files as this user, or raise the limit:"
        " sysctl fs.inotify.max_user_watches=524288",
    ),
}
"""What an errno from inotify means, and the real fix: none of them is about the directory."""


def limit_error(err: OSError, where: str) -> ConfigError | None:
    """A ``ConfigError`` naming the exhausted kernel limit behind ``err``, or ``None`` when no limit is the cause."""
    if err.errno not in LIMITS:
        return None
    cause, fix = LIMITS[err.errno]
    return ConfigError(f"cannot watch the plugin registry directory: {cause} ({err.strerror})", where=where, fix=fix)


class InotifyHub:
    """The shared instance: watches with their listeners, and one task handing each event to its watch's listeners."""

    def __init__(self) -> None:
        self._inotify = Inotify()
        self._listeners: dict[int, list[Listener]] = {}
        self._task = asyncio.create_task(self._dispatch(), name="inotify")

    @classmethod
    def shared(cls) -> InotifyHub:
        """The running loop's hub, opened at its first use."""
        loop = asyncio.get_running_loop()
        hub = _HUBS.get(loop)
        if hub is None or hub._task.done():
            hub = _HUBS[loop] = cls()
        return hub

    def add_watch(self, path: str, mask: Mask, listener: Listener) -> Watch:
        watch = self._inotify.add_watch(path, mask)
        listeners = self._listeners.setdefault(watch.wd, [])
        if listener not in listeners:
            listeners.append(listener)
        return watch

    def release(self, watches: list[Watch], listener: Listener) -> None:
        """Stop handing ``listener`` the events of ``watches``; a watch nobody listens to is removed."""
        for watch in watches:
            listeners = self._listeners.get(watch.wd, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners and self._listeners.pop(watch.wd, None) is not None:
                with contextlib.suppress(OSError):  # already gone with its directory
                    self._inotify.rm_watch(watch)
        if not self._listeners:
            self.close()

    def close(self) -> None:
        self._task.cancel()
        self._inotify.close()
        for loop, hub in list(_HUBS.items()):
            if hub is self:
                del _HUBS[loop]

    async def _dispatch(self) -> None:
        async for event in self._inotify:
            if event.watch is None:  # an overflow belongs to every watch
                targets = {id(listener): listener for group in self._listeners.values() for listener in group}
                listeners = list(targets.values())
            else:
                listeners = list(self._listeners.get(event.watch.wd, ()))
                if Mask.IGNORED in event.mask:
                    self._listeners.pop(event.watch.wd, None)
            for listener in listeners:
                try:
                    listener(event)
                except Exception as err:  # one watcher's bug must not deafen the others
                    get_logger("plugin-watcher").error("Failed to handle an inotify event", err, path=str(event.path))
