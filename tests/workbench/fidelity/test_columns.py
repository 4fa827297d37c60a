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
