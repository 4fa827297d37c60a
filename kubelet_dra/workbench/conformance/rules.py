"""The sentences the conformance checks enforce, word for word, with where each is written, and the public
sources a check's reference names.

API comments are quoted from the ``.proto`` files the kubelet 1.36 is built with (dra v1,
dra-health v1alpha1, pluginregistration v1); kubelet behaviour from its code at the release tag, as
docs/protocol.md describes it; KEPs from kubernetes/enhancements. Several checks enforce one sentence.
Every reference is a link a driver author can open: a page of ``docs/`` (``protocol``) or a file of
the Kubernetes source at the release kubelet-dra emulates.
"""

from __future__ import annotations

from kubelet_dra.workbench.conformance.framework import Citation

KUBERNETES = "https://github.com/kubernetes/kubernetes/blob/v1.36.2/"
"""The Kubernetes source at the release the node emulates by default."""
DRA_API = KUBERNETES + "staging/src/k8s.io/kubelet/pkg/apis/dra/v1/api.proto"
HEALTH_API = KUBERNETES + "staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1alpha1/api.proto"
REGISTRATION_API = KUBERNETES + "staging/src/k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto"
PLUGIN_WATCHER_GO = KUBERNETES + "pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go"
OPERATION_GENERATOR_GO = KUBERNETES + "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go"
RECONCILER_GO = KUBERNETES + "pkg/kubelet/pluginmanager/reconciler/reconciler.go"
DRA_PLUGIN_MANAGER_GO = KUBERNETES + "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go"
DRA_PLUGIN_GO = KUBERNETES + "pkg/kubelet/cm/dra/plugin/dra_plugin.go"
DRA_MANAGER_GO = KUBERNETES + "pkg/kubelet/cm/dra/manager.go"
HEALTH_INFO_GO = KUBERNETES + "pkg/kubelet/cm/dra/healthinfo.go"
KUBELETPLUGIN_GO = KUBERNETES + "staging/src/k8s.io/dynamic-resource-allocation/kubeletplugin/draplugin.go"
RESOURCESLICE_GO = (
    KUBERNETES + "staging/src/k8s.io/dynamic-resource-allocation/resourceslice/resourceslicecontroller.go"
)
KEP_4381 = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/4381-dra-structured-parameters"
KEP_4680 = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-node/4680-add-resource-health-to-pod-status"
KEP_5970 = "https://github.com/kubernetes/enhancements/issues/5970"
CDI_SPEC = "https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md"
GRPC_STATUS = "https://grpc.io/docs/guides/status-codes/"
PROTOCOL = "docs/protocol.md"
"""The project's own description of the protocol, for the reader who wants the whole picture."""
RELEASES = "docs/releases.md"
SEPARATOR = " · "


def protocol(section: str, *items: str) -> str:
    """A section of docs/protocol.md, with the driver-contract items (C7) or failure modes (F16) it lists."""
    return f"{PROTOCOL}#{section}" + (f" ({', '.join(items)})" if items else "")


def cite(*sources: str) -> str:
    """A check's reference: its sources, each a docs/ page or a URL, in one line."""
    return SEPARATOR.join(sources)


DRA_PROTO = "dra v1 api.proto"
HEALTH_PROTO = "dra-health v1alpha1 api.proto"
REGISTRATION_PROTO = "pluginregistration v1 api.proto"

