"""Preparing and unpreparing a pod's claims: the DRA manager's errors, the checkpoint, the pod workers' lines.

The manager's errors are returned, not logged: the pod worker writes them inside "Failed to prepare dynamic
resources" (an error line and a FailedPrepareDynamicResources event) or inside the termination's retry line,
so the specific messages below come first and the wrappers last.
"""

from __future__ import annotations

import attrs

from kubelet_dra.kubelet.pluginmanager import FAILURE_MODES
from kubelet_dra.workbench.debug.catalogue.entry import RELEASES, Message, Source

MANAGER = "pkg/kubelet/cm/dra/manager.go"
HANDLER = "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go"
CLAIMINFO = "pkg/kubelet/cm/dra/claiminfo.go"
CHECKPOINT = "pkg/kubelet/cm/dra/state/state_checkpoint.go"
SYNC_POD = Source(
    "pkg/kubelet/kuberuntime/kuberuntime_manager.go",
    "SyncPod",
    "error + event Warning FailedPrepareDynamicResources",
    line=1594,
)
TERMINATED = Source("pkg/kubelet/pod_workers.go", "podWorkerLoop (SyncTerminatedPod's error)", "error", line=1324)
DEBUG = "kubelet-dra debug --registry-dir <the kubelet's plugins_registry> (is the driver registered, connected?)"
CALL = "kubelet-dra call <the driver's socket> NodePrepareResources --claim NS/NAME (the call, as the kubelet makes it)"
TAP = "kubelet-dra tap (records every call the kubelet makes to the driver, with timings)"
PREP_CHECKS = "kubelet-dra conformance --focus PRE --driver-cmd '…' (the prepare checks against the driver)"
EVENT = "Failed to prepare dynamic resources: prepare dynamic resources: "
LOGGED = (
    'E1127 10:02:11.120001     512 kuberuntime_manager.go:1594] "Failed to prepare dynamic resources"'
    ' err="prepare dynamic resources: '
)
POD = '" pod="default/demo"'


def _prepare(
    key: str,
    mode: str,
    pattern: str,
    title: str,
    causes: tuple[str, ...],
    fix: str,
    more: str,
    *,
    function: str = "prepareResources",
    releases: tuple[str, ...] = RELEASES,
    example: str,
) -> Message:
    """A message the manager returns from prepare, written by the pod worker (a log line and a pod event)."""
    return Message(
        key=key,
        mode=mode,
        pattern=pattern,
        title=title,
        causes=causes,
        fix=fix,
        more=more,
        sources=tuple(
            attrs.evolve(source, releases=releases) for source in (Source(MANAGER, function, "returned"), SYNC_POD)
        ),
        example=example,
    )


