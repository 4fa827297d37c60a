"""The calls column: what a node made that reached a driver, whichever side recorded it."""

from __future__ import annotations

from kubelet_dra.workbench.fidelity.columns import calls

HEALTH = "/k8s.io.kubelet.pkg.apis.dra_health.v1alpha1.DRAResourceHealth/NodeWatchResources"


def _record(status: str, details: str) -> dict[str, object]:
    return {
        "request_id": 1,
        "driver": "gpu.example.com",
        "endpoint": "/nothing/dra.sock",
        "method": HEALTH,
        "streaming": True,
        "request": {},
        "response": [],
        "status": status,
        "details": details,
        "started_at": 1.0,
        "duration": 0.01,
    }


def test_a_call_that_never_reached_a_driver_is_not_in_the_column():
    """kubelet-dra records its failed dial of an endpoint nothing serves; the tap in front of the real kubelet never
    sees such a call, and no driver does."""
    unreached = _record("UNAVAILABLE", "failed to connect to all addresses; last error: connect failed")
    assert calls([unreached]) == []
    refused = _record("UNAVAILABLE", "the driver is shutting down")
    assert [line.split(" ", 2)[1:2] for line in calls([refused])] == [["DRAResourceHealth/NodeWatchResources"]]


def test_a_refusal_names_the_endpoint_by_its_socket_not_its_dir():
    """The kubelet's refusal names the endpoint it was given: the driver's on kubelet-dra, the tap's on the real
    kubelet (the tap stands in for it), each in the run's own dirs."""
    refusal = "invalid supported gRPC versions of DRA driver plugin gpu.example.com at endpoint {}: none of services"

    def notify(endpoint: str) -> dict[str, object]:
        error = refusal.format(endpoint)
        return {
            **_record("UNKNOWN", f"failed registration process: {error}"),
            "driver": "",
            "endpoint": "/run/drivers/gpu.example.com-reg.sock",
            "method": "/pluginregistration.Registration/NotifyRegistrationStatus",
            "streaming": False,
            "request": {"error": error, "plugin_registered": False},
            "response": None,
        }

    ours = calls([notify("/tmp/kd-a/plugins/gpu/dra.sock")])
    real = calls([notify("/tmp/kd-b/tap/gpu.example.com-reg/dra.sock")])
    assert ours == real and "at endpoint <dir>/dra.sock: none" in ours[0]


def _report(health: str, checked: int) -> dict[str, object]:
    device = {"device_name": "gpu-0", "pool_name": "node-1"}
    return {
        "devices": [
            {
                "device": device,
                "health": health,
                "health_check_timeout_seconds": "30",
                "last_updated_time": str(checked),
            }
        ]
    }


def test_a_health_stream_shows_each_change_of_health_once_without_the_drivers_times():
    """A driver reports every interval for as long as the stream lives: six reports on one node, three on the other,
    at other times, are the same stream; a device that turned unhealthy and back is not."""

    def stream(*reports: dict[str, object]) -> list[str]:
        return calls([{**_record("CANCELLED", ""), "response": list(reports)}])

    longer = stream(*(_report("HEALTHY", 1795803025 + second) for second in range(6)))
    shorter = stream(*(_report("HEALTHY", 1795803127 + second) for second in range(3)))
    assert longer == shorter and longer[0].count('"health": "HEALTHY"') == 1
    flapped = stream(_report("HEALTHY", 1), _report("UNHEALTHY", 2), _report("UNHEALTHY", 3), _report("HEALTHY", 4))
    healths = [part.split('"', 2)[1] for part in flapped[0].split('"health": ')[1:]]
    assert healths == ["HEALTHY", "UNHEALTHY", "HEALTHY"]


def test_a_refused_registration_retried_is_one_handshake_however_often_it_fell_in_the_trace():
    """The kubelet retries a refused driver on its back-off (1, 2, 3, 5, 9 s apart on both kubelets): where each
    trace ends decides how many attempts it holds."""

    def attempts(count: int) -> list[str]:
        info = {
            **_record("OK", ""),
            "driver": "",
            "endpoint": "/run/drivers/gpu.example.com-reg.sock",
            "method": "/pluginregistration.Registration/GetInfo",
            "streaming": False,
            "response": {"name": "gpu.example.com", "endpoint": "/run/gpu/dra.sock", "type": "DRAPlugin"},
        }
        refused = {
            **info,
            "method": "/pluginregistration.Registration/NotifyRegistrationStatus",
            "request": {"error": "none of services supported", "plugin_registered": False},
            "response": None,
            "status": "UNKNOWN",
        }
        handshake = ((info, 0.0), (refused, 0.02))
        return calls([{**record, "started_at": n + after} for n in range(count) for record, after in handshake])

    assert attempts(3) == attempts(4) and len(attempts(4)) == 2
