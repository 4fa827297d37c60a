"""Each wire knob through the fault proxy shows the node what the reference driver's own knob shows it.

For every wire knob the simulated node runs twice: once with the reference driver given the knob itself, once with
a knob-less reference driver behind the proxy given the same knob. What the node saw must be the same: the
registration's outcome and diagnosis, and every call it made as it recorded it (status, details, answers with the
CDI IDs), compared after ``calls diff``'s normalization.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.workbench.tap import FaultProxy
from kubelet_dra.workbench.tap.diff import call_lines
from kubelet_dra.workbench.testbed import DriverProcess, DriverSpec, Testbed, TestbedOptions, manifests, objects

GPU = "gpu.example.com"
CALL_TIMEOUT = 1.0
"""The node's deadline for a DRA call, short so that a blocked call ends within the test."""
_PATH = re.compile(r"/[^\s\"'()\[\],]*/(?P<name>[^/\s\"'()\[\],]+\.sock)\b")


def _text(text: str) -> str:
    return _PATH.sub(lambda match: f"<dir>/{match['name']}", text)


@attrs.frozen
class Seen:
    """What the node saw of its driver."""

    registered: bool
    sockets: frozenset[tuple[str, str, str]]
    """(phase, last error, failure mode) of the driver's registration socket."""
    calls: tuple[str, ...]
    """Every distinct call, normalized (the node's retries differ in number from run to run)."""


async def _until(bed: Testbed, check: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    await bed.until(check, timeout=timeout, what=what)


async def _pod(bed: Testbed) -> None:
    for manifest in (
        manifests.device_class(GPU),
        manifests.claim("c1", GPU),
        manifests.pod("p1", bed.options.node_name, claims={"dev": "c1"}),
    ):
        await objects.apply(bed.kube, manifest)


async def _phase(bed: Testbed) -> str:
    pod = await objects.get(bed.kube, "Pod", "p1")
    return (pod or {}).get("status", {}).get("phase", "")


def _failed_or_done(bed: Testbed, method: str) -> Callable[[], bool]:
    return lambda: any(record.status != "OK" or record.response is not None for record in bed.calls(method=method))


async def registration(bed: Testbed, driver: DriverProcess) -> None:
    """The node told the driver its verdict, or gave up asking it for its info; then that attempt ended."""
    told = _failed_or_done(bed, "NotifyRegistrationStatus")
    await _until(bed, lambda: told() or not _answered(bed), "an outcome")
    await _until(bed, lambda: all(s.phase.name != "IN_PROGRESS" for s in bed.node.registrations()), "settled")


def _answered(bed: Testbed) -> bool:
    return all(record.status == "OK" for record in bed.calls(method="GetInfo"))


async def prepare(bed: Testbed, driver: DriverProcess) -> None:
    await bed.wait_registered(driver, GPU, timeout=10)
    await _pod(bed)
    await _until(bed, _failed_or_done(bed, "NodePrepareResources"), "a prepare call ended")


async def unprepare(bed: Testbed, driver: DriverProcess) -> None:
    await prepare(bed, driver)
    await _until(bed, lambda: _is_running(bed), "the pod runs")
    await objects.delete(bed.kube, "Pod", "p1")
    await _until(bed, _failed_or_done(bed, "NodeUnprepareResources"), "an unprepare call ended")


async def _is_running(bed: Testbed) -> bool:
    return await _phase(bed) == "Running"


async def exits(bed: Testbed, driver: DriverProcess) -> None:
    """The driver registers, then stops: the node unregisters it."""
    await _until(bed, lambda: not driver.running and driver.starts, "the driver stopped")
    await _until(bed, lambda: not bed.node.registrations(), "the node let the driver go")


async def leaves_sockets(bed: Testbed, driver: DriverProcess) -> None:
    """The driver stops: both sockets the node knew stay behind, nothing listening, and the node dials the one it
    finds in its registry dir anew (in vain: its dial gives up after 10 s)."""
    await bed.wait_registered(driver, GPU, timeout=10)
    (state,) = bed.node.registrations()
    await driver.stop()
    await _until(bed, lambda: any(s.phase.name == "IN_PROGRESS" for s in bed.node.registrations()), "a new attempt")
    for path in (state.socket_path, state.endpoint):
        with pytest.raises(ConnectionRefusedError), socket.socket(socket.AF_UNIX) as client:
            client.connect(path)


Probe = Callable[[Testbed, DriverProcess], Awaitable[None]]
CASES: list[tuple[str, str, Probe]] = [
    ("getinfo-error", "no info today", registration),
    ("getinfo-delay", "1.5s", registration),
    ("getinfo-type", "CSIPlugin", registration),
    ("getinfo-endpoint", "relative/dra.sock", registration),
    ("getinfo-endpoint", "/nowhere/dra.sock", registration),
    ("versions", "v1beta1", prepare),
    ("versions", "v1", prepare),
    ("versions", "none", registration),
    ("notify-error", "not listening", registration),
    ("serve-advertised-name", "true", prepare),
    ("prepare-error", "boom", prepare),
    ("prepare-delay", "0.2s", prepare),
    ("prepare-block", "true", prepare),
    ("prepare-fail-claim", "c1", prepare),
    ("prepare-omit-claim", "c1", prepare),
    ("prepare-unknown-key", "true", prepare),
    ("cdi-unqualified", "true", prepare),
    ("unprepare-error", "boom", unprepare),
    ("unprepare-block", "true", unprepare),
    ("exit-after-registration", "true", exits),
    ("leave-sockets", "true", leaves_sockets),
]


async def seen(spec: DriverSpec, probe: Probe) -> Seen:
    options = TestbedOptions(node=NodeOptions(call_timeout=CALL_TIMEOUT))
    async with Testbed(options, proxies=FaultProxy) as bed:
        driver = await bed.add_driver(spec, wait=None)
        await probe(bed, driver)
        sockets = frozenset(
            (state.phase.name, _text(state.last_error), state.diagnosis.id if state.diagnosis else "")
            for state in bed.node.registrations()
        )
        lines = call_lines([record.to_json() for record in bed.calls()])
        calls = tuple(sorted({re.sub(r" \(x\d+\)$", "", line) for line in lines}))
        return Seen(bed.usable(GPU), sockets, calls)


@pytest.mark.parametrize(("knob", "value", "probe"), CASES, ids=[f"{knob}={value}" for knob, value, _ in CASES])
async def test_the_proxy_shows_the_node_what_the_reference_driver_s_own_knob_shows(
    knob: str, value: str, probe: Probe
) -> None:
    own = await seen(DriverSpec(GPU, extra_args=(f"--fault-{knob}", value)), probe)
    proxied = await seen(DriverSpec(GPU, proxied=True, wire_faults={knob: value}), probe)
    assert proxied == own
