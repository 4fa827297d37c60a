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
