"""The health stream, the health state file and ResourceSlice wiping: lines written in the background.

None of them fails a pod by itself; each says what the node will do next (retry in 5 s, wipe in 30 s) or
that a driver's devices now show as Unknown.
"""

from __future__ import annotations

from kubelet_dra.kubelet.pluginmanager import FAILURE_MODES
from kubelet_dra.workbench.debug.catalogue.entry import Message, Source

MANAGER = "pkg/kubelet/cm/dra/manager.go"
PLUGIN = "pkg/kubelet/cm/dra/plugin/dra_plugin.go"
HANDLER = "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go"
HEALTHINFO = "pkg/kubelet/cm/dra/healthinfo.go"
DEBUG = "kubelet-dra debug --registry-dir <the kubelet's plugins_registry> (connections, wipes, health, live)"
HEALTH_CHECKS = "kubelet-dra conformance --tags health --driver-cmd '…' (the health stream against the driver)"
SLICE_SELECTOR = 'fieldSelector="spec.driver=gpu.example.com,spec.nodeName=node-1"'
DIALING = (
    '"NodeWatchResources RPC call failed" err="rpc error: code = Unavailable desc = connection error: desc ='
    ' \\"transport: Error while dialing: dial unix /var/lib/kubelet/plugins/gpu.example.com/dra.sock: connect: no'
    ' such file or directory\\""'
)