MESSAGES: tuple[Message, ...] = (
    Message(
        key="unprepare-failed",
        mode="F15",
        pattern=r"unprepare dynamic resources: |Unpreparing pod resources in reconcile loop failed"
        r"|NodeUnprepareResources(?::| failed| returned| skipped)",
        title=FAILURE_MODES["F15"].symptom + ": the kubelet could not unprepare its claims",
        causes=(
            "the driver is not registered or not reachable any more (removed before the pods using it)",
            "the driver's NodeUnprepareResources fails or times out (its words follow)",
            "the claim was unknown to the driver and it answered with an error instead of success",
        ),
        fix=FAILURE_MODES["F15"].fix,
        more="kubelet-dra conformance --focus UNP --driver-cmd '…' (the unprepare checks against the driver)",
        sources=(
            Source(MANAGER, "UnprepareResources", "returned"),
            TERMINATED,
            Source(MANAGER, "reconcileLoop (every 60 s, for pods gone from the node)", "info"),
        ),
        example='E1127 10:02:11.120001     512 pod_workers.go:1324] "Error syncing pod, skipping" err="unprepare'
        " dynamic resources: NodeUnprepareResources: rpc error: code = Unknown desc = unprepare resource claims:"
        ' device busy" pod="default/demo"',
    ),
    _prepare(
        "not-registered",
        "F12",
        r"DRA driver \S* is not registered|DRA driver name is empty",
        FAILURE_MODES["F12"].symptom + " on this node when the kubelet needed it",
        (
            "the driver's kubelet plugin does not run on this node (not deployed here, crash-looping, still starting)",
            "its registration failed: every attempt is in the kubelet log as 'RegisterPlugin error --'",
            "the kubelet restarted and the driver has not registered again yet (pods retry by themselves)",
            "the claim's allocation names another driver than the one registered (PluginInfo.name)",
        ),
        FAILURE_MODES["F12"].fix,
        DEBUG,
        function=f"prepareResources, via {HANDLER} GetPlugin",
        example=EVENT + "DRA driver gpu.example.com is not registered",
    ),
    _prepare(
        "unknown-service",
        "F11",
        r"code = Unimplemented .*unknown service",
        FAILURE_MODES["F11"].symptom,
        (
            "the driver serves its DRA service under another proto package than it advertises",
            "it advertises v1.DRAPlugin but serves only v1beta1 (or the reverse)",
        ),
        FAILURE_MODES["F11"].fix,
        "kubelet-dra conformance --focus VER --driver-cmd '…' (calls each advertised service by its wire name)",
        example=EVENT + "NodePrepareResources: rpc error: code = Unimplemented desc = unknown service"
        " k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
    ),
    _prepare(
        "unknown-claim",
        "F16",
        r"NodePrepareResources returned result for unknown claim UID",
        FAILURE_MODES["F16"].symptom,
        (
            "the driver keys its response map by claim name (or namespace/name) instead of UID",
            "it answers for claims that were not in the request",
        ),
        FAILURE_MODES["F16"].fix,
        PREP_CHECKS,
        example=EVENT + "NodePrepareResources returned result for unknown claim UID demo-gpu",
    ),
    _prepare(
        "skipped-claims",
        "F17",
        r"NodePrepareResources skipped \d+ ResourceClaims",
        FAILURE_MODES["F17"].symptom,
        ("the driver's response has no entry for some requested claims (an error swallowed per claim)",),
        FAILURE_MODES["F17"].fix,
        PREP_CHECKS,
        example=EVENT + "NodePrepareResources skipped 1 ResourceClaims",
    ),
    _prepare(
        "driver-reads-claim",
        "F18",
        r"get resource claims: ",
        FAILURE_MODES["F18"].symptom,
        (
            "the claim was deleted and created again (same name, new UID) between the kubelet's read and the driver's",
            "the driver's service account may not get resourceclaims",
            "the claim is no longer allocated",
        ),
        FAILURE_MODES["F18"].fix,
        CALL,
        example=EVENT + "NodePrepareResources failed for ResourceClaim demo-gpu: get resource claims: claim"
        " default/demo-gpu: got replaced",
    ),
    _prepare(
        "skip-gate-off",
        "F34",
        r"DRAOptionalNodeOperations feature gate is disabled",
        "the driver asked the kubelet to skip a node operation, which this kubelet does not allow (1.37)",
        ("the driver's ResourceSlices set skipNodeOperations while the kubelet runs without the alpha gate",),
        "enable the DRAOptionalNodeOperations feature gate on the kubelet, or stop setting skipNodeOperations",
        PREP_CHECKS,
        releases=("1.37",),
        example=EVENT + "NodePrepareResources failed for ResourceClaim demo-gpu: DRAOptionalNodeOperations feature"
        " gate is disabled on kubelet",
    ),
    _prepare(
        "prepare-timeout",
        "F25",
        r"NodePrepareResources(?: failed)?: rpc error: code = DeadlineExceeded",
        "the driver did not answer within the kubelet's 45 s: the call was given up",
        (
            "the driver's prepare waits on something slow (a device reset, a driver switch, another controller, the"
            " API server)",
            "the driver is stuck (a lock held, a blocked goroutine) or overloaded with calls",
            "the driver serves on the socket but its process is paused or starved of CPU",
        ),
        "make prepare finish well within 45 s (or fail it with an error that says why); the pod worker tries again"
        " after its back-off, so an idempotent prepare recovers by itself",
        TAP,
        function="prepareResources (45 s per call)",
        example=EVENT + "NodePrepareResources: rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    ),
    _prepare(
        "driver-unreachable",
        "F26",
        r"NodePrepareResources(?: failed)?: rpc error: code = Unavailable",
        "the kubelet could not reach the driver's service socket for the call",
        (
            "the driver stopped or restarted after it registered (its registration socket may still be there)",
            "the registered endpoint is not served on the host (F10: a container-only path, nobody listening)",
        ),
        "start the driver and check its service socket exists on the host at the registered endpoint; the pod"
        " worker tries again after its back-off",
        DEBUG,
        example=EVENT + "NodePrepareResources: rpc error: code = Unavailable desc = connection error: desc ="
        ' "transport: Error while dialing: dial unix /var/lib/kubelet/plugins/gpu.example.com/dra.sock: connect:'
        ' connection refused"',
    ),
    _prepare(
        "claim-refused",
        "F27",
        r"NodePrepareResources failed for (?:ResourceClaim|claim) \S+: ",
        "the driver refused to prepare one claim and said why (its words follow the claim's name)",
        (
            "the device cannot be set up now (busy, unhealthy, a partition that cannot be created)",
            "the driver could not write the claim's CDI spec file (CDI root missing or not writable)",
            "the claim's configuration (opaque parameters) is invalid for the driver",
        ),
        "read the driver's reason after the claim's name and the driver's own log for that claim; fix the device or"
        " the claim's configuration; the pod worker retries",
        CALL,
        example=EVENT + "NodePrepareResources failed for ResourceClaim demo-gpu: device gpu-0 is busy",
    ),
    _prepare(
        "call-failed",
        "F28",
        r"NodePrepareResources(?: failed)?: rpc error: ",
        "the driver's NodePrepareResources call failed as a whole (a gRPC error, not a per-claim one)",
        (
            "the driver returned an error for the whole request (code = Unknown, Internal, …: its words follow)",
            "its service crashed while handling the call",
        ),
        "read the driver's words after 'desc ='; report per-claim problems in the claim's entry instead of failing"
        " the whole batch",
        CALL,
        example=EVENT + "NodePrepareResources: rpc error: code = Internal desc = cannot open /dev/gpu0",
    ),
    _prepare(
        "claim-not-created",
        "F30",
        r"ResourceClaim not created yet|resourceclaim not created yet",
        "the pod reached the kubelet before its ResourceClaim was created from the template (harmless, transient)",
        (
            "the pod was created with nodeName set, skipping the scheduler (the claim controller had not run yet)",
            "the claim controller is slow or down",
        ),
        "nothing if the pod starts within a minute (the next pod sync); if not, check kube-controller-manager's"
        " resource claim controller",
        "kubectl get resourceclaims -n <namespace> (the claim of the pod)",
        example=EVENT + 'pod "demo": ResourceClaim not created yet',
    ),
    _prepare(
        "fetch-claim",
        "F29",
        r"fetch ResourceClaim \S+: ",
        "the kubelet could not read the pod's ResourceClaim from the API server",
        (
            "the claim does not exist (deleted, or never created: a wrong name in the pod)",
            "the API server is not reachable from the node",
            "the Node authorizer refuses it: the claim is not used by a pod bound to this node",
        ),
        "check the claim exists in the pod's namespace; if it is the API server, the pod worker retries",
        "kubectl get resourceclaim -n <namespace> <name> -o yaml",
        example=EVENT + 'fetch ResourceClaim demo-gpu: resourceclaims.resource.k8s.io "demo-gpu" not found',
    ),
    _prepare(
        "not-reserved",
        "F31",
        r"is not allowed to use ResourceClaim",
        "the claim is not reserved for this pod, so the kubelet will not prepare it",
        (
            "the pod was bound without the scheduler (nodeName set), so nothing reserved the claim for it",
            "the claim was deallocated or handed to another pod",
            "the scheduler's reservation has not reached the API server yet (transient)",
        ),
        "let the scheduler place pods that use claims (no nodeName), or reserve the claim for the pod",
        "kubectl get resourceclaim -n <namespace> <name> -o jsonpath='{.status.reservedFor}'",
        example=EVENT + "pod demo (5f1c…) is not allowed to use ResourceClaim demo-gpu (9a0b…)",
    ),
    _prepare(
        "stale-claim",
        "F32",
        r"old ResourceClaim with same name \S+ and different UID",
        "the kubelet still holds a prepared claim of the same name from an earlier pod",
        ("the earlier pod was force-deleted before its claim was unprepared, and the claim re-created",),
        "wait for the reconcile loop (60 s) to unprepare the old claim; if it cannot (driver gone), start the driver"
        " so the old claim can be unprepared",
        DEBUG,
        example=EVENT + "old ResourceClaim with same name demo-gpu and different UID 9a0b… still exists (previous pod"
        " force-deleted?!)",
    ),
    _prepare(
        "being-unprepared",
        "F33",
        r"ResourceClaim \S+ is being unprepared",
        "a new pod wants a claim the kubelet is still unpreparing for its previous pod (1.37; its exact words are not"
        " verified: any other wording is still explained as F37)",
        ("a pod sharing the claim started while the last one using it was being deleted",),
        "nothing: the pod worker retries and prepares the claim again once the unprepare has finished",
        TAP,
        releases=("1.37",),
        example=EVENT + "ResourceClaim demo-gpu is being unprepared for its previous pod; it is prepared again once"
        " that has finished",
    ),
    _prepare(
        "checkpoint-write",
        "F35",
        r"checkpoint ResourceClaim (?:cache|state): ",
        "the kubelet could not write its claim checkpoint (dra_manager_state), so it did not go on",
        ("the kubelet's root dir is full or read-only", "the checkpoint file's permissions were changed"),
        "free space under the kubelet's root dir (default /var/lib/kubelet); the pod worker retries",
        "kubelet-dra checkpoint show <root>/dra_manager_state (what the kubelet has prepared)",
        function="prepareResources / unprepareResources (syncToCheckpoint)",
        example=EVENT + "checkpoint ResourceClaim cache: write /var/lib/kubelet/dra_manager_state: no space left on"
        " device",
    ),
    Message(
        key="checkpoint-unreadable",
        mode="F19",
        pattern=r"on checkpoint state: |create ResourceClaim cache: |could not initialize checkpoint manager",
        title=FAILURE_MODES["F19"].symptom + ": the kubelet does not start",
        causes=(
            "the file was edited by hand or truncated by a crash (checksum mismatch, invalid JSON)",
            "the file comes from a kubelet release with another format (a downgrade)",
        ),
        fix=FAILURE_MODES["F19"].fix,
        more="kubelet-dra checkpoint verify <root>/dra_manager_state (checks it as the kubelet does at start)",
        sources=(
            Source(CLAIMINFO, "newClaimInfoCache", "returned"),
            Source(CHECKPOINT, "GetOrCreate", "returned"),
            Source(MANAGER, "NewManager", "returned (the kubelet exits)"),
        ),
        example="failed to run Kubelet: create ResourceClaim cache: GetOrCreate() on checkpoint state: checkpoint is"
        " corrupted",
    ),
    _prepare(
        "internal",
        "F36",
        r"internal error: unable to get claim info"
        r"|unable to get (?:information|claim info) for (?:ResourceClaim|claim)",
        "the kubelet lost track of a claim it had prepared (a kubelet bug, or a pod changed while it started)",
        ("a pod's claims changed under the kubelet (a pod deleted and re-created with the same name)",),
        "delete the pod and let it be created again; if it repeats, report it to Kubernetes with the kubelet log",
        "kubelet-dra checkpoint show <root>/dra_manager_state",
        function="prepareResources / GetResources / GetContainerClaimInfos",
        example=EVENT + "internal error: unable to get claim info for ResourceClaim demo-gpu in namespace default",
    ),
    Message(
        key="prepare-failed",
        mode="F37",
        pattern=r"[Ff]ailed to prepare dynamic resources|prepare dynamic resources: ",
        title="the kubelet could not prepare the pod's claims; the pod stays in ContainerCreating and is retried",
        causes=(
            "the driver is not registered on the node (see F12)",
            "the driver's prepare failed or timed out (its words follow 'prepare dynamic resources:')",
            "the claim could not be read or is not reserved for the pod",
        ),
        fix="read the text after 'prepare dynamic resources:' and paste it to kubelet-dra explain on its own",
        more=DEBUG,
        sources=(Source(MANAGER, "PrepareResources", "returned"), SYNC_POD),
        example=LOGGED + 'something new"' + POD,
    ),
)
