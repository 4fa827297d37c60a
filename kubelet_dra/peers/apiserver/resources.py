"""The table of resources the embedded API server serves.

One ``ResourceType`` per kind: which group and versions serve it, its names, whether it is
namespaced, which subresources and field selectors it has. Routing, discovery, OpenAPI,
conversion and the store all read this one table, so adding a resource is one entry here.
"""

from __future__ import annotations

import attrs

from kubelet_dra.peers.apiserver.status import ApiError

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS = ("v1", "v1beta2", "v1beta1")
# Groups a kubelet reads or writes besides core/v1 and resource.k8s.io (its node Lease, CSINode,
# and the informers it starts): served so a real kubelet runs against the embedded server. The table
# lists groups in kube-apiserver's discovery order (storage, coordination, node, resource).
COORDINATION_GROUP = "coordination.k8s.io"
STORAGE_GROUP = "storage.k8s.io"
NODE_GROUP = "node.k8s.io"
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@attrs.frozen
class ResourceType:
    """One served resource; ``versions[0]`` is both the preferred and the storage version.

    ``strategic_merge``: every kind served today is a built-in type, and kube-apiserver accepts
    strategic merge patches for all built-in types; a custom resource would set it to False.
    """

    group: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    versions: tuple[str, ...]
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ()
    strategic_merge: bool = True
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS
    generation: bool = False
    """Whether kube-apiserver keeps ``metadata.generation`` for the kind (its strategy sets it: Pod,
    DeviceClass, ResourceSlice; not ConfigMap, ResourceClaim, Node…)."""
    registry_name: str = ""
    """The kind's folder in kube-apiserver's etcd keys when it is not the plural (Node: ``minions``); some
    error messages quote the key."""

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def api_version(self, version: str) -> str:
        """The ``apiVersion`` string of an object at ``version`` ("v1" or "resource.k8s.io/v1")."""
        return f"{self.group}/{version}" if self.group else version

    def storage_key(self, namespace: str, name: str) -> str:
        """The etcd key kube-apiserver stores the object under, as its storage errors quote it."""
        scope = f"{namespace}/" if self.namespaced else ""
        return f"/registry/{self.registry_name or self.plural}/{scope}{name}"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        group="",
        kind="Namespace",
        plural="namespaces",
        singular="namespace",
        namespaced=False,
        versions=("v1",),
        short_names=("ns",),
        subresources=("status",),
        field_labels=("status.phase",),
        verbs=tuple(verb for verb in VERBS if verb != "deletecollection"),
    ),
    ResourceType(
        group="",
        kind="Node",
        registry_name="minions",
        plural="nodes",
        singular="node",
        namespaced=False,
        versions=("v1",),
        short_names=("no",),
        subresources=("status",),
        field_labels=("spec.unschedulable",),
    ),
    ResourceType(
        group="",
        kind="Pod",
        plural="pods",
        singular="pod",
        generation=True,
        namespaced=True,
        versions=("v1",),
        short_names=("po",),
        subresources=("status",),
        field_labels=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
        categories=("all",),
    ),
    ResourceType(
        group="",
        kind="Event",
        plural="events",
        singular="event",
        namespaced=True,
        versions=("v1",),
        short_names=("ev",),
        field_labels=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
    ),
    ResourceType(
        group="",
        kind="ConfigMap",
        plural="configmaps",
        singular="configmap",
        namespaced=True,
        versions=("v1",),
        short_names=("cm",),
    ),
    ResourceType(
        group="",
        kind="Service",
        plural="services",
        singular="service",
        namespaced=True,
        versions=("v1",),
        short_names=("svc",),
        subresources=("status",),
        field_labels=("spec.clusterIP", "spec.type"),
        categories=("all",),
    ),
    ResourceType(
        group=STORAGE_GROUP,
        kind="CSIDriver",
        plural="csidrivers",
        singular="csidriver",
        namespaced=False,
        versions=("v1",),
    ),
    ResourceType(
        group=STORAGE_GROUP,
        kind="CSINode",
        plural="csinodes",
        singular="csinode",
        namespaced=False,
        versions=("v1",),
    ),
    ResourceType(
        group=COORDINATION_GROUP,
        kind="Lease",
        plural="leases",
        singular="lease",
        namespaced=True,
        versions=("v1",),
    ),
    ResourceType(
        group=NODE_GROUP,
        kind="RuntimeClass",
        plural="runtimeclasses",
        singular="runtimeclass",
        namespaced=False,
        versions=("v1",),
    ),
    ResourceType(
        group=RESOURCE_GROUP,
        kind="DeviceClass",
        plural="deviceclasses",
        singular="deviceclass",
        namespaced=False,
        versions=RESOURCE_VERSIONS,
        generation=True,
    ),
    ResourceType(
        group=RESOURCE_GROUP,
        kind="ResourceClaim",
        plural="resourceclaims",
        singular="resourceclaim",
        namespaced=True,
        versions=RESOURCE_VERSIONS,
        subresources=("status",),
    ),
    ResourceType(
        group=RESOURCE_GROUP,
        kind="ResourceClaimTemplate",
        plural="resourceclaimtemplates",
        singular="resourceclaimtemplate",
        namespaced=True,
        versions=RESOURCE_VERSIONS,
    ),
    ResourceType(
        group=RESOURCE_GROUP,
        kind="ResourceSlice",
        plural="resourceslices",
        singular="resourceslice",
        namespaced=False,
        versions=RESOURCE_VERSIONS,
        field_labels=("spec.nodeName", "spec.driver", "spec.pool.name"),
        generation=True,
    ),
)

_BY_PLURAL = {(rt.group, rt.plural): rt for rt in RESOURCES}


def lookup(group: str, version: str, plural: str) -> ResourceType:
    """The resource served at ``/apis/<group>/<version>/<plural>``; 404 like kube-apiserver otherwise."""
    rt = _BY_PLURAL.get((group, plural))
    if rt is None or version not in rt.versions:
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
    return rt


def groups() -> dict[str, tuple[str, ...]]:
    """Each served group ("" = core) with its versions, preferred first."""
    result: dict[str, tuple[str, ...]] = {}
    for rt in RESOURCES:
        result.setdefault(rt.group, rt.versions)
    return result
