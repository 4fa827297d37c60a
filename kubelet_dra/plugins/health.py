"""Device health reported by drivers over ``NodeWatchResources``, with the kubelet's staleness rule (SPEC.md §5.11).

A device's health counts only while it is fresh: once its last report is older than its timeout
(the driver's ``health_check_timeout_seconds``, else 30 s) it reads as ``Unknown``. Drivers must
therefore resend their full device list more often than the timeout. When a driver's stream
ends, everything known about that driver is forgotten.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from kubelet_dra.api import dra_health_v1alpha1_pb2 as health_pb2
from kubelet_dra.log import Logger

DEFAULT_HEALTH_TIMEOUT = 30.0
MESSAGE_MAX_BYTES = 1024


class Health(enum.StrEnum):
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    UNKNOWN = "Unknown"


_FROM_WIRE = {
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


def truncate_message(message: str) -> str:
    """At most 1024 bytes: longer messages keep their first 1021 bytes and get ``...``."""
    raw = message.encode()
    if len(raw) <= MESSAGE_MAX_BYTES:
        return message
    return raw[: MESSAGE_MAX_BYTES - 3].decode(errors="ignore") + "..."


class HealthCache:
    def __init__(self, *, clock: Callable[[], float], log: Logger) -> None:
        self._clock = clock
        self._log = log
        self._drivers: dict[str, dict[str, DeviceHealth]] = {}

    def update(self, driver: str, response: health_pb2.NodeWatchResourcesResponse) -> list[DeviceHealth]:
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
        return changed

    def clear(self, driver: str) -> None:
        self._drivers.pop(driver, None)

    def devices(self, driver: str) -> list[DeviceHealth]:
        """The driver's devices as the kubelet would report them now (stale ones ``Unknown``)."""
        now = self._clock()
        return [
            device.as_unknown() if device.stale(now) else device
            for _, device in sorted(self._drivers.get(driver, {}).items())
        ]
