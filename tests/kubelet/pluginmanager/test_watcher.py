"""The plugin watcher against a real directory tree and real inotify events."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import DesiredStateOfWorld
from kubelet_dra.kubelet.pluginmanager.pluginwatcher.plugin_watcher import PluginWatcher
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import get_logger


def make_socket(path: Path) -> Path:
    """A bound (not listening) Unix socket file, as a driver leaves behind before serving."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


class Watched:
    """A watcher on ``registry`` with a way to wait for the desired state to reach a condition."""

    def __init__(self, registry: Path) -> None:
        self.changed = asyncio.Event()
        self.ignored: list[tuple[str, str]] = []
        self.desired = DesiredStateOfWorld(clock=lambda: 0.0, on_change=self.changed.set)
        self.watcher = PluginWatcher(str(registry), self.desired, log=get_logger("test"), on_ignored=self._ignored)

    def _ignored(self, path: str, reason: str) -> None:
        self.ignored.append((path, reason))
        self.changed.set()

    def paths(self) -> set[str]:
        return {plugin.socket_path for plugin in self.desired.plugins()}

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def quiet(self) -> None:
        """Give inotify a moment to deliver events that must *not* change anything."""
        await asyncio.sleep(0.1)


@pytest.fixture
async def watched(registry: Path) -> AsyncIterator[Watched]:
    registry.mkdir(parents=True, exist_ok=True)
    w = Watched(registry)
    yield w
    await w.watcher.stop()


async def test_initial_walk_finds_sockets_in_subdirectories_and_dot_directories(registry: Path, watched: Watched):
    top = make_socket(registry / "a-reg.sock")
    nested = make_socket(registry / "sub" / "deeper" / "b.sock")
    in_dot_dir = make_socket(registry / ".hidden" / "c.sock")
    make_socket(registry / ".dot.sock")
    (registry / "plain-file").write_text("not a socket")

    await watched.watcher.start()

    assert watched.paths() == {str(top), str(nested), str(in_dot_dir)}
    assert [path for path, _ in watched.ignored] == [str(registry / ".dot.sock")]


async def test_create_remove_and_recreate(registry: Path, watched: Watched):
    await watched.watcher.start()
    path = make_socket(registry / "drv-reg.sock")
    await watched.until(lambda: str(path) in watched.paths())
    first_uuid = watched.desired.get(str(path)).uuid

    path.unlink()
    await watched.until(lambda: str(path) not in watched.paths())

    make_socket(path)
    await watched.until(lambda: str(path) in watched.paths())
    assert watched.desired.get(str(path)).uuid != first_uuid


async def test_runtime_rules_for_dot_names_files_and_new_directories(registry: Path, watched: Watched):
    await watched.watcher.start()
    make_socket(registry / ".dot-reg.sock")
    (registry / "file.sock").write_text("")
    make_socket(registry / ".dotdir" / "inside.sock")
    new_dir = registry / "newdir"
    new_dir.mkdir()
    later = make_socket(new_dir / "later.sock")

    await watched.until(lambda: str(later) in watched.paths())
    await watched.quiet()
    assert watched.paths() == {str(later)}
    assert str(registry / ".dot-reg.sock") in [path for path, _ in watched.ignored]


async def test_new_directory_with_socket_already_inside_is_walked(registry: Path, tmp: Path, watched: Watched):
    await watched.watcher.start()
    outside = make_socket(tmp / "staging" / "x.sock")
    os.rename(outside.parent, registry / "moved-in")
    moved = registry / "moved-in" / "x.sock"
    await watched.until(lambda: str(moved) in watched.paths())


async def test_socket_moved_out_stays_desired_and_moved_in_is_added(registry: Path, tmp: Path, watched: Watched):
    await watched.watcher.start()
    path = make_socket(registry / "drv-reg.sock")
    await watched.until(lambda: str(path) in watched.paths())

    os.rename(path, tmp / "elsewhere.sock")
    await watched.until(lambda: bool(watched.ignored))
    assert str(path) in watched.paths()

    os.rename(tmp / "elsewhere.sock", registry / "back.sock")
    await watched.until(lambda: str(registry / "back.sock") in watched.paths())


