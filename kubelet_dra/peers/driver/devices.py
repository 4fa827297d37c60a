"""The devices this driver pretends to have on its node, and which of them exist right now.

Device identities are stable across restarts (the UUID derives from driver, node and index), so a
restarted driver publishes the same devices and recognises the allocations made against them.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from kubelet_dra import __version__
from kubelet_dra.peers.driver.configfile import LabelSelector

DEVICE_PREFIX = "device"
DEVICE_MODEL = "KUBELET-DRA-TEST-DEVICE"
DEVICE_MEMORY = "16Gi"


@attrs.frozen
class Device:
    name: str
    index: int
    uuid: str

    def to_slice(self, *, shared: bool) -> dict[str, Any]:
        """The device as a ``resource.k8s.io/v1`` ResourceSlice entry."""
        entry: dict[str, Any] = {
            "name": self.name,
            "attributes": {
                "driverVersion": {"version": __version__},
                "index": {"int": self.index},
                "model": {"string": DEVICE_MODEL},
                "uuid": {"string": self.uuid},
            },
            "capacity": {"memory": {"value": DEVICE_MEMORY}},
        }
        if shared:  # each allocation takes 1Gi unless it asks for more, so claims really share the device
            entry["allowMultipleAllocations"] = True
            entry["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi", "validRange": {"min": "1Gi"}}
        return entry


def make_devices(driver_name: str, node_name: str, count: int) -> tuple[Device, ...]:
    return tuple(
        Device(
            name=f"{DEVICE_PREFIX}-{index}",
            index=index,
            uuid=f"{DEVICE_PREFIX}-{uuid.uuid5(uuid.NAMESPACE_URL, f'{driver_name}/{node_name}/{index}')}",
        )
        for index in range(count)
    )


class Inventory:
    """All devices of this node, present only while the node's labels match the config's selector."""

    def __init__(self, devices: tuple[Device, ...], selector: LabelSelector | None) -> None:
        self._all = devices
        self._by_name = {device.name: device for device in devices}
        self._selector = selector
        self._present = selector is None

    def update_node_labels(self, labels: dict[str, str]) -> None:
        """Re-decide presence from the Node object's labels (read by the slice publisher)."""
        self._present = self._selector is None or self._selector.matches(labels)

    @property
    def all(self) -> tuple[Device, ...]:
        """Every device, present or not (health is reported for these)."""
        return self._all

    @property
    def devices(self) -> tuple[Device, ...]:
        """The devices that exist now."""
        return self._all if self._present else ()

    def get(self, name: str) -> Device | None:
        """The device called ``name`` if it exists now."""
        return self._by_name.get(name) if self._present else None
