"""Discovery documents compared with a real kube-apiserver's, entry by entry.

The recordings list far more resources than we serve, so each of our entries is compared with the
recorded entry of the same name; differences we make on purpose are listed where they apply.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kubelet_dra.peers.apiserver import discovery
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, RESOURCE_VERSIONS, RESOURCES, groups
from kubelet_dra.peers.apiserver.status import ApiError

RECORDINGS = Path(__file__).parents[2] / "fixtures" / "kube-apiserver-1.36"

# Deliberate differences from the recordings:
# - namespaces: kube-apiserver offers no "deletecollection" on namespaces; our resource table gives
#   every resource the same verbs, so we list it (the verbs come from the table, not from here).
# - resource.k8s.io/v1alpha3 (DeviceTaintRule, ResourcePoolStatusRequest) and
#   resource.k8s.io/v1beta2 devicetaintrules are not served, so they are absent.
VERB_DIFFERENCES = {"namespaces": ["create", "delete", "get", "list", "patch", "update", "watch"]}


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / name).read_text())


def by_name(entries: list[dict[str, Any]], key: str = "name") -> dict[str, dict[str, Any]]:
    return {entry[key]: entry for entry in entries}


def recorded_item(aggregated: dict[str, Any], group: str) -> dict[str, Any]:
    return next(item for item in aggregated["items"] if item["metadata"]["name"] == group)


def as_recorded(entry: dict[str, Any], key: str = "name") -> dict[str, Any]:
    """Our entry with the differences we make on purpose undone."""
    if entry[key] in VERB_DIFFERENCES:
        return {**entry, "verbs": VERB_DIFFERENCES[entry[key]]}
    return entry


RESOURCE_LISTS = [
    pytest.param("", "v1", "discovery.api.v1.json", id="core-v1"),
    *(
        pytest.param(RESOURCE_GROUP, v, f"discovery.resource.k8s.io.{v}.json", id=f"resource.k8s.io-{v}")
        for v in RESOURCE_VERSIONS
    ),
    # the groups of the kubelet's Lease, CSINode, CSIDrivers and RuntimeClasses
    *(
        pytest.param(group, "v1", f"discovery.{group}.v1.json", id=f"{group}-v1")
        for group in ("coordination.k8s.io", "storage.k8s.io", "node.k8s.io")
    ),
]


@pytest.mark.parametrize(("group", "version", "recorded_name"), RESOURCE_LISTS)
def test_resource_list_entries_equal_kube_apiserver_entries(group: str, version: str, recorded_name: str) -> None:
    ours = discovery.resource_list(group, version)
    recorded = recording(recorded_name)
    assert list(ours) == list(recorded)  # same keys, in the same order (no apiVersion for the core group)
    assert ours["groupVersion"] == recorded["groupVersion"]
    recorded_entries = by_name(recorded["resources"])
    for entry in ours["resources"]:
        assert as_recorded(entry) == recorded_entries[entry["name"]]


def test_resource_lists_offer_every_served_resource_and_its_status() -> None:
    served: set[str] = set()
    for rt in RESOURCES:
        for version in rt.versions:
            names = {entry["name"] for entry in discovery.resource_list(rt.group, version)["resources"]}
            served |= names
            assert rt.plural in names
            assert ("status" in rt.subresources) == (f"{rt.plural}/status" in names)
    assert "resourceclaims/status" in served


def test_unserved_group_version_is_not_found() -> None:
    with pytest.raises(ApiError) as caught:
        discovery.resource_list(RESOURCE_GROUP, "v1alpha3")
    assert caught.value.code == 404


def test_group_list_matches_kube_apiserver_for_the_versions_we_serve() -> None:
    ours = discovery.api_group_list()
    recorded = recording("discovery.apis.json")
    assert list(ours) == list(recorded)
    served = [group for group in groups() if group]
    assert [g["name"] for g in ours["groups"]] == [g["name"] for g in recorded["groups"] if g["name"] in served]
    recorded_groups = by_name(recorded["groups"])
    for group in ours["groups"]:
        recorded_group = recorded_groups[group["name"]]
        served_versions = [v for v in recorded_group["versions"] if v["version"] in groups()[group["name"]]]
        assert group == {**recorded_group, "versions": served_versions}


def test_group_document_is_the_group_list_entry() -> None:
    group = discovery.api_group(RESOURCE_GROUP)
    listed = by_name(discovery.api_group_list()["groups"])[RESOURCE_GROUP]
    assert group == {"kind": "APIGroup", "apiVersion": "v1", **listed}
    with pytest.raises(ApiError) as caught:
        discovery.api_group("apps")
    assert caught.value.code == 404


def test_core_versions_tell_clients_where_to_reach_us() -> None:
    assert discovery.core_versions("127.0.0.1:6443") == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    }


def test_aggregated_groups_match_kube_apiserver_per_resource() -> None:
    ours = discovery.aggregated_groups()
    recorded = recording("discovery.aggregated.apis.json")
    assert list(ours) == list(recorded)
    assert (ours["kind"], ours["apiVersion"], ours["metadata"]) == (recorded["kind"], recorded["apiVersion"], {})
    served = [group for group in groups() if group]
    names = [item["metadata"]["name"] for item in recorded["items"]]
    assert [group["metadata"]["name"] for group in ours["items"]] == [name for name in names if name in served]
    for group in ours["items"]:
        recorded_group = recorded_item(recorded, group["metadata"]["name"])
        assert group["metadata"] == recorded_group["metadata"]
        assert [v["version"] for v in group["versions"]] == list(groups()[group["metadata"]["name"]])
        recorded_versions = by_name(recorded_group["versions"], key="version")
        for version in group["versions"]:
            recorded_version = recorded_versions[version["version"]]
            assert list(version) == list(recorded_version)
            assert version["freshness"] == "Current"
            recorded_resources = by_name(recorded_version["resources"], key="resource")
            for entry in version["resources"]:
                assert entry == recorded_resources[entry["resource"]]


def test_aggregated_core_group_is_shaped_like_recorded_groups() -> None:
    ours = discovery.aggregated_core()
    (core,) = ours["items"]
    assert core["metadata"] == {}
    (version,) = core["versions"]
    assert version["version"] == "v1"
    pods = by_name(version["resources"], key="resource")["pods"]
    # The recording is of /apis only; daemonsets has every optional key pods has (shortNames, categories, subresources).
    apps = recorded_item(recording("discovery.aggregated.apis.json"), "apps")
    daemonsets = by_name(apps["versions"][0]["resources"], key="resource")["daemonsets"]
    assert list(pods) == list(daemonsets)
    assert pods["shortNames"] == ["po"]
    assert pods["categories"] == ["all"]
    assert pods["subresources"] == [
        {
            "subresource": "status",
            "responseKind": {"group": "", "version": "", "kind": "Pod"},
            "verbs": ["get", "patch", "update"],
        }
    ]
    legacy = by_name(discovery.resource_list("", "v1")["resources"])
    for entry in version["resources"]:
        assert entry["verbs"] == legacy[entry["resource"]]["verbs"]
        assert entry["scope"] == ("Namespaced" if legacy[entry["resource"]]["namespaced"] else "Cluster")


def test_version_reports_the_emulated_release_as_ours() -> None:
    ours = discovery.version_info()
    recorded = recording("version.json")
    assert list(ours) == list(recorded)
    for key in ("major", "minor", "emulationMajor", "emulationMinor", "minCompatibilityMajor", "minCompatibilityMinor"):
        assert ours[key] == recorded[key]
    assert re.fullmatch(r"v1\.36\.\d+-kubelet-dra", ours["gitVersion"])
    assert re.fullmatch(r"[a-z0-9]+/[a-z0-9_]+", ours["platform"])


def test_documents_are_fresh_copies() -> None:
    first = discovery.resource_list(RESOURCE_GROUP, "v1")
    first["resources"][0]["verbs"].append("escalate")
    assert "escalate" not in discovery.resource_list(RESOURCE_GROUP, "v1")["resources"][0]["verbs"]