MESSAGES: tuple[Message, ...] = (
    Message(
        key="health-unimplemented",
        mode="F13",
        pattern=r"WatchResources.*Unimplemented|Driver does not support WatchResources health stream",
        title=FAILURE_MODES["F13"].symptom + ": the driver has no health service",
        causes=(
            "the driver does not implement the optional DRAResourceHealth service (most drivers today)",
            "it implements it under another proto package than the kubelet calls",
        ),
        fix=FAILURE_MODES["F13"].fix + "; a 1.36 kubelet logs it every 5 s, a 1.37 kubelet once and stops asking",
        more=HEALTH_CHECKS,
        sources=(
            Source(MANAGER, "HandleWatchResourcesStream", "error", ("1.36",), line=1038),
            Source(HANDLER, "add (the health stream's retry loop)", "info V2", ("1.37",)),
        ),
        example='E1125 16:58:25.118938     891 manager.go:1038] "Error receiving from WatchResources stream" err="rpc'
        ' error: code = Unimplemented desc = unknown service v1alpha1.DRAResourceHealth" logger="DRA registration'
        ' handler.dra-manager" pluginName="gpu.example.com"',
        harmless=True,
    ),
    Message(
        key="endpoint-not-served",
        mode="F10",
        pattern=r"NodeWatchResources RPC call failed.*Error while dialing",
        title=FAILURE_MODES["F10"].symptom,
        causes=(
            "nothing listens on the registered endpoint yet: the driver registers before its DRA service serves",
            "the endpoint is a path inside the driver's container, not mounted at the same path on the host",
            "the driver died after registering (its socket file is left or gone)",
        ),
        fix=FAILURE_MODES["F10"].fix,
        more=DEBUG,
        sources=(Source(PLUGIN, "NodeWatchResources", "error", line=168),),
        example=f"E1125 16:57:28.027509     891 dra_plugin.go:168] {DIALING}"
        ' logger="DRA registration handler.dra-plugin" driverName="gpu.example.com"'
        ' endpoint="/var/lib/kubelet/plugins/gpu.example.com/dra.sock"',
    ),
    Message(
        key="health-stream-canceled",
        mode="F21",
        pattern=r"(?:WatchResources stream|NodeWatchResources RPC call failed)\" err=\"rpc error: code = Canceled",
        title="the kubelet ended a driver's health stream itself (harmless)",
        causes=(
            "the instance was deregistered: the driver removed its registration socket (a stop, a restart), or its"
            " registration failed after the stream had begun",
            "the kubelet is shutting down",
        ),
        fix="nothing; a new stream starts when the driver registers again",
        more=DEBUG,
        sources=(
            Source(MANAGER, "HandleWatchResourcesStream", "error", line=1038),
            Source(PLUGIN, "NodeWatchResources", "error", line=168),
        ),
        example='E1127 10:00:00.000000    1000 manager.go:1038] "Error receiving from WatchResources stream" err="rpc'
        ' error: code = Canceled desc = context canceled" logger="DRA registration handler.dra-manager"'
        ' pluginName="gpu.example.com"',
        harmless=True,
    ),
    Message(
        key="health-stream-broken",
        mode="F21",
        pattern=r"Error receiving from WatchResources stream|NodeWatchResources RPC call failed|Failed to get gRPC"
        r" connection for health client|WatchResources RPC call failed",
        title="the health stream to the driver broke: its devices' health turns Unknown until it is back",
        causes=(
            "the driver process stopped, crashed or restarted (code = Unavailable: its socket closed)",
            "the driver ended the stream with an error of its own",
            "the kubelet is shutting down (harmless)",
        ),
        fix="check that the driver runs (kubectl get pods of its DaemonSet, its log); the kubelet opens the stream"
        " again every 5 s; if the driver stays away its ResourceSlices are wiped 30 s after it deregisters",
        more=DEBUG,
        sources=(
            Source(MANAGER, "HandleWatchResourcesStream", "error", line=1038),
            Source(PLUGIN, "NodeWatchResources", "error", line=168),
        ),
        example='E1127 10:02:11.120001     512 manager.go:1038] "Error receiving from WatchResources stream" err="rpc'
        ' error: code = Unavailable desc = error reading from server: EOF" logger="DRA registration'
        ' handler.dra-manager" pluginName="gpu.example.com"',
    ),
    Message(
        key="health-stream-retry",
        mode="F21",
        pattern=r"Failed to establish WatchResources stream, will retry|WatchResources health stream has ended",
        title="the health stream could not start or ended; the kubelet tries again in 5 s",
        causes=(
            "the driver is restarting or not serving yet",
            "the driver has no health service (1.36 keeps trying)",
        ),
        fix="nothing if it stops within seconds; if it repeats, see the error lines of the same driver",
        more=DEBUG,
        sources=(
            Source(HANDLER, "add (the health stream's retry loop: could not start)", "info V3", line=398),
            Source(HANDLER, "add (the health stream's retry loop: ended)", "info V2", line=405),
        ),
        example='I1127 10:02:16.120001     512 dra_plugin_manager.go:398] "Failed to establish WatchResources stream,'
        ' will retry" logger="DRA registration handler" err="rpc error: code = Unavailable desc = connection refused"',
        harmless=True,
    ),
    Message(
        key="health-state-file",
        mode="F22",
        pattern=r"Failed to (?:load|save) health checkpoint|Failed to clear health info cache|Failed to update health"
        r" info cache|Failed to remove temporary checkpoint file|failed to create healthInfo cache",
        title="the kubelet could not read or write its device health file (dra_health_state)",
        causes=(
            "the kubelet's root dir is full or read-only",
            "the file was left corrupt by a crash or edited by hand (load: the kubelet starts with no health data)",
        ),
        fix="free space under the kubelet's root dir; a corrupt dra_health_state can be deleted (health is reported"
        " again by the drivers within seconds)",
        more="kubelet-dra debug (the health the node holds per device)",
        sources=(
            Source(HEALTHINFO, "newHealthInfoCache / updateHealthInfo / saveToCheckpointInternal", "error"),
            Source(MANAGER, "HandleWatchResourcesStream", "error"),
        ),
        example='E1127 10:02:11.120001     512 healthinfo.go:215] "Failed to save health checkpoint after update.'
        ' Kubelet restart may lose the device health information." err="failed to create temp checkpoint file: no space'
        ' left on device" logger="dra-healthinfo"',
    ),
    Message(
        key="health-updates-dropped",
        mode="F23",
        pattern=r"DRA health update channel is full",
        title="health changes came faster than the kubelet updates pod statuses: some were dropped",
        causes=(
            "the driver reports a change on every message (a timestamp or message that changes each time)",
            "many devices flapping at once",
        ),
        fix="send health when it changes, with stable messages; the next change updates the pods again",
        more=HEALTH_CHECKS,
        sources=(Source(MANAGER, "HandleWatchResourcesStream", "error"),),
        example='E1127 10:02:11.120001     512 manager.go:1075] "DRA health update channel is full, discarding pod'
        ' update notification" pods=["5f1c…"]',
    ),
    Message(
        key="grpc-connect",
        mode="F40",
        pattern=r"addrConn\.createTransport failed to connect to \{Addr: \"[^\"]*\.sock\"",
        title="gRPC's own warning: a connection to a driver's socket failed; gRPC tries again with a back-off",
        causes=(
            "the driver stopped or is restarting (the kubelet keeps trying its registered endpoint)",
            "a stale registration socket nobody listens on (F2: a crashed driver left it)",
            "the registered endpoint is not served on the host (F10)",
        ),
        fix="nothing if the driver comes back; otherwise see the kubelet's own line for the same socket"
        " (RegisterPlugin error, NodeWatchResources RPC call failed) and start or fix the driver",
        more=DEBUG,
        sources=(
            Source(
                "vendor/google.golang.org/grpc/clientconn.go",
                "addrConn.createTransport (written through the kubelet's gRPC logger: logging.go:55 in 1.36.2)",
                "warning",
            ),
        ),
        example="W1127 10:00:00.000000    1000 logging.go:55] [core] [Channel #1 SubChannel #2] grpc:"
        ' addrConn.createTransport failed to connect to {Addr: "/var/lib/kubelet/plugins/gpu.example.com/dra.sock",'
        ' ServerName: "localhost", }. Err: connection error: desc = "transport: Error while dialing: dial unix'
        ' /var/lib/kubelet/plugins/gpu.example.com/dra.sock: connect: connection refused"',
        harmless=True,
    ),
    Message(
        key="wipe-driver",
        mode="F10",
        pattern=r"Deleted ResourceSlices.*spec\.driver=",
        title="a driver's ResourceSlices were deleted: it stayed unusable 30 s after its last instance went away",
        causes=(
            "the driver stopped and did not come back within 30 s (an update with a gap, a crash loop)",
            "it registered but its service connection never came up (F10)",
        ),
        fix="start the driver (it publishes its slices again); update drivers with a rolling update that keeps one"
        " instance registered",
        more=DEBUG,
        sources=(Source(HANDLER, "wipeResourceSlices", "info V3", line=247),),
        example='I1125 16:57:58.041501     891 dra_plugin_manager.go:247] "Deleted ResourceSlices" logger="DRA'
        f' registration handler.driver-cleanup" driverName="gpu.example.com" {SLICE_SELECTOR}',
        harmless=True,
    ),
    Message(
        key="wipe-node",
        mode="F14",
        pattern=r"Deleted ResourceSlices.*spec\.nodeName=",
        title=FAILURE_MODES["F14"].symptom + " (expected: every kubelet start does it)",
        causes=("the kubelet started: it deletes the node's slices until the drivers register and publish again",),
        fix=FAILURE_MODES["F14"].fix,
        more=DEBUG,
        sources=(Source(HANDLER, "wipeResourceSlices (at start)", "info V3", line=247),),
        example='I1125 16:56:37.041501     891 dra_plugin_manager.go:247] "Deleted ResourceSlices" logger="DRA'
        ' registration handler.startup" fieldSelector="spec.nodeName=node-1"',
        harmless=True,
    ),
    Message(
        key="wipe-retry",
        mode="F24",
        pattern=r"Deleting ResourceSlice failed, retrying|Unexpected error checking for node|Giving up deleting"
        r" ResourceSlices",
        title="the kubelet could not delete ResourceSlices yet; it retries with a back-off up to 5 min",
        causes=(
            "the API server is not reachable yet (kubelet start, control plane restart)",
            "the kubelet's credentials are not ready yet (bootstrap) or lack delete on resourceslices",
            "the Node object does not exist (yet)",
        ),
        fix="nothing while the API server comes up; if it repeats, check the kubelet's kubeconfig and the Node"
        " authorizer (the node may delete only its own slices)",
        more=DEBUG,
        sources=(Source(HANDLER, "wipeResourceSlices", "error / info V3"),),
        example='E1127 10:02:11.120001     512 dra_plugin_manager.go:230] "Unexpected error checking for node"'
        ' err="Get \\"https://10.0.0.1:6443/api/v1/nodes/node-1\\": dial tcp 10.0.0.1:6443: connect: connection'
        ' refused"',
        harmless=True,
    ),
)
