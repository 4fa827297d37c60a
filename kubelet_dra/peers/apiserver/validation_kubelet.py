"""Validation of the kinds a kubelet uses besides pods and nodes: Lease, CSINode, CSIDriver, RuntimeClass.

The field paths, reasons and words are kube-apiserver 1.36.2's (compared with a real one), quirks
included: a RuntimeClass's bad node selector key is reported on ``scheduling.nodeSelector`` and a
CSINode driver's bad topology key on the driver itself. Not checked: RuntimeClass overhead
quantities and tolerations, CSIDriver token expirations and which fields an update may change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    dict_at,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    list_at,
    qualified_name_errors,
    str_at,
)
from kubelet_dra.peers.apiserver.resources import COORDINATION_GROUP, NODE_GROUP, STORAGE_GROUP

Obj = dict[str, Any]
Rules = Callable[[Obj, Obj | None, FieldErrors], None]

FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
VOLUME_LIFECYCLE_MODES = ("Persistent", "Ephemeral")


def _validate_lease(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errors.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errors.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")


def _validate_runtime_class(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    handler = str_at(obj, "handler")
    if not handler:
        errors.required("handler")
    else:
        errors.each_invalid("handler", handler, dns1123_label_errors(handler))
    for key in dict_at(dict_at(obj, "scheduling"), "nodeSelector"):
        errors.each_invalid("scheduling.nodeSelector", key, qualified_name_errors(str(key)))


def _validate_csi_node(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    seen: set[str] = set()
    for index, driver in enumerate(list_at(dict_at(obj, "spec"), "drivers")):
        field = f"spec.drivers[{index}]"
        name = str_at(driver, "name")
        if not name:
            errors.required(f"{field}.name")
        else:
            errors.each_invalid(f"{field}.name", name, dns1123_subdomain_errors(name))
        if not str_at(driver, "nodeID"):
            errors.required(f"{field}.nodeID")
        for key in list_at(driver, "topologyKeys"):
            errors.each_invalid(field, key, qualified_name_errors(str(key)))
        if name in seen:
            errors.duplicate(f"{field}.name", name)
        seen.add(name)


def _validate_csi_driver(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        errors.not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES)
    audiences: set[str] = set()
    for index, request in enumerate(list_at(spec, "tokenRequests")):
        audience = str_at(request, "audience")
        if audience in audiences:
            errors.duplicate(f"spec.tokenRequests[{index}].audience", audience)
        audiences.add(audience)
    for mode in list_at(spec, "volumeLifecycleModes"):
        if mode not in VOLUME_LIFECYCLE_MODES:
            errors.not_supported("spec.volumeLifecycleModes", mode, VOLUME_LIFECYCLE_MODES)


RULES: dict[tuple[str, str], Rules] = {
    (COORDINATION_GROUP, "Lease"): _validate_lease,
    (NODE_GROUP, "RuntimeClass"): _validate_runtime_class,
    (STORAGE_GROUP, "CSINode"): _validate_csi_node,
    (STORAGE_GROUP, "CSIDriver"): _validate_csi_driver,
}