async def test_missing_registry_dir_is_created_with_0755(tmp: Path):
    registry = tmp / "does" / "not" / "exist"
    w = Watched(registry)
    await w.watcher.start()
    try:
        assert registry.is_dir()
        assert registry.stat().st_mode & 0o777 == 0o755 & ~current_umask()
    finally:
        await w.watcher.stop()


async def test_unusable_registry_dir_is_a_config_error(tmp: Path):
    blocker = tmp / "file"
    blocker.write_text("")
    w = Watched(blocker / "registry")
    with pytest.raises(ConfigError, match="cannot watch the plugin registry directory"):
        await w.watcher.start()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def inotify_instances() -> int:
    """This process's open inotify instances, as the kernel counts them against fs.inotify.max_user_instances."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
            found += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
    return found


async def test_watchers_of_many_registry_dirs_share_one_inotify_instance_and_see_only_their_own(tmp: Path):
    before = inotify_instances()
    # more watchers than the kernel's default instances per user (128): one instance each would fail
    fleet = [Watched(tmp / f"node-{index}" / "plugins_registry") for index in range(150)]
    for w in fleet:
        await w.watcher.start()
    try:
        assert inotify_instances() - before == 1
        make_socket(tmp / "node-7" / "plugins_registry" / "a.sock")
        make_socket(tmp / "node-149" / "plugins_registry" / "sub" / "b.sock")
        await fleet[7].until(lambda: fleet[7].paths() == {str(tmp / "node-7" / "plugins_registry" / "a.sock")})
        sub = str(tmp / "node-149" / "plugins_registry" / "sub" / "b.sock")
        await fleet[149].until(lambda: fleet[149].paths() == {sub})
        await fleet[0].quiet()
        assert [index for index, w in enumerate(fleet) if w.paths()] == [7, 149]
        await fleet[7].watcher.stop()  # one node stops: the others still hear their dirs
        make_socket(tmp / "node-8" / "plugins_registry" / "c.sock")
        await fleet[8].until(lambda: len(fleet[8].paths()) == 1)
    finally:
        for w in fleet:
            await w.watcher.stop()
    assert inotify_instances() == before


async def test_two_watchers_of_one_dir_both_hear_it_until_each_stops(registry: Path):
    registry.mkdir(parents=True, exist_ok=True)
    first, second = Watched(registry), Watched(registry)
    await first.watcher.start()
    await second.watcher.start()
    try:
        await first.watcher.stop()
        make_socket(registry / "a.sock")
        await second.until(lambda: second.paths() == {str(registry / "a.sock")})
        assert not first.paths()
    finally:
        await first.watcher.stop()
        await second.watcher.stop()


WITHOUT_DESCRIPTORS = """
import asyncio, os, resource, sys
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import DesiredStateOfWorld
from kubelet_dra.kubelet.pluginmanager.pluginwatcher.plugin_watcher import PluginWatcher

async def main():
    watcher = PluginWatcher(sys.argv[1], DesiredStateOfWorld(clock=lambda: 0.0), log=get_logger("test"))
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    try:
        await watcher.start()
    except ConfigError as err:
        print(err)

asyncio.run(main())
"""


def test_a_watcher_out_of_descriptors_names_the_limit_and_its_fix_not_the_directory(tmp: Path):
    registry = tmp / "plugins_registry"
    registry.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_DESCRIPTORS, str(registry)], capture_output=True, text=True, timeout=60
    )
    message = done.stdout.strip()
    assert "fs.inotify.max_user_instances" in message and "ulimit -n" in message, (message, done.stderr)
    assert "Too many open files" in message and "--registry-dir" not in message
