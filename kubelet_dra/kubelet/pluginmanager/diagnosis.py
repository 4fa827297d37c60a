"""Why a registration failed, in plain words: the failure modes F1–F20 of docs/protocol.md#failure-modes.

The kubelet's own messages are precise but cryptic (validation errors arrive behind the
prefix "failed to send error"). Each failed attempt here yields a ``Diagnosis`` that keeps the
kubelet's message verbatim and adds the failure mode, the concrete cause and what to do.
Messages copied from a real kubelet's log are explained by ``kubelet_dra.workbench.debug.catalogue``, which
reuses the symptoms and fixes kept here.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import re
from collections.abc import Sequence

import attrs
import grpc


@attrs.frozen
class FailureMode:
    id: str
    symptom: str
    fix: str
    kubelet_line: str = ""
    """What the real kubelet 1.36.2 logs for it (-v 4, checked beside it with the reference driver's knobs), as a
    template: ``{socket}``, ``{driver}``, ``{endpoint}`` and ``{error}`` stand for the names of the case."""

    def kubelet_says(self, **names: str) -> str:
        """The real kubelet's line for this case, its names filled in."""
        return self.kubelet_line.format(**names)


FAILURE_MODES: dict[str, FailureMode] = {
    mode.id: mode
    for mode in (
        FailureMode(
            "F1",
            "driver never contacted",
            "create the registration socket directly in the watched registry directory (or a sub-directory),"
            " with a name not starting with '.'; do not move it in or out",
        ),
        FailureMode(
            "F2",
            "dial of the registration socket fails",
            "start the driver's registration server before (re)creating the socket, remove stale sockets"
            " on shutdown, and check the socket's permissions and SELinux label",
            "RegisterPlugin error -- dial failed at socket {socket}, err: failed to dial socket {socket},"
            " err: context deadline exceeded",
        ),
        FailureMode(
            "F3",
            "GetInfo fails",
            "serve pluginregistration.Registration on the registration socket and answer GetInfo within 1 s",
            "RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket {socket}, err: {error}",
        ),
        FailureMode(
            "F4",
            "wrong plugin type",
            'set PluginInfo.type to exactly "DRAPlugin"',
            "RegisterPlugin error -- no handler registered for plugin type: {error} at socket {socket}",
        ),
        FailureMode(
            "F5",
            "empty list of supported services",
            'list "v1.DRAPlugin" and/or "v1beta1.DRAPlugin" in PluginInfo.supported_versions',
            "plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin {driver} at"
            " endpoint {endpoint}: empty list of supported gRPC services (aka supported versions)",
        ),
        FailureMode(
            "F6",
            "no supported DRA service advertised",
            'advertise "v1.DRAPlugin" or "v1beta1.DRAPlugin" (the advertised identifier, not the wire service'
            ' name, not a legacy "1.0.0" or "v1alpha3.NodeService")',
            "plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin {driver} at"
            " endpoint {endpoint}: none of services supported by the plugin ({error}) are supported by the kubelet"
            ' (["v1.DRAPlugin" "v1beta1.DRAPlugin"])',
        ),
        FailureMode(
            "F7",
            "endpoint already registered",
            "give every instance of the driver its own service socket (rolling update: per-pod socket names)",
        ),
        FailureMode(
            "F8",
            "gRPC connection to the endpoint cannot be created",
            "return an absolute service socket path in PluginInfo.endpoint",
        ),
        FailureMode(
            "F9",
            "NotifyRegistrationStatus fails",
            "answer NotifyRegistrationStatus(plugin_registered=true) without an error, within 5 s",
            "RegisterPlugin error -- failed to send registration status at socket {socket}, err: : {error}",
        ),
        FailureMode(
            "F10",
            "service connection never established, ResourceSlices wiped",
            "make PluginInfo.endpoint a path that exists and serves gRPC on the host within 30 s of registration",
            '"NodeWatchResources RPC call failed" err="rpc error: code = Unavailable desc = connection error: desc = '
            '\\"transport: Error while dialing: dial unix {endpoint}: connect: {error}\\""',
        ),
        FailureMode(
            "F11",
            "DRA service registered under another name than advertised",
            "register the service under its full wire name, e.g. k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
        ),
        FailureMode(
            "F12",
            "DRA driver is not registered",
            "start the driver's kubelet plugin on this node and check that it registers (kubelet-dra debug); if it"
            " is registered, use its PluginInfo.name as the driver name in ResourceSlices and allocations",
        ),
        FailureMode(
            "F13",
            "health stream unsupported",
            "implement v1alpha1.DRAResourceHealth, or ignore the harmless error",
        ),
        FailureMode(
            "F14",
            "node ResourceSlices wiped at kubelet start",
            "re-publish ResourceSlices after they are deleted (the helper does so after its sync delay)",
        ),
        FailureMode(
            "F15",
            "pod stuck terminating",
            "make NodeUnprepareResources succeed, also for unknown claims, and keep the driver registered",
        ),
        FailureMode(
            "F16",
            "result for an unknown claim UID",
            "key the NodePrepareResources response map by claim UID and answer only requested claims",
        ),
        FailureMode(
            "F17",
            "claims skipped in the response",
            "return one entry per requested claim in the response map",
        ),
        FailureMode(
            "F18",
            "driver cannot read the claim",
            "grant the driver get on resourceclaims and handle claims that changed since the kubelet read them",
        ),
        FailureMode(
            "F19",
            "DRA checkpoint unreadable",
            "drain the node and remove the dra_manager_state file",
        ),
        FailureMode(
            "F20",
            "calls go to another instance",
            "keep driver instances stateless across calls or share their state",
        ),
    )
}


@attrs.frozen
class Diagnosis:
    """One failed registration attempt of one socket, explained."""

    id: str
    """The failure mode, ``F1`` … ``F20`` (docs/protocol.md#failure-modes)."""
    socket: str
    cause: str
    """What concretely went wrong, in plain words."""
    message: str
    """The kubelet's text, verbatim: what it sent in ``RegistrationStatus.error``, else its logged error."""
    fix: str

    @property
    def symptom(self) -> str:
        return FAILURE_MODES[self.id].symptom


def diagnose(mode_id: str, *, socket: str, cause: str, message: str) -> Diagnosis:
    return Diagnosis(mode_id, socket, cause, message, FAILURE_MODES[mode_id].fix)


REFUSALS: dict[str, str] = {
    "F5": r"empty list of supported gRPC services",
    "F6": r"none of services supported by the plugin",
    "F7": r"already registered for DRA driver plugin",
    "F8": r"create gRPC connection to DRA driver",
}
"""The DRA handler's refusals by failure mode: the words of its error (the catalogue of log lines matches them too)."""


def classify(message: str) -> str | None:
    """The failure mode of a DRA handler's refusal (validation or registration), or ``None``.

    Log lines are explained by the debugger's catalogue of kubelet messages; this only tells the handshake
    which of its refusals it is diagnosing."""
    return next((mode_id for mode_id, pattern in REFUSALS.items() if re.search(pattern, message)), None)


# --- each failed step of a register attempt, explained (the handshake, operation_generator.py) ---


async def why_dial_failed(socket_path: str) -> str:
    """A plain-words reason why nothing answered on ``socket_path``, found with one raw connect."""
    try:
        _, writer = await asyncio.open_unix_connection(socket_path)
    except FileNotFoundError:
        return "the socket file is gone"
    except ConnectionRefusedError:
        return "connection refused: no process listens on the socket (a stale socket left by a driver that exited)"
    except PermissionError:
        return "permission denied: this user may not connect to the socket"
    except OSError as err:
        return f"connect failed: {errno.errorcode.get(err.errno or 0, '')} {err.strerror}".replace("  ", " ")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return "the socket accepts connections but no gRPC server answered in time"


async def dial_failed(socket: str, message: str) -> Diagnosis:
    return diagnose("F2", socket=socket, cause=await why_dial_failed(socket), message=message)


def get_info_failed(socket: str, message: str, err: grpc.aio.AioRpcError) -> Diagnosis:
    cause = {
        grpc.StatusCode.DEADLINE_EXCEEDED: "GetInfo took longer than the kubelet's 1 s",
        grpc.StatusCode.UNIMPLEMENTED: "the socket does not serve pluginregistration.Registration/GetInfo",
    }.get(err.code(), f"GetInfo failed with {err.code().name}: {err.details()}")
    return diagnose("F3", socket=socket, cause=cause, message=message)


def wrong_type(socket: str, message: str, plugin_type: str) -> Diagnosis:
    cause = f"GetInfo returned type {plugin_type!r}; the only DRA plugin type is 'DRAPlugin'"
    return diagnose("F4", socket=socket, cause=cause, message=message)


def validation_refused(socket: str, message: str, versions: Sequence[str]) -> Diagnosis:
    mode_id = classify(message) or "F6"
    cause = (
        "GetInfo returned an empty supported_versions list"
        if mode_id == "F5"
        else f"supported_versions {list(versions)!r} name no DRA service this kubelet calls"
    )
    return diagnose(mode_id, socket=socket, cause=cause, message=message)


def registration_refused(socket: str, message: str, error: str, endpoint: str) -> Diagnosis:
    mode_id = classify(message) or "F8"
    cause = (
        f"another registration socket already registered endpoint {endpoint} for this driver"
        if mode_id == "F7"
        else f"the handler refused the plugin: {error}"
    )
    return diagnose(mode_id, socket=socket, cause=cause, message=message)


def notify_failed(socket: str, message: str, rpc_error: str) -> Diagnosis:
    cause = f"the driver answered NotifyRegistrationStatus(plugin_registered=true) with {rpc_error}"
    return diagnose("F9", socket=socket, cause=cause, message=message)
