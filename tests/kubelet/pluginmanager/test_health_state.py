"""The device health cache in ``<state dir>/dra_health_state``: written on changes and stream ends, read at start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubelet_dra.kubelet.cm.dra.plugin import Health
from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health_pb2

from .support import FakeClock
from .test_plugins import report

DRIVER = "tiny.example.com"
START = "2027-01-15T08:00:00Z"  # the fake clock's start


def entry(device: str, health: str, updated: str, timeout_ns: int, message: str = "") -> dict[str, Any]:
    return {
        "PoolName": "pool",
        "DeviceName": device,
        "Health": health,
        "LastUpdated": updated,
        "HealthCheckTimeout": timeout_ns,
        "Message": message,
    }


def read(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


async def test_health_state_is_written_on_each_change_and_emptied_when_the_stream_ends(
    node_factory, make_driver, kubeconfig: str, tmp: Path, clock: FakeClock
) -> None:
    state_dir = tmp / "state"
    path = state_dir / "dra_health_state"
    driver = make_driver(health=True)
    async with node_factory(kubeconfig=kubeconfig, state_dir=str(state_dir)) as node:
        await driver.start()
        await driver.until(lambda: driver.health_streams == 1)

        await driver.health_reports.put(
            report(("gpu-0", health_pb2.HEALTHY, 0, ""), ("gpu-1", health_pb2.UNHEALTHY, 60, "ECC errors"))
        )
        expected = {
            DRIVER: {
                "Devices": {
                    "pool/gpu-0": entry("gpu-0", "Healthy", START, 30_000_000_000),
                    "pool/gpu-1": entry("gpu-1", "Unhealthy", START, 60_000_000_000, "ECC errors"),
                }
            }
        }
        await node.wait_for(lambda: read(path) == expected)

        await clock.advance(10)
        await driver.health_reports.put(report(("gpu-0", health_pb2.UNHEALTHY, 0, "hot")))
        expected[DRIVER]["Devices"]["pool/gpu-0"] = entry(
            "gpu-0", "Unhealthy", "2027-01-15T08:00:10Z", 30_000_000_000, "hot"
        )
        await node.wait_for(lambda: read(path) == expected)

        await driver.health_reports.put(None)  # the stream ends: everything about the driver goes
        await node.wait_for(lambda: read(path) == {})
        assert sorted(p.name for p in state_dir.iterdir() if p.name.startswith("dra_health")) == ["dra_health_state"]


async def test_health_state_is_read_at_start(node_factory, kubeconfig: str, tmp: Path, clock: FakeClock) -> None:
    state_dir = tmp / "state"
    state_dir.mkdir()
    saved = {
        DRIVER: {
            "Devices": {
                # Go writes nanoseconds and a local offset; 0 stands for the default timeout (30 s)
                "pool/gpu-0": entry("gpu-0", "Unhealthy", "2027-01-15T09:59:50.123456789+02:00", 0, "ECC errors"),
                "pool/gpu-1": entry("gpu-1", "Healthy", "2027-01-15T07:59:00Z", 30_000_000_000),
            }
        }
    }
    (state_dir / "dra_health_state").write_text(json.dumps(saved))
    async with node_factory(kubeconfig=kubeconfig, state_dir=str(state_dir)) as node:
        assert node.health is not None
        devices = {d.device_name: (d.health, d.message, d.timeout) for d in node.health.devices(DRIVER)}
        assert devices == {
            "gpu-0": (Health.UNHEALTHY, "ECC errors", 30.0),
            "gpu-1": (Health.UNKNOWN, "", 30.0),  # reported 60 s ago: stale
        }


async def test_unreadable_health_state_is_logged_and_ignored(node_factory, kubeconfig: str, tmp: Path, caplog) -> None:
    state_dir = tmp / "state"
    state_dir.mkdir()
    (state_dir / "dra_health_state").write_text('{"tiny.example.com": {"Devices": {"pool/gpu-0": {"Health": 1}}}}')
    async with node_factory(kubeconfig=kubeconfig, state_dir=str(state_dir)) as node:
        assert node.health is not None and node.health.devices(DRIVER) == []
    assert any("Failed to load the health state" in record.getMessage() for record in caplog.records)


async def test_without_a_state_dir_no_health_state_is_written(node_factory, make_driver, tmp: Path) -> None:
    driver = make_driver(health=True)
    async with node_factory() as node:
        await driver.start()
        await driver.until(lambda: driver.health_streams == 1)
        await driver.health_reports.put(report(("gpu-0", health_pb2.HEALTHY, 0, "")))
        await node.wait_for(lambda: node.health.devices(DRIVER) != [])
    assert not list(tmp.rglob("dra_health_state*"))
