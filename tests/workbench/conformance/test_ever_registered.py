"""Whether the driver ever registered, read from the node's call record (a driver that exits right after
registering did start), one case per row; a notification whose call has not ended is in flight, not a refusal."""

from __future__ import annotations

import pytest

from kubelet_dra.peers.api.calls import CallRecord
from kubelet_dra.peers.api.services import REGISTRATION
from kubelet_dra.workbench.conformance.probe import IN_FLIGHT, NOT_REGISTERED, REGISTERED, registration_seen

DRIVER = "gpu.example.com"


def call(method: str, socket: str, *, name: str = "", registered: bool = False, status: str = "OK") -> CallRecord:
    get_info = method == "GetInfo"
    return CallRecord(
        request_id=1,
        driver="",
        endpoint=socket,
        method=REGISTRATION.method_path(method),
        streaming=False,
        request={} if get_info else {"plugin_registered": registered},
        response={"name": name} if get_info and status == "OK" else None if get_info else {},
        status=status,
        details="",
        started_at=0.0,
        duration=0.0,
    )


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        (
            [call("GetInfo", "/r/a.sock", name=DRIVER), call("NotifyRegistrationStatus", "/r/a.sock", registered=True)],
            REGISTERED,
        ),
        ([call("GetInfo", "/r/a.sock", name=DRIVER), call("NotifyRegistrationStatus", "/r/a.sock")], NOT_REGISTERED),
        (
            [
                call("GetInfo", "/r/a.sock", name="other"),
                call("NotifyRegistrationStatus", "/r/a.sock", registered=True),
            ],
            NOT_REGISTERED,
        ),
        (
            [call("GetInfo", "/r/a.sock", name=DRIVER), call("NotifyRegistrationStatus", "/r/b.sock", registered=True)],
            IN_FLIGHT,
        ),
        (
            [
                call("GetInfo", "/r/a.sock", name=DRIVER),
                call("GetInfo", "/r/a.sock", name="other"),
                call("NotifyRegistrationStatus", "/r/a.sock", registered=True),
            ],
            NOT_REGISTERED,
        ),
        ([call("GetInfo", "/r/a.sock", name=DRIVER)], IN_FLIGHT),
        ([call("GetInfo", "/r/a.sock", status="DEADLINE_EXCEEDED")], NOT_REGISTERED),
        ([], NOT_REGISTERED),
    ],
    ids=[
        "registered",
        "refused",
        "another-driver",
        "another-socket",
        "socket-reused",
        "notifying",
        "no-answer",
        "no-call",
    ],
)
def test_the_driver_registered_only_when_the_node_told_its_socket_so(records, expected) -> None:
    assert registration_seen(records, DRIVER) == expected


def test_without_a_driver_name_the_driver_under_test_is_whichever_registered() -> None:
    """``--driver-cmd`` without ``--driver-name``: the node's only driver is the one under test."""
    records = [call("GetInfo", "/r/a.sock", name="gpu.nvidia.com")]
    assert registration_seen(records, None) == IN_FLIGHT
    records.append(call("NotifyRegistrationStatus", "/r/a.sock", registered=True))
    assert registration_seen(records, None) == REGISTERED
    assert registration_seen(records, DRIVER) == NOT_REGISTERED
