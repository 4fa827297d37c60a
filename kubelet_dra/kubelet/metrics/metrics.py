"""The kubelet's DRA metrics for one node, and the endpoint that serves them.

The kubelet's ``pkg/kubelet/metrics/metrics.go``; docs/run.md#metrics.

Each node has its own registry, so several nodes in one process keep their numbers apart. The
names, labels and buckets are the kubelet's, so dashboards and alerts written for a real node
work against a simulated one::

    dra_operations_duration_seconds{operation_name, is_error}
    dra_grpc_operations_duration_seconds{driver_name, method_name, grpc_status_code}
    dra_resource_claims_in_use{driver_name}   ("<any>": all claims)
    dra_node_prepare_skips_total{driver_name}    (1.37: calls skipped as optional node operations)
    dra_node_unprepare_skips_total{driver_name}
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import grpc
import prometheus_client
from aiohttp import web
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubelet_dra.peers.api.goformat import go_code_name
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import get_logger

ANY_DRIVER = "<any>"
"""The ``driver_name`` of the claims-in-use total (a claim with devices of two drivers counts once here)."""
PREPARE = "PrepareResources"
UNPREPARE = "UnprepareResources"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format, as a kubelet's ``/metrics`` announces it."""


def exponential_buckets_range(low: float, high: float, count: int) -> list[float]:
    """``count`` buckets growing by a constant factor from ``low`` to ``high``, like Prometheus' Go client."""
    factor = (high / low) ** (1.0 / (count - 1))
    return [low * factor**i for i in range(count)]


BUCKETS = exponential_buckets_range(0.1, 40.0, 15)


class _ClaimsInUse(Collector):
    """Counts claims at scrape time from whoever holds them (the DRA manager's claim info cache)."""

    def __init__(self) -> None:
        self.source: Callable[[], Mapping[str, int]] = lambda: {ANY_DRIVER: 0}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "dra_resource_claims_in_use",
            "[ALPHA] Number of ResourceClaims currently prepared on the node, per driver (driver_name) and in total"
            " (driver_name <any>). Claims using devices of several drivers count once per driver, so use <any>"
            " for the total.",
            labels=["driver_name"],
        )
        for driver, count in sorted(self.source().items()):
            family.add_metric([driver], count)
        yield family


class DRAMetrics:
    """One node's DRA metrics; the DRA manager and the plugins' gRPC clients record into it."""

    def __init__(self, *, skip_counters: bool = True) -> None:
        """``skip_counters``: the release has the optional node operations' counters (1.37), which 1.36 lacks."""
        prometheus_client.disable_created_metrics()  # the kubelet exposes no *_created series
        self.registry = prometheus_client.CollectorRegistry()
        self._operations = prometheus_client.Histogram(
            "dra_operations_duration_seconds",
            "[ALPHA] Seconds spent preparing or unpreparing all ResourceClaims of one pod, by operation_name"
            " (PrepareResources or UnprepareResources) and is_error; the count of failed operations is the"
            " count of the is_error=true series.",
            ["operation_name", "is_error"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._grpc_operations = prometheus_client.Histogram(
            "dra_grpc_operations_duration_seconds",
            "[ALPHA] Seconds per unary gRPC call to a DRA driver, by driver_name, full method_name and"
            " grpc_status_code.",
            ["driver_name", "method_name", "grpc_status_code"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._skips = {
            operation: prometheus_client.Counter(
                f"dra_node_{short}_skips",
                f"[ALPHA] Node{operation} calls the kubelet did not make, per driver_name, because every device"
                " of the driver in the claims skips that operation (DRAOptionalNodeOperations).",
                ["driver_name"],
                registry=self.registry,
            )
            for operation, short in ((PREPARE, "prepare"), (UNPREPARE, "unprepare"))
            if skip_counters
        }
        self._claims_in_use = _ClaimsInUse()
        self.registry.register(self._claims_in_use)

    def observe_operation(self, operation: str, error: bool, seconds: float) -> None:
        self._operations.labels(operation_name=operation, is_error=str(error).lower()).observe(seconds)

    def observe_grpc(self, driver: str, method: str, code: grpc.StatusCode, seconds: float) -> None:
        self._grpc_operations.labels(
            driver_name=driver, method_name=method, grpc_status_code=go_code_name(code)
        ).observe(seconds)

    def count_skip(self, operation: str, driver: str) -> None:
        """One ``NodePrepareResources`` (``PREPARE``) or ``NodeUnprepareResources`` call skipped for ``driver``."""
        self._skips[operation].labels(driver_name=driver).inc()

    def count_claims_with(self, source: Callable[[], Mapping[str, int]]) -> None:
        """Where ``dra_resource_claims_in_use`` comes from: driver name → prepared claims, with ``<any>``."""
        self._claims_in_use.source = source

    def text(self) -> str:
        """The Prometheus text exposition, exactly what ``GET /metrics`` returns."""
        return prometheus_client.generate_latest(self.registry).decode()


class MetricsServer:
    """``GET /metrics`` on an address and port, served from the node's event loop (no thread to stop)."""

    def __init__(self, metrics: DRAMetrics) -> None:
        self._metrics = metrics
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self, address: str, port: int) -> str:
        """Listen (port 0: any free port) and return the URL of the metrics; a busy port is a ``ConfigError``."""
        app = web.Application()
        app.router.add_get("/metrics", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, address, port)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            raise ConfigError(
                f"cannot serve metrics on {address}:{port}: {err.strerror or err}",
                where="--metrics-port",
                fix="pick a free port with --metrics-port (0 turns metrics off) or another --metrics-address",
            ) from err
        self._runner = runner
        host, bound = runner.addresses[0][:2]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{bound}/metrics"
        get_logger("metrics").info("Serving metrics", url=self.url)
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, _request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.text().encode(), headers={"Content-Type": CONTENT_TYPE})
