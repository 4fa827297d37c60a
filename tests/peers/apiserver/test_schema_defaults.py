"""Defaulting as kube-apiserver does it, confirmed against what the real server stored."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kubelet_dra.peers.apiserver.defaults import apply_defaults
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, lookup

RECORDINGS = Path(__file__).parents[2] / "fixtures" / "kube-apiserver-1.36"
SLICES = lookup(RESOURCE_GROUP, "v1", "resourceslices")
CLAIMS = lookup(RESOURCE_GROUP, "v1", "resourceclaims")
TEMPLATES = lookup(RESOURCE_GROUP, "v1", "resourceclaimtemplates")
PODS = lookup("", "v1", "pods")
NAMESPACES = lookup("", "v1", "namespaces")
NODES = lookup("", "v1", "nodes")
CONFIGMAPS = lookup("", "v1", "configmaps")


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / name).read_text())


def defaulted(rt, obj: dict[str, Any]) -> dict[str, Any]:
    apply_defaults(rt, obj)
    return obj


def test_claim_as_kubectl_sent_it_defaults_to_what_kube_apiserver_stored() -> None:
    stored = recording("resourceclaim-allocated.v1.json")
    sent = json.loads(stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert defaulted(CLAIMS, sent)["spec"] == stored["spec"]


@pytest.mark.parametrize(
    ("rt", "name"),
    [(SLICES, "resourceslice.v1.json"), (CLAIMS, "resourceclaim-allocated.v1.json")],
    ids=["resourceslice", "resourceclaim"],
)
def test_stored_objects_are_already_fully_defaulted(rt, name: str) -> None:
    assert defaulted(rt, recording(name)) == recording(name)


def claim_spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests)}}


def test_first_available_subrequests_default_like_exactly_requests() -> None:
    spec = claim_spec({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]})
    subrequest = defaulted(CLAIMS, {"spec": spec})["spec"]["devices"]["requests"][0]["firstAvailable"][0]
    assert subrequest == {"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}


def test_allocation_mode_all_gets_no_count_and_explicit_values_stay() -> None:
    spec = claim_spec(
        {"name": "all", "exactly": {"deviceClassName": "c", "allocationMode": "All"}},
        {"name": "three", "exactly": {"deviceClassName": "c", "count": 3}},
    )
    requests = defaulted(CLAIMS, {"spec": spec})["spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {"deviceClassName": "c", "allocationMode": "All"}
    assert requests[1]["exactly"] == {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 3}


def test_tolerations_default_to_operator_equal_in_requests_and_results() -> None:
    toleration = {"key": "example.com/broken", "effect": "NoSchedule"}
    claim = {
        "spec": claim_spec({"name": "r", "exactly": {"deviceClassName": "c", "tolerations": [dict(toleration)]}}),
        "status": {"allocation": {"devices": {"results": [{"request": "r", "tolerations": [dict(toleration)]}]}}},
    }
    defaulted(CLAIMS, claim)
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["operator"] == "Equal"
    assert claim["status"]["allocation"]["devices"]["results"][0]["tolerations"][0]["operator"] == "Equal"


def test_template_claim_spec_is_defaulted() -> None:
    template = {"spec": {"spec": claim_spec({"name": "r", "exactly": {"deviceClassName": "c"}})}}
    exactly = defaulted(TEMPLATES, template)["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}


def test_device_taints_get_the_time_they_were_added() -> None:
    taints = [
        {"key": "a", "effect": "NoSchedule"},
        {"key": "b", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"},
    ]
    resource_slice = {"spec": {"devices": [{"name": "gpu-0", "taints": taints}]}}
    first, second = defaulted(SLICES, resource_slice)["spec"]["devices"][0]["taints"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["timeAdded"])
    assert second["timeAdded"] == "2026-01-01T00:00:00Z"


def minimal_pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec},
    }


def test_pod_gets_the_defaults_every_real_pod_carries() -> None:
    pod = defaulted(PODS, minimal_pod())
    assert pod["spec"] == {
        "containers": [
            {
                "name": "c",
                "image": "busybox:1.36",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "resources": {},
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
        "enableServiceLinks": True,
        "securityContext": {},
    }
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_pod_defaults_keep_what_the_client_set() -> None:
    pod = minimal_pod(restartPolicy="Never", terminationGracePeriodSeconds=0, schedulerName="mine")
    pod["status"] = {"phase": "Running", "qosClass": "Burstable"}
    defaulted(PODS, pod)
    assert (pod["spec"]["restartPolicy"], pod["spec"]["terminationGracePeriodSeconds"]) == ("Never", 0)
    assert pod["spec"]["schedulerName"] == "mine"
    assert pod["status"] == {"phase": "Running", "qosClass": "Burstable"}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("registry.local:5000/busybox", "Always"),
        ("registry.local:5000/busybox:1.36", "IfNotPresent"),
        ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    pod = minimal_pod()
    pod["spec"]["containers"][0]["image"] = image
    assert defaulted(PODS, pod)["spec"]["containers"][0]["imagePullPolicy"] == policy


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
    ],
)
def test_pod_qos_class_comes_from_requests_and_limits(resources: dict[str, Any], qos: str) -> None:
    pod = minimal_pod()
    pod["spec"]["containers"][0]["resources"] = resources
    assert defaulted(PODS, pod)["status"]["qosClass"] == qos


def test_limits_become_requests_when_requests_are_missing() -> None:
    pod = minimal_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}
    assert defaulted(PODS, pod)["spec"]["containers"][0]["resources"]["requests"] == {"memory": "1Gi", "cpu": "1"}


def test_pod_ports_volumes_and_field_refs_are_defaulted() -> None:
    pod = minimal_pod(hostNetwork=True, volumes=[{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}}])
    container = pod["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 8080}]
    container["env"] = [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    defaulted(PODS, pod)
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP", "hostPort": 8080}]
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert pod["spec"]["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
    ]


def test_namespace_gets_its_name_label_finalizer_and_phase() -> None:
    namespace = defaulted(NAMESPACES, {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "x"}}})
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert namespace["spec"] == {"finalizers": ["kubernetes"]}
    assert namespace["status"] == {"phase": "Active"}


def test_node_allocatable_defaults_to_capacity() -> None:
    node = defaulted(NODES, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}})
    assert node["status"]["allocatable"] == {"cpu": "4", "pods": "110"}


def test_defaulting_twice_changes_nothing_more() -> None:
    pod = defaulted(PODS, minimal_pod())
    assert defaulted(PODS, copy.deepcopy(pod)) == pod


def test_kinds_without_defaults_are_left_alone() -> None:
    config_map = {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "b"}}
    assert defaulted(CONFIGMAPS, copy.deepcopy(config_map)) == config_map


@pytest.mark.parametrize(
    ("rt", "obj", "malformed"),
    [
        (PODS, {"spec": ["not", "an", "object"]}, lambda o: o["spec"]),
        (
            PODS,
            {"spec": {"containers": "nope", "volumes": [1, None]}},
            lambda o: [o["spec"][k] for k in ("containers", "volumes")],
        ),
        (CLAIMS, {"spec": {"devices": {"requests": [None, {"exactly": "x"}]}}}, lambda o: o["spec"]),
        (NAMESPACES, {"metadata": {"name": "n", "labels": ["x"]}}, lambda o: o["metadata"]["labels"]),
    ],
    ids=["pod-spec-list", "pod-fields-malformed", "claim-requests-malformed", "namespace-labels-list"],
)
def test_malformed_fields_are_left_for_validation_to_report(rt, obj: dict[str, Any], malformed) -> None:
    before = malformed(copy.deepcopy(obj))
    apply_defaults(rt, obj)
    assert malformed(obj) == before
