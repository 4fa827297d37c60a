"""Device health reported by drivers over ``NodeWatchResources``, with the kubelet's staleness rule.

The kubelet's ``pkg/kubelet/cm/dra/healthinfo.go``; docs/protocol.md#device-health.

A device's health counts only while it is fresh: once its last report is older than its timeout
(the driver's ``health_check_timeout_seconds``, else 30 s) it reads as ``Unknown``. Drivers must
therefore resend their full device list more often than the timeout. When a driver's stream
ends, everything known about that driver is forgotten.

With a state file, the cache is written to it (the kubelet's ``dra_health_state``: plain JSON,
replaced atomically) after every change and every stream end, and read back at start; a file
that cannot be read or written is logged, never fatal, as in the kubelet.
"""

from __future__ import annotations

import datetime
import enum
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health_pb2
from kubelet_dra.peers.api.services import HealthResponse
from kubelet_dra.peers.datafiles import replace_file
from kubelet_dra.peers.log import Logger

DEFAULT_HEALTH_TIMEOUT = 30.0
MESSAGE_MAX_BYTES = 1024
STATE_FILE_NAME = "dra_health_state"
_NANOSECONDS = 1_000_000_000
_FRACTION = re.compile(r"(\.\d{6})\d+")


class Health(enum.StrEnum):
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    UNKNOWN = "Unknown"


_FROM_WIRE: dict[int, Health] = {
    health_pb2.HealthStatus.HEALTHY: Health.HEALTHY,
    health_pb2.HealthStatus.UNHEALTHY: Health.UNHEALTHY,
}


@attrs.frozen
class DeviceHealth:
    pool_name: str
    device_name: str
    health: Health
    last_updated: float
    """When the kubelet received the report (the driver's own timestamp is not trusted)."""
    timeout: float
    message: str = ""

    @property
    def key(self) -> str:
        return f"{self.pool_name}/{self.device_name}"

    def stale(self, now: float) -> bool:
        return now - self.last_updated > self.timeout

    def as_unknown(self) -> DeviceHealth:
        return attrs.evolve(self, health=Health.UNKNOWN, message="")

    def to_json(self) -> dict[str, Any]:
        """The entry as the kubelet's state file has it (Go field names, RFC 3339 time, timeout in ns)."""
        updated = datetime.datetime.fromtimestamp(self.last_updated, datetime.UTC)
        return {
            "PoolName": self.pool_name,
            "DeviceName": self.device_name,
            "Health": str(self.health),
            "LastUpdated": updated.isoformat().replace("+00:00", "Z"),
            "HealthCheckTimeout": round(self.timeout * _NANOSECONDS),
            "Message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeviceHealth:
        """An entry of the state file; a timeout of 0 means the default. Raises on a malformed entry."""
        updated = _FRACTION.sub(r"\1", str(data["LastUpdated"]))  # Go writes up to 9 digits, Python reads 6
        timeout = int(data.get("HealthCheckTimeout") or 0) / _NANOSECONDS
        return cls(
            pool_name=str(data["PoolName"]),
            device_name=str(data["DeviceName"]),
            health=Health(data["Health"]),
            last_updated=datetime.datetime.fromisoformat(updated).timestamp(),
            timeout=timeout or DEFAULT_HEALTH_TIMEOUT,
            message=str(data.get("Message") or ""),
        )


def truncate_message(message: str) -> str:
    """At most 1024 bytes: longer messages keep their first 1021 bytes and get ``...``."""
    raw = message.encode()
    if len(raw) <= MESSAGE_MAX_BYTES:
        return message
    return raw[: MESSAGE_MAX_BYTES - 3].decode(errors="ignore") + "..."


class HealthCache:
    def __init__(self, *, clock: Callable[[], float], log: Logger, state_dir: str | Path | None = None) -> None:
        self._clock = clock
        self._log = log
        self._drivers: dict[str, dict[str, DeviceHealth]] = {}
        self.path = Path(state_dir) / STATE_FILE_NAME if state_dir is not None else None
        self._load()

    def update(self, driver: str, response: HealthResponse) -> list[DeviceHealth]:
        """Apply one stream message; return the devices whose health changed."""
        now = self._clock()
        devices = self._drivers.setdefault(driver, {})
        changed: list[DeviceHealth] = []
        reported: set[str] = set()
        for item in response.devices:
            if item.health_check_timeout_seconds < 0:
                self._log.v(4).info(
                    "Negative health check timeout, using the default",
                    driverName=driver,
                    timeout=item.health_check_timeout_seconds,
                )
            device = DeviceHealth(
                pool_name=item.device.pool_name,
                device_name=item.device.device_name,
                health=_FROM_WIRE.get(item.health, Health.UNKNOWN),
                last_updated=now,
                timeout=float(item.health_check_timeout_seconds)
                if item.health_check_timeout_seconds > 0
                else DEFAULT_HEALTH_TIMEOUT,
                message=truncate_message(item.message),
            )
            reported.add(device.key)
            old = devices.get(device.key)
            if old is None or (old.health, old.message, old.timeout) != (device.health, device.message, device.timeout):
                changed.append(device)
            devices[device.key] = device
        for key, device in devices.items():
            if key not in reported and device.health is not Health.UNKNOWN and device.stale(now):
                devices[key] = device.as_unknown()
                changed.append(devices[key])
        if changed:
            self._store()
        return changed

    def clear(self, driver: str) -> None:
        """The driver's stream ended: forget all its devices, whichever instance reported them."""
        self._drivers.pop(driver, None)
        self._store()

    def devices(self, driver: str) -> list[DeviceHealth]:
        """The driver's devices as the kubelet would report them now (stale ones ``Unknown``)."""
        now = self._clock()
        return [
            device.as_unknown() if device.stale(now) else device
            for _, device in sorted(self._drivers.get(driver, {}).items())
        ]

    # --- the state file ---

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._drivers = {
                driver: {key: DeviceHealth.from_json(device) for key, device in (entry.get("Devices") or {}).items()}
                for driver, entry in (data or {}).items()
            }
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
            self._drivers = {}
            self._log.error("Failed to load the health state, starting without it", err, path=str(self.path))
            return
        self._log.v(2).info("Loaded health state", path=str(self.path), drivers=sorted(self._drivers))

    def _store(self) -> None:
        """Replace the state file atomically: a temp file next to it, then a rename."""
        if self.path is None:
            return
        data = {
            driver: {"Devices": {key: device.to_json() for key, device in sorted(devices.items())}}
            for driver, devices in sorted(self._drivers.items())
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, json.dumps(data).encode())
        except OSError as err:
            self._log.error("Failed to save the health state", err, path=str(self.path))
