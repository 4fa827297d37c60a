"""Each refusal of a register attempt is diagnosed by its own function of ``diagnosis``, one row per failure mode:
the failure mode, the cause in plain words, and the kubelet's message kept verbatim."""

from __future__ import annotations

import pytest

from kubelet_dra.kubelet.pluginmanager import diagnosis

SOCKET = "/registry/gpu.sock"
ENDPOINT = "/plugins/gpu/dra.sock"
EMPTY = "invalid supported gRPC versions of DRA driver plugin gpu: empty list of supported gRPC services"
NONE = "invalid supported gRPC versions of DRA driver plugin gpu: none of services supported by the plugin"
TAKEN = f"endpoint {ENDPOINT} already registered for DRA driver plugin gpu"
NO_CONNECTION = f"create gRPC connection to DRA driver gpu plugin at endpoint {ENDPOINT}: parse"


@pytest.mark.parametrize(
    ("found", "mode", "cause"),
    [
        (diagnosis.wrong_type(SOCKET, "m", "CSIPlugin"), "F4", "GetInfo returned type 'CSIPlugin'"),
        (diagnosis.validation_refused(SOCKET, EMPTY, []), "F5", "empty supported_versions list"),
        (diagnosis.validation_refused(SOCKET, NONE, ["1.0.0"]), "F6", "supported_versions ['1.0.0'] name no DRA"),
        (
            diagnosis.registration_refused(SOCKET, TAKEN, TAKEN, ENDPOINT),
            "F7",
            f"already registered endpoint {ENDPOINT}",
        ),
        (
            diagnosis.registration_refused(SOCKET, NO_CONNECTION, "e", ENDPOINT),
            "F8",
            "the handler refused the plugin: e",
        ),
        (diagnosis.notify_failed(SOCKET, "m", "rpc error: code = Unknown"), "F9", "with rpc error: code = Unknown"),
    ],
    ids=["wrong-type", "no-versions", "no-dra-service", "endpoint-taken", "no-connection", "notify-failed"],
)
def test_each_refusal_names_its_failure_mode_and_cause(found: diagnosis.Diagnosis, mode: str, cause: str) -> None:
    assert (found.id, found.socket) == (mode, SOCKET)
    assert cause in found.cause
    assert found.fix == diagnosis.FAILURE_MODES[mode].fix


async def test_a_dial_to_a_missing_socket_is_diagnosed_as_gone(tmp_path) -> None:
    found = await diagnosis.dial_failed(str(tmp_path / "gone.sock"), "dial failed")
    assert (found.id, found.cause, found.message) == ("F2", "the socket file is gone", "dial failed")
