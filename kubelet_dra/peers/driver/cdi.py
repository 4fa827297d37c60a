"""CDI spec files: how a prepared device reaches a container.

Laid out like dra-example-driver's (tests/fixtures/dra-example-driver): kind
``k8s.<driver>/device``, one transient spec per claim named ``<vendor>-<class>_<claim UID>`` with
one CDI device ``<claim UID>-<device>`` per allocated device, each carrying environment
variables, plus a ``common`` device with the node-wide ones. Written as JSON (valid YAML, which
is what CDI reads); the container runtime finds them in ``--cdi-root``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.datafiles import replace_file
from kubelet_dra.peers.driver.files import remove

CDI_VERSION = "0.3.0"
CDI_CLASS = "device"
COMMON_DEVICE = "common"
CDI_SPEC_MODE = 0o644
"""A CDI spec is read by the container runtime, whoever it runs as."""


@attrs.frozen
class CDIDevice:
    name: str
    env: tuple[str, ...]

    def to_spec(self) -> dict[str, Any]:
        return {"name": self.name, "containerEdits": {"env": list(self.env)}}


class CDISpecs:
    """Writes and removes this driver's spec files under one CDI root."""

    def __init__(self, root: Path, driver_name: str, node_name: str) -> None:
        self.root = root
        self.vendor = f"k8s.{driver_name}"
        self.kind = f"{self.vendor}/{CDI_CLASS}"
        self._common_env = (f"KUBERNETES_NODE_NAME={node_name}", f"DRA_RESOURCE_DRIVER_NAME={driver_name}")

    def device_id(self, name: str, *, qualified: bool = True) -> str:
        """``vendor/class=name``, the form the kubelet hands to the runtime (or just ``name``)."""
        return f"{self.kind}={name}" if qualified else name

    def common_id(self, *, qualified: bool = True) -> str:
        return self.device_id(COMMON_DEVICE, qualified=qualified)

    def claim_device_name(self, claim_uid: str, device: str) -> str:
        return f"{claim_uid}-{device}"

    def claim_path(self, claim_uid: str) -> Path:
        return self.root / f"{self._spec_name(claim_uid)}.json"

    @property
    def common_path(self) -> Path:
        return self.root / f"{self._spec_name(COMMON_DEVICE)}.json"

    def write_common(self) -> None:
        self._write(self.common_path, [CDIDevice(COMMON_DEVICE, self._common_env)])

    def write_claim(self, claim_uid: str, devices: list[CDIDevice]) -> None:
        self._write(self.claim_path(claim_uid), devices)

    def remove_claim(self, claim_uid: str) -> None:
        remove(self.claim_path(claim_uid))

    def _spec_name(self, transient_id: str) -> str:
        return f"{self.vendor}-{CDI_CLASS}_{transient_id}"

    def _write(self, path: Path, devices: list[CDIDevice]) -> None:
        spec = {"cdiVersion": CDI_VERSION, "kind": self.kind, "devices": [device.to_spec() for device in devices]}
        self.root.mkdir(parents=True, exist_ok=True)
        replace_file(path, (json.dumps(spec, indent=2) + "\n").encode(), mode=CDI_SPEC_MODE)
