"""Validation of the core/v1 kinds the kubelet, drivers and kubectl write: Pod, Node, Namespace, ConfigMap, Event.

Only what those clients run into is checked: a pod's containers and DRA resource claims and
which parts of its spec an update may change, node taints, namespace finalizers, ConfigMap keys
and immutability, and that an event lives in its object's namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    check_set,
    config_key_errors,
    dict_at,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    list_at,
    qualified_name_errors,
    semantic_equal,
    str_at,
)

Obj = dict[str, Any]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONFIGMAP_MAX_BYTES = 1024 * 1024
POD_UPDATE_DETAIL = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
# Pod spec fields an update may change (tolerations and scheduling gates only in one direction).
_POD_MUTABLE = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates")
_CONTAINER_LISTS = ("containers", "initContainers")


# --- Pod ---------------------------------------------------------------------------------


def _check_container(container: Any, field: str, claim_names: set[str], errors: FieldErrors) -> None:
    name = str_at(container, "name")
    if not name:
        errors.required(f"{field}.name")
    else:
        errors.each_invalid(f"{field}.name", name, dns1123_label_errors(name))
    if not str_at(container, "image"):
        errors.required(f"{field}.image")
    claims_field = f"{field}.resources.claims"
    seen: set[str] = set()
    for index, claim in enumerate(list_at(dict_at(container, "resources"), "claims")):
        claim_name, request = str_at(claim, "name"), str_at(claim, "request")
        if not claim_name:
            errors.required(f"{claims_field}[{index}]")
            continue
        if f"{claim_name}/{request}" in seen:
            errors.duplicate(f"{claims_field}[{index}]", claim_name)
        seen.add(f"{claim_name}/{request}")
        if claim_name not in claim_names:
            known = ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            errors.not_found(
                f"{claims_field}[{index}]", claim_name, f"must be one of the names in pod.spec.resourceClaims{known}"
            )


def _check_pod_resource_claim(claim: Any, field: str, errors: FieldErrors) -> None:
    """One entry of spec.resourceClaims: a name and exactly one source."""
    name = str_at(claim, "name")
    if not name:
        errors.required(f"{field}.name")
    else:
        errors.each_invalid(f"{field}.name", name, dns1123_label_errors(name))
    claim = claim if isinstance(claim, dict) else {}
    sources = [key for key in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(key) is not None]
    if len(sources) > 1:
        errors.invalid(
            field, claim, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
        )
    elif not sources:
        errors.invalid(field, claim, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
    for key in sources:
        errors.each_invalid(f"{field}.{key}", claim[key], dns1123_subdomain_errors(str(claim[key])))


def _check_pod_spec(spec: Obj, errors: FieldErrors) -> None:
    claims = list_at(spec, "resourceClaims")
    check_set(
        claims,
        "spec.resourceClaims",
        None,
        lambda claim, field: _check_pod_resource_claim(claim, field, errors),
        errors,
        key=lambda claim: str_at(claim, "name"),
    )
    claim_names = {str_at(claim, "name") for claim in claims if str_at(claim, "name")}
    if not list_at(spec, "containers"):
        errors.required("spec.containers")
    container_names: set[str] = set()
    for key in _CONTAINER_LISTS:
        for index, container in enumerate(list_at(spec, key)):
            field = f"spec.{key}[{index}]"
            _check_container(container, field, claim_names, errors)
            name = str_at(container, "name")
            if name and name in container_names:
                errors.duplicate(f"{field}.name", name)
            container_names.add(name)
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        errors.not_supported("spec.restartPolicy", policy if policy is not None else "", RESTART_POLICIES)
    node_name = str_at(spec, "nodeName")
    if node_name:
        errors.each_invalid("spec.nodeName", node_name, dns1123_subdomain_errors(node_name))


def _without_mutable(spec: Obj) -> Obj:
    """A pod spec minus what an update may change, for comparing old and new."""
    masked = {key: value for key, value in spec.items() if key not in _POD_MUTABLE}
    for key in _CONTAINER_LISTS:
        if isinstance(spec.get(key), list):
            masked[key] = [{**c, "image": None} if isinstance(c, dict) else c for c in spec[key]]
    return masked


def _check_pod_update(spec: Obj, old_spec: Obj, errors: FieldErrors) -> None:
    if not semantic_equal(_without_mutable(spec), _without_mutable(old_spec)):
        errors.forbidden("spec", POD_UPDATE_DETAIL)
    tolerations = list_at(spec, "tolerations")
    if any(toleration not in tolerations for toleration in list_at(old_spec, "tolerations")):
        errors.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")
    old_gates = {str_at(gate, "name") for gate in list_at(old_spec, "schedulingGates")}
    for gate in list_at(spec, "schedulingGates"):
        if str_at(gate, "name") not in old_gates:
            detail = f"only deletion is allowed, but found new scheduling gate '{str_at(gate, 'name')}'"
            errors.forbidden("spec.schedulingGates", detail)


def _validate_pod(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    _check_pod_spec(spec, errors)
    if old is not None:
        _check_pod_update(spec, dict_at(old, "spec"), errors)


# --- Node, Namespace, ConfigMap, Event ---------------------------------------------------


def _check_taint(taint: Any, field: str, errors: FieldErrors) -> None:
    key = str_at(taint, "key")
    errors.each_invalid(f"{field}.key", key, qualified_name_errors(key))
    errors.each_invalid(f"{field}.value", str_at(taint, "value"), label_value_errors(str_at(taint, "value")))
    effect = str_at(taint, "effect")
    if not effect:
        errors.required(f"{field}.effect")
    elif effect not in TAINT_EFFECTS:
        errors.not_supported(f"{field}.effect", effect, TAINT_EFFECTS)


def _validate_node(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    check_set(list_at(spec, "taints"), "spec.taints", None, lambda t, f: _check_taint(t, f, errors), errors)


def _validate_namespace(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    for finalizer in list_at(dict_at(obj, "spec"), "finalizers"):
        errors.each_invalid("spec.finalizers", finalizer, qualified_name_errors(str(finalizer)))


def _validate_config_map(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    data, binary = dict_at(obj, "data"), dict_at(obj, "binaryData")
    total = 0
    for field, entries in (("data", data), ("binaryData", binary)):
        for key, value in entries.items():
            errors.each_invalid(f"{field}[{key}]", key, config_key_errors(key))
            total += len(str(value).encode())
    for key in data.keys() & binary.keys():
        errors.invalid("data", key, "duplicate of key present in binaryData")
    if total > CONFIGMAP_MAX_BYTES:
        errors.too_long("", CONFIGMAP_MAX_BYTES)
    if old is not None and old.get("immutable") is True:
        if obj.get("immutable") is not True:
            errors.forbidden("immutable", "field is immutable when `immutable` is set")
        for field in ("data", "binaryData"):
            if not semantic_equal(obj.get(field), old.get(field)):
                errors.forbidden(field, "field is immutable when `immutable` is set")


def _validate_event(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    namespace = str_at(dict_at(obj, "metadata"), "namespace")
    involved = str_at(dict_at(obj, "involvedObject"), "namespace")
    # An event about a cluster-scoped object lives in "default" (or, for new-style events, kube-system).
    homes = ("", "default", "kube-system") if obj.get("eventTime") else ("", "default")
    if (involved or namespace not in homes) and involved != namespace:
        errors.invalid("involvedObject.namespace", involved, "does not match event.namespace")


Rules = Callable[[Obj, Obj | None, FieldErrors], None]

RULES: dict[tuple[str, str], Rules] = {
    ("", "Pod"): _validate_pod,
    ("", "Node"): _validate_node,
    ("", "Namespace"): _validate_namespace,
    ("", "ConfigMap"): _validate_config_map,
    ("", "Event"): _validate_event,
}
