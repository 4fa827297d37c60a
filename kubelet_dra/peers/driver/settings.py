"""Everything one driver instance is told at start: names, directories, device count, config.

Paths follow the Go helper's defaults (docs/protocol.md#helper-defaults) so the driver drops into a real node:
``<registry dir>/<driver>-reg.sock`` for registration and ``<plugin dir>/dra.sock`` for the
DRA services, with ``<plugin dir>`` = ``/var/lib/kubelet/plugins/<driver>``.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from kubelet_dra.peers.driver.configfile import DriverConfig, driver_name_problem
from kubelet_dra.peers.errors import UsageError

DEFAULT_DRIVER_NAME = "test-driver.kubelet-dra.io"
DEFAULT_REGISTRY_DIR = Path("/var/lib/kubelet/plugins_registry")
DEFAULT_PLUGINS_DIR = Path("/var/lib/kubelet/plugins")
DEFAULT_CDI_ROOT = Path("/var/run/cdi")
DEFAULT_DEVICES = 8
DEFAULT_REPUBLISH_DELAY = 30.0
"""Seconds before deleted ResourceSlices are re-created: the helper's sync delay."""
DEFAULT_HEALTH_INTERVAL = 10.0
"""Seconds between full health reports: well inside the kubelet's 30 s staleness timeout."""

SERVICE_SOCKET = "dra.sock"
CONTROL_SOCKET = "control.sock"
CHECKPOINT_FILE = "checkpoint.json"
SOCKET_PATH_MAX = 107
"""Bytes in a Unix socket path (``sun_path`` less its terminating NUL)."""


def default_plugin_dir(driver_name: str) -> Path:
    return DEFAULT_PLUGINS_DIR / driver_name


@attrs.frozen
class DriverSettings:
    """The resolved settings of one driver instance."""

    driver_name: str
    node_name: str
    registry_dir: Path
    plugin_dir: Path
    cdi_root: Path = DEFAULT_CDI_ROOT
    devices: int = DEFAULT_DEVICES
    config: DriverConfig = attrs.field(factory=DriverConfig)
    kubeconfig: str | None = None
    health: bool = False
    health_interval: float = DEFAULT_HEALTH_INTERVAL
    republish_delay: float = DEFAULT_REPUBLISH_DELAY
    no_op: bool = False
    """Answer prepare and unprepare at once with no devices: what the kubelet side costs, without a driver's work."""

    @property
    def registration_socket(self) -> Path:
        return self.registry_dir / f"{self.driver_name}-reg.sock"

    @property
    def service_socket(self) -> Path:
        return self.plugin_dir / SERVICE_SOCKET

    @property
    def control_socket(self) -> Path:
        return self.plugin_dir / CONTROL_SOCKET

    @property
    def checkpoint_path(self) -> Path:
        return self.plugin_dir / CHECKPOINT_FILE


def resolve(
    *,
    node_name: str,
    driver_name: str | None = None,
    registry_dir: Path | None = None,
    plugin_dir: Path | None = None,
    cdi_root: Path | None = None,
    devices: int | None = None,
    config: DriverConfig | None = None,
    kubeconfig: str | None = None,
    health: bool = False,
    health_interval: float = DEFAULT_HEALTH_INTERVAL,
    republish_delay: float = DEFAULT_REPUBLISH_DELAY,
    no_op: bool = False,
) -> DriverSettings:
    """Settings from explicit values (``None`` = not given), the config file, then the defaults, in that order."""
    config = config or DriverConfig()
    name = driver_name or config.driver_name or DEFAULT_DRIVER_NAME
    if problem := driver_name_problem(name):
        raise UsageError(problem, where="--driver-name", fix="use a lowercase DNS subdomain such as gpu.example.com")
    if not node_name:
        raise UsageError(
            "the node name is required", where="--node-name", fix="pass --node-name (or set KUBELET_DRA_NODE_NAME)"
        )
    count = devices if devices is not None else config.devices if config.devices is not None else DEFAULT_DEVICES
    if count < 0:
        raise UsageError(f"cannot have {count} devices", where="--devices", fix="pass 0 or more")
    for label, value in (("--health-interval", health_interval), ("--republish-delay", republish_delay)):
        if value <= 0:
            raise UsageError(f"must be more than 0 seconds, got {value}", where=label)
    settings = DriverSettings(
        driver_name=name,
        node_name=node_name,
        registry_dir=Path(registry_dir or DEFAULT_REGISTRY_DIR).absolute(),
        plugin_dir=Path(plugin_dir or default_plugin_dir(name)).absolute(),
        cdi_root=Path(cdi_root or DEFAULT_CDI_ROOT).absolute(),
        devices=count,
        config=config,
        kubeconfig=kubeconfig,
        health=health,
        health_interval=health_interval,
        republish_delay=republish_delay,
        no_op=no_op,
    )
    for flag, path in (
        ("--registry-dir", settings.registration_socket),
        ("--plugin-dir", settings.service_socket),
        ("--plugin-dir", settings.control_socket),
    ):
        if len(str(path).encode()) > SOCKET_PATH_MAX:
            raise UsageError(
                f"socket path {path} is longer than the {SOCKET_PATH_MAX} bytes a Unix socket allows",
                where=flag,
                fix="use a shorter directory",
            )
    return settings