# The plugin watcher and the registration handshake.
WATCHED_SOCKET = Citation(
    "Any socket in any sub-directory of the registry dir is a candidate; a base name starting with '.' is ignored.",
    "kubelet pluginwatcher",
)
REGISTERED = Citation(
    "Dial, GetInfo, ValidatePlugin, RegisterPlugin, NotifyRegistrationStatus(true): a driver is usable once"
    " its service connection is up.",
    "kubelet plugin manager and DRAPluginManager",
)
GET_INFO_TIMEOUT = Citation(
    "GetInfo is called with a 1 s timeout; a slower answer fails the attempt (DeadlineExceeded).",
    "kubelet operationexecutor",
)
PLUGIN_TYPE = Citation(
    'type must equal "DRAPlugin" exactly: the kubelet hands a plugin to the handler of its type, so any other'
    " type never reaches the DRA handler (a CSIPlugin goes to the CSI handler, an unknown type to none).",
    "kubelet operationexecutor",
)
PLUGIN_NAME = Citation(
    "Plugin name that uniquely identifies the plugin for the given plugin type.",
    f"{REGISTRATION_PROTO}, PluginInfo.name",
)
SUPPORTED_VERSIONS = Citation(
    "The Kubelet component communicating with the plugin should be able to choose any preferred version from"
    " this list, or returns an error if none of the listed versions is supported.",
    f"{REGISTRATION_PROTO}, PluginInfo.supported_versions",
)
ENDPOINT = Citation(
    "Optional endpoint location. If found set by Kubelet component, Kubelet component will use this endpoint"
    " for specific requests.",
    f"{REGISTRATION_PROTO}, PluginInfo.endpoint",
)
NOTIFY_TRUE = Citation(
    "A NotifyRegistrationStatus(true) that fails or takes over 5 s makes the kubelet deregister the plugin"
    " and retry with backoff.",
    "kubelet operationexecutor",
)
NOTIFY_FALSE = Citation(
    "Error message in case plugin fails to register, empty string otherwise",
    f"{REGISTRATION_PROTO}, RegistrationStatus.error",
)
REREGISTRATION = Citation(
    "All plugins are re-registered after every kubelet restart, in random order.",
    "kubelet plugin manager",
)
ONE_SOCKET_PER_INSTANCE = Citation(
    "Another registration socket that registers the same (name, endpoint) is refused: endpoint already"
    " registered for DRA driver plugin.",
    "kubelet DRAPluginManager",
)
GRPC_UNIMPLEMENTED = Citation(
    "UNIMPLEMENTED: the operation is not implemented or is not supported/enabled in this service.",
    "gRPC status codes",
)

# Service versions.
WIRE_NAME = Citation(
    "The advertised identifier v1.DRAPlugin is served as k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin; a service"
    " under another package answers Unimplemented: unknown service.",
    "kubelet DRA plugin client",
)
FIRST_SUPPORTED = Citation(
    "The first entry of supported_versions the kubelet supports is the service it uses, over one connection"
    " per instance made at registration.",
    "kubelet DRAPluginManager",
)
IDENTIFIERS = Citation(
    "supported_versions lists gRPC service identifiers <proto-package-last-segment>.<Service>, e.g. v1.DRAPlugin.",
    "kubelet DRAPluginManager",
)

# NodePrepareResources / NodeUnprepareResources.
PREPARE_ERRORS = Citation(
    "If an error is returned, the response is ignored. Failures for individual claims can be reported inside"
    " NodePrepareResourcesResponse.",
    f"{DRA_PROTO}, DRAPlugin.NodePrepareResources",
)
PREPARE_EVERY_CLAIM = Citation(
    "It is an error if some claim listed in NodePrepareResourcesRequest does not get prepared.",
    f"{DRA_PROTO}, NodePrepareResourcesResponse.claims",
)
DEVICES_TO_RUNTIME = Citation(
    "These are the additional devices that kubelet must make available via the container runtime.",
    f"{DRA_PROTO}, NodePrepareResourceResponse.devices",
)
REQUEST_NAMES = Citation(
    "The requests in the claim that this device is associated with.",
    f"{DRA_PROTO}, Device.request_names",
)
EMPTY_REQUEST = Citation(
    "An empty NodePrepareResources request is valid and returns an empty map (dra-example-driver's liveness"
    " check uses exactly this).",
    "kubeletplugin helper",
)
IDEMPOTENT_PREPARE = Citation(
    "After a kubelet restart every claim loaded from the checkpoint is prepared again: drivers must treat"
    " repeated prepare as idempotent.",
    "kubelet cm/dra manager",
)
CALL_TIMEOUT = Citation(
    "NodePrepareResources and NodeUnprepareResources are called with a 45 s timeout.",
    "kubelet cm/dra plugin client",
)
CONCURRENT_CALLS = Citation(
    "Pod workers prepare and unprepare claims of different pods concurrently; only one claim's entry is locked.",
    "kubelet cm/dra manager",
)
UNPREPARE_RULES = Citation(
    "NodeUnprepareResources is the opposite of NodePrepareResources. The same error handling rules apply.",
    f"{DRA_PROTO}, DRAPlugin.NodeUnprepareResources",
)
UNPREPARE_AGAIN = Citation(
    "Unprepare may be called again for claims already unprepared (e.g. kubelet restart before the checkpoint write).",
    "kubelet cm/dra manager",
)
UNPREPARE_WITHOUT_API = Citation(
    "The API server is not consulted, so a deleted ResourceClaim does not matter; a failed unprepare keeps the"
    " pod Terminating.",
    "kubelet cm/dra manager",
)
DEVICES_RETURNED = Citation(
    "NodeUnprepareResources is the opposite of NodePrepareResources.",
    f"{DRA_PROTO}, DRAPlugin.NodeUnprepareResources",
)

