"""Discovery documents and ``/version``, built from the ``RESOURCES`` table.

kubectl and client-go learn which groups, versions and resources exist from these documents
before every command: the legacy per-group-version lists (``/api``, ``/apis``, ``/api/v1``,
``/apis/<group>/<version>``) and the aggregated ``apidiscovery.k8s.io/v2`` lists kubectl asks
for first. Each call returns a new document, so callers may modify it.
"""

from __future__ import annotations

import base64
import hashlib
import platform
import sys
from typing import Any

from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType, groups
from kubelet_dra.peers.apiserver.status import ApiError

Doc = dict[str, Any]

KUBERNETES_VERSION = (1, 36, 2)
GIT_VERSION = "v{}.{}.{}-kubelet-dra".format(*KUBERNETES_VERSION)
SUBRESOURCE_VERBS = ("get", "patch", "update")
AGGREGATED_KIND = "APIGroupDiscoveryList"
AGGREGATED_API_VERSION = "apidiscovery.k8s.io/v2"
_MACHINES = {"x86_64": "amd64", "aarch64": "arm64"}


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _served(group: str, version: str) -> list[ResourceType]:
    """Resources served at ``group/version``, sorted by name like kube-apiserver lists them."""
    return sorted((rt for rt in RESOURCES if rt.group == group and version in rt.versions), key=lambda rt: rt.plural)


def storage_version_hash(rt: ResourceType) -> str:
    """The opaque hash kube-apiserver publishes for a resource's storage version."""
    digest = hashlib.sha256(f"{rt.group}/{rt.storage_version}/{rt.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def core_versions(server_address: str = "") -> Doc:
    """``/api`` (APIVersions); ``server_address`` ("host:port") is what clients reach us at."""
    doc: Doc = {"kind": "APIVersions", "versions": list(groups()[""])}
    if server_address:
        doc["serverAddressByClientCIDRs"] = [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    return doc


def _group_entry(group: str, versions: tuple[str, ...]) -> Doc:
    listed = [{"groupVersion": _group_version(group, v), "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": dict(listed[0])}


def api_group_list() -> Doc:
    """``/apis`` (APIGroupList) with every named group."""
    entries = [_group_entry(group, versions) for group, versions in groups().items() if group]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": entries}


def api_group(group: str) -> Doc:
    """``/apis/<group>`` (APIGroup); 404 for a group we do not serve."""
    versions = groups().get(group) if group else None
    if not versions:
        raise ApiError(404, "NotFound", f"the server could not find the requested resource (/apis/{group})")
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def resource_list(group: str, version: str) -> Doc:
    """``/api/v1`` or ``/apis/<group>/<version>`` (APIResourceList); 404 for a version we do not serve."""
    served = _served(group, version)
    if not served:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
    entries: list[Doc] = []
    for rt in served:
        entry: Doc = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = storage_version_hash(rt)
        entries.append(entry)
        entries.extend(
            {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": list(SUBRESOURCE_VERBS),
            }
            for sub in rt.subresources
        )
    doc: Doc = {"kind": "APIResourceList"}
    if group:
        doc["apiVersion"] = "v1"  # kube-apiserver leaves it out for the core group only
    doc["groupVersion"] = _group_version(group, version)
    doc["resources"] = entries
    return doc


def _aggregated_resource(rt: ResourceType) -> Doc:
    response_kind = {"group": "", "version": "", "kind": rt.kind}
    entry: Doc = {
        "resource": rt.plural,
        "responseKind": dict(response_kind),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [
            {"subresource": sub, "responseKind": dict(response_kind), "verbs": list(SUBRESOURCE_VERBS)}
            for sub in rt.subresources
        ]
    return entry


def _aggregated_group(group: str, versions: tuple[str, ...]) -> Doc:
    metadata = {"name": group} if group else {}
    listed = [
        {
            "version": version,
            "resources": [_aggregated_resource(rt) for rt in _served(group, version)],
            "freshness": "Current",
        }
        for version in versions
    ]
    return {"metadata": metadata, "versions": listed}


def _aggregated(items: list[Doc]) -> Doc:
    return {"kind": AGGREGATED_KIND, "apiVersion": AGGREGATED_API_VERSION, "metadata": {}, "items": items}


def aggregated_core() -> Doc:
    """``/api`` as an aggregated discovery document (APIGroupDiscoveryList)."""
    return _aggregated([_aggregated_group("", groups()[""])])


def aggregated_groups() -> Doc:
    """``/apis`` as an aggregated discovery document (APIGroupDiscoveryList)."""
    return _aggregated([_aggregated_group(g, versions) for g, versions in groups().items() if g])


def version_info() -> Doc:
    """``/version``: the Kubernetes release we emulate, marked as ours in ``gitVersion``."""
    major, minor, _ = KUBERNETES_VERSION
    machine = platform.machine()
    return {
        "major": str(major),
        "minor": str(minor),
        "emulationMajor": str(major),
        "emulationMinor": str(minor),
        "minCompatibilityMajor": str(major),
        "minCompatibilityMinor": str(minor - 1),
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "python{}.{}.{}".format(*sys.version_info[:3]),
        "compiler": sys.implementation.name,
        "platform": f"{sys.platform}/{_MACHINES.get(machine, machine)}",
    }
