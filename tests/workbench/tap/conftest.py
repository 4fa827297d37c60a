"""The tap in front of a stand-in driver (``tapstandin``), both on real Unix sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from tapstandin import StandIn, Through

from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.tap.forward import Forwarder, Upstream


@pytest.fixture
def record_file() -> Path | None:
    """The file the tap's recorder appends to (none by default; a test parametrizes it)."""
    return None


@pytest.fixture
async def through(short_dir: Path, record_file: Path | None) -> AsyncIterator[Through]:
    standin, recorder = StandIn(), CallRecorder(record_file)
    driver = grpc.aio.server()
    driver.add_generic_rpc_handlers((standin,))
    driver.add_insecure_port(f"unix:{short_dir / 'driver.sock'}")
    await driver.start()
    upstream = Upstream(str(short_dir / "driver.sock"))
    tap = grpc.aio.server()
    tap.add_generic_rpc_handlers((Forwarder(upstream, recorder, get_logger("tap"), driver="stand-in"),))
    tap.add_insecure_port(f"unix:{short_dir / 'tap.sock'}")
    await tap.start()
    try:
        yield Through(short_dir / "driver.sock", short_dir / "tap.sock", standin, recorder)
    finally:
        await tap.stop(None)
        await upstream.close()
        await driver.stop(None)