# CDI.
CDI_IDS = Citation(
    "A single device instance may map to several CDI device IDs. None is also valid.",
    f"{DRA_PROTO}, Device.cdi_device_ids",
)
CDI_RESOLVE = Citation(
    "The runtime resolves each CDI device ID against the spec files of its CDI roots when the container is"
    " created: an unresolvable ID fails the container (CDI device injection failed).",
    "kubelet GetResources and the CDI spec",
)
CDI_SPEC_FILES = Citation(
    "A runtime reads every spec file of its CDI roots; a file it cannot parse is reported and its devices are"
    " not available.",
    "CDI spec, container-device-interface",
)
DRIVER_VARIABLES = Citation(
    "Pod reaches Running state; container environment includes driver-injected variables.",
    "KEP-5970 Conformance Test Scope, behaviour 5 (Pod Runs Successfully)",
)
RESOURCE_REUSE = Citation(
    "A second pod with a new ResourceClaim for the same device class starts successfully.",
    "KEP-5970 Conformance Test Scope, behaviour 7 (Resource Reuse)",
)

# ResourceSlices.
SLICES_PUBLISHED = Citation(
    "ResourceSlice objects exist with matching driver name and at least one device.",
    "KEP-5970 Conformance Test Scope, behaviour 2 (ResourceSlice Publishing)",
)
SLICE_FIELDS = Citation(
    "Each pool becomes ResourceSlices with spec.driver, spec.nodeName, spec.pool = {name, generation,"
    " resourceSliceCount}.",
    "kubeletplugin helper resourceslice controller",
)
POOL_COMPLETE = Citation(
    "A pool is complete when the slices of its newest generation number resourceSliceCount; the scheduler does"
    " not allocate from an incomplete pool.",
    "KEP-4381 (resource.k8s.io ResourcePool)",
)
DEVICE_NAMES = Citation(
    "Duplicate device names in one pool are an error and the pool is not published.",
    "kubeletplugin helper resourceslice controller",
)
OWN_NODE = Citation(
    "The node authorizer lets a node's identity write only ResourceSlices with its own spec.nodeName.",
    "KEP-4381, node authorizer",
)
REPUBLISH = Citation(
    "At start the kubelet deletes all ResourceSlices of its node; drivers re-create them after their sync delay.",
    "kubelet DRAPluginManager startup wipe",
)
PUBLISHED_PREPARABLE = Citation(
    "The scheduler allocates only devices the driver published; kubelet must make every allocated device"
    " available via the container runtime.",
    "KEP-4381 and dra v1 api.proto",
)

# Device health (KEP-4680).
HEALTH_COMPLETE_LIST = Citation(
    "A list of all devices managed by the plugin for which health is being reported. This should be a complete"
    " list for the driver; Kubelet will reconcile this state.",
    f"{HEALTH_PROTO}, NodeWatchResourcesResponse.devices",
)
HEALTH_FIELDS = Citation(
    "health_check_timeout_seconds <= 0 means the kubelet default of 30 s; a message over 1024 bytes is cut.",
    "kubelet cm/dra health",
)
HEALTH_TIMEOUT = Citation(
    "A device whose last update is older than its timeout (default 30 s) is reported Unknown: drivers must"
    " resend the full list more often than the timeout.",
    "kubelet cm/dra health",
)
HEALTH_WIRE_NAME = Citation(
    "When the driver advertises v1alpha1.DRAResourceHealth, the kubelet opens NodeWatchResources under that"
    " service name on every instance.",
    "kubelet DRAPluginManager",
)

# Pods and restarts.
POD_LIFECYCLE = Citation(
    "A pod's claims are prepared before its containers start and unprepared after it terminated; the pod stays"
    " Terminating until every unprepare succeeded.",
    "kubelet cm/dra manager",
)
SOCKETS_REMOVED = Citation(
    "Each pod must catch SIGINT/SIGTERM and stop the helper so that its sockets are removed.",
    "kubeletplugin helper, rolling updates",
)
DRIVER_RESTART = Citation(
    "A driver restarting on the same socket path is deregistered and registered again as a new instance.",
    "kubelet plugin manager",
)
CLAIMS_ACROSS_RESTART = Citation(
    "Instances must be stateless across calls or share state on disk: prepare and unprepare of one claim can"
    " hit different instances.",
    "kubeletplugin helper, rolling updates",
)
CLAIMS_FROM_API = Citation(
    "For each requested claim, GET the ResourceClaim before preparing it.",
    "kubeletplugin helper",
)
