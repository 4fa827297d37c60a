"""Validation: each rule broken once, with kube-apiserver's field path, reason and wording.

Every object goes through defaulting first, as every write in the store does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubelet_dra.peers.apiserver.defaults import apply_defaults
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, ResourceType, lookup
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.validation import validate

RECORDINGS = Path(__file__).parents[2] / "fixtures" / "kube-apiserver-1.36"
SLICES = lookup(RESOURCE_GROUP, "v1", "resourceslices")
CLAIMS = lookup(RESOURCE_GROUP, "v1", "resourceclaims")
TEMPLATES = lookup(RESOURCE_GROUP, "v1", "resourceclaimtemplates")
CLASSES = lookup(RESOURCE_GROUP, "v1", "deviceclasses")
PODS = lookup("", "v1", "pods")
NODES = lookup("", "v1", "nodes")
NAMESPACES = lookup("", "v1", "namespaces")
CONFIGMAPS = lookup("", "v1", "configmaps")
EVENTS = lookup("", "v1", "events")

Obj = dict[str, Any]
DELETE = object()
DNS_SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
DNS_LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"


def recording(name: str) -> Obj:
    return json.loads((RECORDINGS / name).read_text())


def written(rt: ResourceType, obj: Obj, old: Obj | None = None) -> Obj:
    """Default then validate a copy of ``obj``, as the store does on every write."""
    obj = copy.deepcopy(obj)
    apply_defaults(rt, obj)
    validate(rt, obj, old)
    return obj


def rejection(rt: ResourceType, obj: Obj, old: Obj | None = None) -> ApiError:
    with pytest.raises(ApiError) as caught:
        written(rt, obj, old)
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    return caught.value


def edit(path: str, value: Any = DELETE) -> Callable[[Obj], None]:
    """A change at a dotted path (list indexes as numbers); DELETE removes the field."""

    def apply(obj: Obj) -> None:
        *parents, last = path.split(".")
        target: Any = obj
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
        if isinstance(target, list) and int(last) == len(target):
            target.append(copy.deepcopy(value))
        elif isinstance(target, list):
            target[int(last)] = copy.deepcopy(value)
        elif value is DELETE:
            target.pop(last, None)
        else:
            target[last] = copy.deepcopy(value)

    return apply


def edits(*changes: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def apply(obj: Obj) -> None:
        for change in changes:
            change(obj)

    return apply


# --- valid objects -----------------------------------------------------------------------


def resource_slice() -> Obj:
    return recording("resourceslice.v1.json")


def claim() -> Obj:
    return recording("resourceclaim-allocated.v1.json")


def unallocated_claim() -> Obj:
    return {
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }


def template() -> Obj:
    return {
        "metadata": {"name": "template", "namespace": "default"},
        "spec": {"metadata": {"labels": {"app": "demo"}}, "spec": unallocated_claim()["spec"]},
    }


def device_class() -> Obj:
    return {
        "metadata": {"name": "gpu.example.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
            "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "none"}}}],
        },
    }


def pod() -> Obj:
    return {
        "metadata": {"name": "pod1", "namespace": "default", "labels": {"app": "demo"}},
        "spec": {
            "nodeName": "lab-node",
            "containers": [
                {"name": "ctr", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}},
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "template"}],
            "tolerations": [{"key": "example.com/gpu", "operator": "Exists"}],
        },
    }


def node() -> Obj:
    return {"metadata": {"name": "lab-node"}, "spec": {"taints": [{"key": "example.com/gpu", "effect": "NoSchedule"}]}}


def namespace() -> Obj:
    return {"metadata": {"name": "team-a"}}


def config_map() -> Obj:
    return {"metadata": {"name": "settings", "namespace": "default"}, "data": {"mode": "fast"}}


def immutable_config_map() -> Obj:
    return {**config_map(), "immutable": True}


def event() -> Obj:
    return {
        "metadata": {"name": "pod1.17a9b", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "pod1"},
        "reason": "Started",
        "type": "Normal",
    }


VALID = [
    pytest.param(SLICES, resource_slice, id="resourceslice-recorded"),
    pytest.param(CLAIMS, claim, id="resourceclaim-recorded"),
    pytest.param(CLAIMS, unallocated_claim, id="resourceclaim"),
    pytest.param(TEMPLATES, template, id="resourceclaimtemplate"),
    pytest.param(CLASSES, device_class, id="deviceclass"),
    pytest.param(PODS, pod, id="pod"),
    pytest.param(NODES, node, id="node"),
    pytest.param(NAMESPACES, namespace, id="namespace"),
    pytest.param(CONFIGMAPS, config_map, id="configmap"),
    pytest.param(EVENTS, event, id="event"),
]


@pytest.mark.parametrize(("rt", "make"), VALID)
def test_valid_objects_are_accepted_on_create_and_unchanged_update(rt: ResourceType, make) -> None:
    stored = written(rt, make())
    written(rt, stored, old=stored)


# --- one rule at a time ------------------------------------------------------------------

CASES = [
    # ObjectMeta, for every kind
    (SLICES, resource_slice, edit("metadata.name", ""), "metadata.name", "FieldValueRequired",
     "Required value: name or generateName is required"),
    (SLICES, resource_slice, edit("metadata.name", "Lab_Node"), "metadata.name", "FieldValueInvalid",
     f'Invalid value: "Lab_Node": {DNS_SUBDOMAIN}'),
    (SLICES, resource_slice, edit("metadata.generateName", "Bad_"), "metadata.generateName", "FieldValueInvalid",
     'Invalid value: "Bad_"'),
    (NAMESPACES, namespace, edit("metadata.name", "team.a"), "metadata.name", "FieldValueInvalid",
     f'Invalid value: "team.a": {DNS_LABEL}'),
    (CLAIMS, unallocated_claim, edit("metadata.namespace"), "metadata.namespace", "FieldValueRequired",
     "Required value"),
    (SLICES, resource_slice, edit("metadata.namespace", "default"), "metadata.namespace", "FieldValueForbidden",
     "Forbidden: not allowed on this type"),
    (PODS, pod, edit("metadata.labels", {"bad key!": "x"}), "metadata.labels", "FieldValueInvalid",
     'Invalid value: "bad key!": name part must consist of alphanumeric characters'),
    (PODS, pod, edit("metadata.labels", {"app": "-x"}), "metadata.labels", "FieldValueInvalid",
     'Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters'),
    (PODS, pod, edit("metadata.annotations", {"/x": "y"}), "metadata.annotations", "FieldValueInvalid",
     'Invalid value: "/x": prefix part must be non-empty'),
    (PODS, pod, edit("metadata.annotations", {"big": "x" * 300_000}), "metadata.annotations", "FieldValueTooLong",
     "Too long: may not be more than 262144 bytes"),
    (PODS, pod, edit("metadata.finalizers", ["example.com/a", "example.com/a"]), "metadata.finalizers",
     "FieldValueDuplicate", 'Duplicate value: "example.com/a"'),
    (SLICES, resource_slice, edit("metadata.ownerReferences.0.uid", ""), "metadata.ownerReferences.uid",
     "FieldValueInvalid", 'Invalid value: "": must not be empty'),
    # ResourceSlice
    (SLICES, resource_slice, edit("spec.driver", ""), "spec.driver", "FieldValueRequired", "Required value"),
    (SLICES, resource_slice, edit("spec.driver", "gpu_example.com"), "spec.driver", "FieldValueInvalid",
     f'Invalid value: "gpu_example.com": {DNS_SUBDOMAIN}'),
    (SLICES, resource_slice, edit("spec.driver", "a" * 64 + ".com"), "spec.driver", "FieldValueTooLong",
     "Too long: may not be more than 63 bytes"),
    (SLICES, resource_slice, edit("spec.pool.name"), "spec.pool.name", "FieldValueRequired", "Required value"),
    (SLICES, resource_slice, edit("spec.pool.name", "node/Bad"), "spec.pool.name", "FieldValueInvalid",
     f'Invalid value: "Bad": {DNS_SUBDOMAIN}'),
    (SLICES, resource_slice, edit("spec.pool.resourceSliceCount", 0), "spec.pool.resourceSliceCount",
     "FieldValueInvalid", "Invalid value: 0: must be greater than zero"),
    (SLICES, resource_slice, edit("spec.pool.generation", -1), "spec.pool.generation", "FieldValueInvalid",
     "Invalid value: -1: must be greater than or equal to zero"),
    (SLICES, resource_slice, edit("spec.nodeName"), "spec", "FieldValueRequired",
     "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"),
    (SLICES, resource_slice, edit("spec.allNodes", True), "spec", "FieldValueInvalid",
     'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
     "`perDeviceNodeSelection` is required, but multiple fields are set"),
    (SLICES, resource_slice, edit("spec.nodeName", ""), "spec.nodeName", "FieldValueInvalid",
     'Invalid value: "": must be either unset or set to a non-empty string'),
    (SLICES, resource_slice, edits(edit("spec.nodeName"), edit("spec.allNodes", False)), "spec.allNodes",
     "FieldValueInvalid", "Invalid value: false: must be either unset or set to true"),
    (SLICES, resource_slice,
     edits(edit("spec.nodeName"), edit("spec.nodeSelector", {"nodeSelectorTerms": [{}, {}]})),
     "spec.nodeSelector.nodeSelectorTerms", "FieldValueInvalid",
     "Invalid value: [{},{}]: must have exactly one node selector term"),
    (SLICES, resource_slice, edit("spec.devices.0.name", "GPU_0"), "spec.devices[0].name", "FieldValueInvalid",
     f'Invalid value: "GPU_0": {DNS_LABEL}'),
    (SLICES, resource_slice, edit("spec.devices.1.name", "gpu-0"), "spec.devices[1]", "FieldValueDuplicate",
     'Duplicate value: "gpu-0"'),
    (SLICES, resource_slice, edit("spec.devices.0.attributes.model", {}), "spec.devices[0].attributes[model]",
     "FieldValueInvalid", 'Invalid value: "": exactly one value must be specified'),
    (SLICES, resource_slice, edit("spec.devices.0.attributes.model", {"string": "x", "int": 1}),
     "spec.devices[0].attributes[model]", "FieldValueInvalid",
     'Invalid value: {"int":1,"string":"x"}: exactly one value must be specified'),
    (SLICES, resource_slice, edit("spec.devices.0.attributes.model.string", "x" * 65),
     "spec.devices[0].attributes[model].string", "FieldValueTooLong", "Too long: may not be more than 64 bytes"),
    (SLICES, resource_slice, edit("spec.devices.0.attributes.driverVersion.version", "1.0"),
     "spec.devices[0].attributes[driverVersion].version", "FieldValueInvalid",
     'Invalid value: "1.0": must be a string compatible with semver.org spec 2.0.0'),
    (SLICES, resource_slice, edit("spec.devices.0.attributes.2model", {"int": 2}), "spec.devices[0].attributes[2model]",
     "FieldValueInvalid", 'Invalid value: "2model": a valid C identifier must start with alphabetic character'),
    (SLICES, resource_slice, edit("spec.devices", [{"name": f"d{i}"} for i in range(129)]), "spec.devices",
     "FieldValueTooMany", "Too many: 129: must have at most 128 items"),
    (SLICES, resource_slice, edit("spec.devices.0.nodeName", "lab-node"), "spec.devices[0]", "FieldValueInvalid",
     "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
     "is set to true in the ResourceSlice spec"),
    (SLICES, resource_slice, edits(edit("spec.nodeName"), edit("spec.perDeviceNodeSelection", True)),
     "spec.devices[0]", "FieldValueRequired",
     "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes`"),
    # ResourceClaim spec
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.exactly"), "spec.devices.requests[0]",
     "FieldValueRequired", "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    (CLAIMS, unallocated_claim,
     edit("spec.devices.requests.0.firstAvailable", [{"name": "a", "deviceClassName": "c"}]),
     "spec.devices.requests[0]", "FieldValueInvalid",
     "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"),
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.exactly.deviceClassName"),
     "spec.devices.requests[0].exactly.deviceClassName", "FieldValueRequired", "Required value"),
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.exactly.allocationMode", "Some"),
     "spec.devices.requests[0].exactly.allocationMode", "FieldValueNotSupported",
     'Unsupported value: "Some": supported values: "All", "ExactCount"'),
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.exactly.count", -1),
     "spec.devices.requests[0].exactly.count", "FieldValueInvalid", "Invalid value: -1: must be greater than zero"),
    (CLAIMS, unallocated_claim,
     edits(edit("spec.devices.requests.0.exactly.allocationMode", "All"),
           edit("spec.devices.requests.0.exactly.count", 2)),
     "spec.devices.requests[0].exactly.count", "FieldValueInvalid",
     "Invalid value: 2: must not be specified when allocationMode is 'All'"),
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.name", "GPU"), "spec.devices.requests[0].name",
     "FieldValueInvalid", f'Invalid value: "GPU": {DNS_LABEL}'),
    (CLAIMS, unallocated_claim,
     edit("spec.devices.requests.1", {"name": "gpu", "exactly": {"deviceClassName": "c"}}),
     "spec.devices.requests[1]", "FieldValueDuplicate", 'Duplicate value: "gpu"'),
    (CLAIMS, unallocated_claim, edit("spec.devices.requests.0.exactly.selectors", [{}]),
     "spec.devices.requests[0].exactly.selectors[0].cel", "FieldValueRequired", "Required value"),
    (CLAIMS, unallocated_claim,
     edit("spec.devices.requests.0", {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"},
                                                                         {"name": "a", "deviceClassName": "d"}]}),
     "spec.devices.requests[0].firstAvailable[1]", "FieldValueDuplicate", 'Duplicate value: "a"'),
    (CLAIMS, unallocated_claim,
     edit("spec.devices.constraints", [{"requests": ["cpu"], "matchAttribute": "gpu.example.com/model"}]),
     "spec.devices.constraints[0].requests[0]", "FieldValueInvalid",
     "Invalid value: \"cpu\": must be the name of a request in the claim or the name of a request and a subrequest "
     "separated by '/'"),
    (CLAIMS, unallocated_claim, edit("spec.devices.constraints", [{"matchAttribute": "model"}]),
     "spec.devices.constraints[0].matchAttribute", "FieldValueInvalid",
     'Invalid value: "model": a fully qualified name must be a domain and a name separated by a slash'),
    (CLAIMS, unallocated_claim, edit("spec.devices.config", [{"requests": ["gpu"]}]),
     "spec.devices.config[0].opaque", "FieldValueRequired", "Required value"),
    (CLAIMS, unallocated_claim,
     edit("spec.devices.config", [{"opaque": {"driver": "gpu.example.com", "parameters": [1]}}]),
     "spec.devices.config[0].opaque.parameters", "FieldValueInvalid",
     'Invalid value: "<value omitted>": parameters must be a valid JSON object'),
    # ResourceClaim status
    (CLAIMS, claim, edit("status.allocation"), "status.reservedFor", "FieldValueForbidden",
     "Forbidden: may not be specified when `allocated` is not set"),
    (CLAIMS, claim, edit("status.reservedFor.0.uid", ""), "status.reservedFor[0].uid", "FieldValueRequired",
     "Required value"),
    (CLAIMS, claim,
     edit("status.reservedFor", [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(257)]),
     "status.reservedFor", "FieldValueTooMany", "Too many: 257: must have at most 256 items"),
    (CLAIMS, claim, edit("status.reservedFor", [{"resource": "pods", "name": "a", "uid": "u"},
                                                {"resource": "pods", "name": "b", "uid": "u"}]),
     "status.reservedFor[1]", "FieldValueDuplicate", 'Duplicate value: "u"'),
    *[
        (CLAIMS, claim, edit(f"status.allocation.devices.results.0.{key}", ""),
         f"status.allocation.devices.results[0].{key}", "FieldValueRequired", "Required value")
        for key in ("request", "driver", "pool", "device")
    ],
    (CLAIMS, claim, edit("status.allocation.devices.results.0.request", "cpu"),
     "status.allocation.devices.results[0].request", "FieldValueInvalid",
     "Invalid value: \"cpu\": must be the name of a request in the claim or the name of a request and a subrequest "
     "separated by '/'"),
    (CLAIMS, claim,
     edit("status.devices", [{"driver": "gpu.example.com", "pool": "lab-node", "device": "gpu-7"}]),
     "status.devices[0]", "FieldValueInvalid",
     'Invalid value: "gpu.example.com/lab-node/gpu-7": must be an allocated device in the claim'),
    # ResourceClaimTemplate and DeviceClass
    (TEMPLATES, template, edit("spec.spec.devices.requests.0.exactly"), "spec.spec.devices.requests[0]",
     "FieldValueRequired", "Required value: exactly one of `exactly` or `firstAvailable` is required"),
    (TEMPLATES, template, edit("spec.metadata.labels", {"app": "no spaces"}), "spec.metadata.labels",
     "FieldValueInvalid", 'Invalid value: "no spaces": a valid label must be an empty string'),
    (CLASSES, device_class, edit("spec.selectors.0.cel.expression", ""), "spec.selectors[0].cel.expression",
     "FieldValueRequired", "Required value"),
    (CLASSES, device_class, edit("spec.config.0.opaque.driver", ""), "spec.config[0].opaque.driver",
     "FieldValueRequired", "Required value"),
    # Pod
    (PODS, pod, edit("spec.containers", []), "spec.containers", "FieldValueRequired", "Required value"),
    (PODS, pod, edit("spec.containers.0.name"), "spec.containers[0].name", "FieldValueRequired", "Required value"),
    (PODS, pod, edit("spec.containers.0.image", ""), "spec.containers[0].image", "FieldValueRequired",
     "Required value"),
    (PODS, pod, edit("spec.initContainers", [{"name": "ctr", "image": "busybox"}]), "spec.initContainers[0].name",
     "FieldValueDuplicate", 'Duplicate value: "ctr"'),
    (PODS, pod, edit("spec.restartPolicy", "Sometimes"), "spec.restartPolicy", "FieldValueNotSupported",
     'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    (PODS, pod, edit("spec.resourceClaims.0.name"), "spec.resourceClaims[0].name", "FieldValueRequired",
     "Required value"),
    (PODS, pod, edit("spec.resourceClaims.0.resourceClaimName", "claim1"), "spec.resourceClaims[0]",
     "FieldValueInvalid",
     'Invalid value: {"name":"gpu","resourceClaimName":"claim1","resourceClaimTemplateName":"template"}: '
     "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    (PODS, pod, edit("spec.resourceClaims.0.resourceClaimTemplateName"), "spec.resourceClaims[0]",
     "FieldValueInvalid",
     'Invalid value: {"name":"gpu"}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'),
    (PODS, pod, edit("spec.resourceClaims.1", {"name": "gpu", "resourceClaimName": "c"}), "spec.resourceClaims[1]",
     "FieldValueDuplicate", 'Duplicate value: "gpu"'),
    (PODS, pod, edit("spec.resourceClaims.0.resourceClaimTemplateName", "Template"),
     "spec.resourceClaims[0].resourceClaimTemplateName", "FieldValueInvalid",
     f'Invalid value: "Template": {DNS_SUBDOMAIN}'),
    (PODS, pod, edit("spec.containers.0.resources.claims.0.name", "fpga"), "spec.containers[0].resources.claims[0]",
     "FieldValueNotFound", 'Not found: "fpga": must be one of the names in pod.spec.resourceClaims: gpu'),
    # Node, Namespace, ConfigMap, Event
    (NODES, node, edit("spec.taints.0.effect", "Sometimes"), "spec.taints[0].effect", "FieldValueNotSupported",
     'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    (NAMESPACES, namespace, edit("spec.finalizers", ["a/b/c"]), "spec.finalizers", "FieldValueInvalid",
     'Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters'),
    (CONFIGMAPS, config_map, edit("data", {"no/slashes": "x"}), "data[no/slashes]", "FieldValueInvalid",
     'Invalid value: "no/slashes": a valid config key must consist of alphanumeric characters'),
    (EVENTS, event, edit("involvedObject.namespace", "other"), "involvedObject.namespace", "FieldValueInvalid",
     'Invalid value: "other": does not match event.namespace'),
]  # fmt: skip


def case_id(case: tuple[Any, ...]) -> str:
    rt, _, _, field, reason, _ = case
    return f"{rt.singular}:{field}:{reason.removeprefix('FieldValue')}"


@pytest.mark.parametrize(("rt", "make", "change", "field", "reason", "message"), CASES, ids=[case_id(c) for c in CASES])
def test_broken_rule_is_reported_at_its_field(rt, make, change, field: str, reason: str, message: str) -> None:
    obj = make()
    change(obj)
    causes = rejection(rt, obj).details["causes"]
    reported = {(cause["field"], cause["reason"]): cause["message"] for cause in causes}
    assert (field, reason) in reported, causes
    assert reported[(field, reason)].startswith(message)


UPDATES = [
    (SLICES, resource_slice, edit("spec.driver", "other.example.com"), "spec.driver",
     'Invalid value: "other.example.com": field is immutable'),
    (SLICES, resource_slice, edit("spec.pool.name", "other-pool"), "spec.pool.name",
     'Invalid value: "other-pool": field is immutable'),
    (SLICES, resource_slice, edit("spec.nodeName", "other-node"), "spec.nodeName",
     'Invalid value: "other-node": field is immutable'),
    (SLICES, resource_slice, edit("metadata.uid", "another-uid"), "metadata.uid",
     'Invalid value: "another-uid": field is immutable'),
    (CLAIMS, claim, edit("spec.devices.requests.0.exactly.count", 2), "spec", "Invalid value: {"),
    (CLAIMS, claim, edit("status.allocation.devices.results.0.device", "gpu-7"), "status.allocation",
     "Invalid value: {"),
    (TEMPLATES, template, edit("spec.spec.devices.requests.0.name", "other"), "spec", "Invalid value: {"),
    (PODS, pod, edit("spec.nodeName", "other-node"), "spec",
     "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"),
    (PODS, pod, edit("spec.tolerations", []), "spec.tolerations",
     "Forbidden: existing toleration can not be modified except its tolerationSeconds"),
    (CONFIGMAPS, immutable_config_map, edit("data.mode", "slow"), "data",
     "Forbidden: field is immutable when `immutable` is set"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rt", "make", "change", "field", "message"), UPDATES, ids=[c[3] + "-" + c[0].singular for c in UPDATES]
)
def test_update_may_not_change_what_is_fixed_once_stored(rt, make, change, field: str, message: str) -> None:
    stored = written(rt, make())
    updated = copy.deepcopy(stored)
    change(updated)
    causes = rejection(rt, updated, old=stored).details["causes"]
    assert any(c["field"] == field and c["message"].startswith(message) for c in causes), causes


@pytest.mark.parametrize(
    ("rt", "make", "change"),
    [
        (PODS, pod, edit("spec.containers.0.image", "busybox:1.37")),
        (PODS, pod, edit("metadata.labels", {"app": "other"})),
        (PODS, pod, edit("status", {"phase": "Running", "qosClass": "BestEffort"})),
        (CLAIMS, unallocated_claim, edit("status", claim()["status"])),
        (SLICES, resource_slice, edit("spec.devices.0.attributes.model.string", "NEWER-MODEL")),
        (SLICES, resource_slice, edit("spec.pool.generation", 2)),
    ],
    ids=["pod-image", "pod-labels", "pod-status", "claim-allocation", "slice-devices", "slice-generation"],
)
def test_update_may_change_what_real_clients_change(rt, make, change) -> None:
    stored = written(rt, make())
    updated = copy.deepcopy(stored)
    change(updated)
    written(rt, updated, old=stored)


def test_status_names_the_object_and_lists_every_cause_like_kube_apiserver() -> None:
    obj = resource_slice()
    obj["spec"]["driver"] = ""
    obj["spec"]["pool"]["resourceSliceCount"] = 0
    status = rejection(SLICES, obj).to_status()
    assert status["code"] == 422
    assert status["message"] == (
        'ResourceSlice.resource.k8s.io "00000-gpu.example.com-lab-node-6h45n" is invalid: [spec.driver: Required value,'
        " spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero]"
    )
    assert status["details"]["name"] == "00000-gpu.example.com-lab-node-6h45n"
    assert (status["details"]["group"], status["details"]["kind"]) == ("resource.k8s.io", "ResourceSlice")
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.driver", "spec.pool.resourceSliceCount"]


def test_uppercase_driver_names_are_accepted_like_csi_driver_names() -> None:
    obj = resource_slice()
    obj["spec"]["driver"] = "GPU.Example.com"
    written(SLICES, obj)


def test_generate_name_may_end_in_a_dash() -> None:
    obj = resource_slice()
    assert obj["metadata"]["generateName"].endswith("-")
    written(SLICES, obj)
