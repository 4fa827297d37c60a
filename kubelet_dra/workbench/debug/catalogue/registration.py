"""The plugin manager's registration path and the DRA registration handler: F1–F9 and what surrounds them.

The plugin manager hands each failed attempt back to its operation map, which writes it as one error line
("Operation for … failed. No retries permitted until … Error: RegisterPlugin error -- …"): the reason is
the text after "Error:". F1–F20 are the failure modes of docs/protocol.md#failure-modes; their symptom
and fix are kept once in ``FAILURE_MODES``.
"""

from __future__ import annotations

from kubelet_dra.kubelet.pluginmanager import FAILURE_MODES, REFUSALS
from kubelet_dra.workbench.debug.catalogue.entry import Message, Source

GENERATOR = "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go"
RETRY = Source(
    "pkg/util/goroutinemap/goroutinemap.go", "Run (the attempt's error, with its back-off)", "error", line=150
)
HANDLER = "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go"
WATCHER = "pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go"
DEBUG = "kubelet-dra debug --registry-dir <the kubelet's plugins_registry> (the registration of every socket, live)"
CONFORMANCE_REG = "kubelet-dra conformance --focus REG --driver-cmd '…' (the registration checks against the driver)"
OPERATION = "Operation for .* failed. No retries permitted until .*Error: "


def _mode(mode_id: str, key: str, pattern: str, causes: tuple[str, ...], function: str, example: str) -> Message:
    mode = FAILURE_MODES[mode_id]
    return Message(
        key=key,
        mode=mode_id,
        pattern=pattern,
        title=mode.symptom,
        causes=causes,
        fix=mode.fix,
        more=DEBUG if mode_id in {"F2", "F9"} else CONFORMANCE_REG,
        sources=(Source(GENERATOR, function, "returned"), RETRY),
        example=example,
    )


SOCKET = "/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock"
ENDPOINT = "/var/lib/kubelet/plugins/gpu.example.com/dra.sock"
PREFIX = (
    f'E1125 16:56:41.996442     891 goroutinemap.go:150] Operation for "{SOCKET}" failed. No retries permitted until'
    " 2026-11-25 16:56:42.496386737 +0000 UTC m=+5.674377759 (durationBeforeRetry 500ms). Error: RegisterPlugin"
    " error -- "
)
REFUSED = f"failed to send error at socket {SOCKET}, err: RegisterPlugin error -- "
INVALID = (
    REFUSED + "plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin gpu.example.com"
    f" at endpoint {ENDPOINT}: "
)

