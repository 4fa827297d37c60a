from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.pluginmanager import HandshakeTimeouts
from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer

from .support import FakeClock, TinyDriver, remove_tree, short_tempdir

FAST_HANDSHAKE = HandshakeTimeouts(dial=1.0, get_info=1.0, notify=5.0)


@pytest.fixture
def tmp() -> Iterator[Path]:
    path = short_tempdir()
    yield path
    remove_tree(path)


@pytest.fixture
def registry(tmp: Path) -> Path:
    return tmp / "registry"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def make_driver(tmp: Path, registry: Path) -> AsyncIterator[Callable[..., TinyDriver]]:
    """TinyDriver factory; each driver gets its own plugin dir; all are stopped at the end."""
    drivers: list[TinyDriver] = []

    def make(name: str = "tiny.example.com", plugin_dir: str = "", **kwargs: Any) -> TinyDriver:
        driver = TinyDriver(registry, tmp / "plugins" / (plugin_dir or name), name=name, **kwargs)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        await driver.stop()


@pytest.fixture
def node_factory(registry: Path, clock: FakeClock) -> Callable[..., contextlib.AbstractAsyncContextManager[Node]]:
    """Start a standalone Node on the shared registry dir with the fake clock (options overridable)."""

    @contextlib.asynccontextmanager
    async def start(**options: Any) -> AsyncIterator[Node]:
        options.setdefault("handshake", FAST_HANDSHAKE)
        kube = options.pop("kubeconfig", None)
        async with Node("node-1", str(registry), kubeconfig=kube, options=NodeOptions(**options), clock=clock) as node:
            yield node

    return start


@pytest.fixture
async def apiserver(tmp: Path) -> AsyncIterator[EmbeddedAPIServer]:
    """A fresh embedded API server per test: these tests wipe and count the node's slices."""
    async with EmbeddedAPIServer() as server:
        yield server


@pytest.fixture
def kubeconfig(apiserver: EmbeddedAPIServer, tmp: Path) -> str:
    return str(apiserver.kubeconfig(tmp / "admin.kubeconfig"))