MESSAGES: tuple[Message, ...] = (
    _mode(
        "F2",
        "dial-failed",
        r"dial failed at socket",
        (
            "a stale socket: the driver crashed or was stopped without removing its registration socket",
            "the driver creates the socket before its gRPC server serves on it",
            "the kubelet may not connect: socket permissions or SELinux label",
        ),
        "GenerateRegisterPluginFunc (dial, 10 s)",
        PREFIX + f"dial failed at socket {SOCKET}, err: failed to dial socket {SOCKET}, err: context deadline exceeded",
    ),
    _mode(
        "F3",
        "getinfo-failed",
        r"failed to get plugin info using RPC GetInfo",
        (
            "GetInfo took longer than the kubelet's 1 s (DeadlineExceeded)",
            "the driver's GetInfo returned an error",
            "the socket serves gRPC but not pluginregistration.Registration (Unimplemented)",
        ),
        "GenerateRegisterPluginFunc (GetInfo, 1 s)",
        PREFIX
        + f"failed to get plugin info using RPC GetInfo at socket {SOCKET}, err: rpc error: code = Unknown desc = boom",
    ),
    _mode(
        "F4",
        "no-handler",
        r"no handler registered for plugin type|validation failed for CSI Driver .*\.DRAPlugin",
        (
            'GetInfo\'s type is not exactly "DRAPlugin" (a typo, another case, "DRA")',
            "GetInfo's type is \"CSIPlugin\": the kubelet's CSI handler refuses it with its own validation error",
        ),
        "GenerateRegisterPluginFunc (handler lookup by type)",
        PREFIX + REFUSED + f"no handler registered for plugin type: DRA at socket {SOCKET}",
    ),
    _mode(
        "F5",
        "empty-versions",
        REFUSALS["F5"],
        ("GetInfo's supported_versions is empty (a driver that forgot to list its services)",),
        f"{HANDLER} validateSupportedServices, via GenerateRegisterPluginFunc (ValidatePlugin)",
        PREFIX + INVALID + "empty list of supported gRPC services (aka supported versions)",
    ),
    _mode(
        "F6",
        "no-supported-service",
        REFUSALS["F6"],
        (
            'a driver built for an older kubelet ("1.0.0", "v1alpha3.NodeService", v1alpha4)',
            'the wire name advertised instead of the identifier ("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin")',
            "a typo in the advertised service",
        ),
        f"{HANDLER} validateSupportedServices, via GenerateRegisterPluginFunc (ValidatePlugin)",
        PREFIX
        + INVALID
        + 'none of services supported by the plugin (["1.0.0"]) are supported by the kubelet (["v1.DRAPlugin"'
        + ' "v1beta1.DRAPlugin"])',
    ),
    _mode(
        "F7",
        "endpoint-taken",
        REFUSALS["F7"],
        (
            "two instances of the driver (a rolling update) return the same service socket path",
            "a second registration socket of the same driver points at the first one's endpoint",
        ),
        f"{HANDLER} add, via GenerateRegisterPluginFunc (RegisterPlugin)",
        PREFIX
        + f"plugin registration failed with err: endpoint {ENDPOINT} already registered for DRA driver plugin"
        + " gpu.example.com",
    ),
    _mode(
        "F8",
        "no-connection",
        REFUSALS["F8"],
        ("GetInfo's endpoint is not a path gRPC can dial as unix:<endpoint>",),
        f"{HANDLER} add, via GenerateRegisterPluginFunc (RegisterPlugin)",
        PREFIX
        + "plugin registration failed with err: create gRPC connection to DRA driver gpu.example.com plugin at"
        + " endpoint %zz: parse error",
    ),
    _mode(
        "F9",
        "notify-failed",
        r"failed to send registration status at socket",
        (
            "the driver's NotifyRegistrationStatus returned an error",
            "it took longer than the kubelet's 5 s",
        ),
        "GenerateRegisterPluginFunc (NotifyRegistrationStatus, 5 s)",
        PREFIX + f"failed to send registration status at socket {SOCKET}, err: : rpc error: code = Unknown desc = nope",
    ),
    Message(
        key="register-other",
        mode="F38",
        pattern=OPERATION + r"(?:Un)?[Rr]egisterPlugin error -- ",
        title="a registration attempt failed for a reason the lines above do not name",
        causes=(
            'the handler refused the plugin (its reason is in the same line, after "failed with err:")',
            "a socket of a plugin type this kubelet has no handler for",
        ),
        fix="read the reason after 'Error:'; the attempt is retried with a doubling back-off (0.5 s up to about 2 min)",
        more=DEBUG,
        sources=(Source(GENERATOR, "GenerateRegisterPluginFunc / GenerateUnregisterPluginFunc", "returned"), RETRY),
        example=PREFIX + "pluginHandler.ValidatePluginFunc failed",
    ),
    Message(
        key="watcher",
        mode="F1",
        pattern=r"Error (?:when handling create event|accessing path|when traversing a new directory)",
        title="the plugin watcher could not look at a file in the registry directory",
        causes=(
            "the file went away between the event and the look (a driver restarting): harmless",
            "the kubelet may not read the directory or the file (permissions, SELinux)",
        ),
        fix="if it repeats for one socket, check the registry directory's permissions and that the driver creates a"
        " socket (not a regular file) there",
        more=DEBUG,
        sources=(Source(WATCHER, "handleCreateEvent / traversePluginDir", "error"),),
        example='E1125 16:56:41.996442     891 plugin_watcher.go:170] "Error when handling create event" err="stat'
        f' {SOCKET}: no such file or directory" event="CREATE"',
    ),
    Message(
        key="deregistered",
        mode="F39",
        pattern=r"Unregistered DRA plugin",
        title="the driver's registration socket went away: the instance is deregistered",
        causes=(
            "the driver stopped or restarted (it removes its socket; a new one registers it again)",
            "something deleted the socket (a cleanup script, a pod's emptyDir going away)",
        ),
        fix="nothing when the driver comes back: with numPlugins=0 its ResourceSlices are wiped 30 s later unless an"
        " instance registers and connects in time",
        more=DEBUG,
        sources=(Source(HANDLER, "remove", "info V3", line=472),),
        example='I1125 16:58:01.082762     891 dra_plugin_manager.go:472] "Unregistered DRA plugin" logger="DRA'
        f' registration handler" driverName="gpu.example.com" endpoint="{ENDPOINT}" numPlugins=0',
        harmless=True,
    ),
    Message(
        key="close-connection",
        mode="F39",
        pattern=r"Closing gRPC connection",
        title="closing the connection of a deregistered instance failed",
        causes=("the connection was already closed (the kubelet stopping): harmless",),
        fix="nothing to do; the instance is gone from the plugin store either way",
        more=DEBUG,
        sources=(Source(HANDLER, "remove / Stop", "error"),),
        example='E1125 16:58:01.082762     891 dra_plugin_manager.go:380] "Closing gRPC connection" err="grpc: the'
        f' client connection is closing" driverName="gpu.example.com" endpoint="{ENDPOINT}"',
        harmless=True,
    ),
)
