"""Validation of ResourceSlices: the pool, each device (attributes, capacities, node selection, taints and
counters), and the slice's own node selection, as kube-apiserver validates them."""

from __future__ import annotations

import re
from typing import Any

from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    check_set,
    dict_at,
    dns1123_subdomain_errors,
    list_at,
)
from kubelet_dra.peers.apiserver.validation_dra_fields import (
    Obj,
    check_dns_label,
    check_driver_name,
    check_pool_name,
    check_qualified_name,
    check_skip_node_operations,
    is_int,
    name_of,
)

ATTRIBUTE_VALUE_MAX = 64
DEVICES_MAX = 128
DEVICES_MAX_WITH_TAINTS_OR_COUNTERS = 64
ATTRIBUTES_AND_CAPACITIES_MAX = 32
_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?"
)


# Typed attribute value -> (Python type, how the error names it).
_ATTRIBUTE_TYPES: dict[str, tuple[type, str]] = {
    "bool": (bool, "a boolean"),
    "int": (int, "an integer"),
    "string": (str, "a string"),
    "version": (str, "a string"),
}
_ATTRIBUTE_LISTS = ("bools", "ints", "strings", "versions")


def _check_attribute(attribute: Any, field: str, errors: FieldErrors) -> None:
    """Exactly one typed value, strings and versions short, versions semver."""
    if not isinstance(attribute, dict):
        errors.invalid(field, attribute, "exactly one value must be specified")
        return
    present = [key for key in (*_ATTRIBUTE_TYPES, *_ATTRIBUTE_LISTS) if attribute.get(key) is not None]
    for key in present:
        values = attribute[key] if key in _ATTRIBUTE_LISTS else [attribute[key]]
        scalar = key.removesuffix("s") if key in _ATTRIBUTE_LISTS else key
        if key in _ATTRIBUTE_LISTS and (not isinstance(values, list) or not values):
            errors.invalid(f"{field}.{key}", values, "must not be empty if specified")
            continue
        for index, value in enumerate(values):
            path = f"{field}.{key}[{index}]" if key in _ATTRIBUTE_LISTS else f"{field}.{key}"
            _check_attribute_value(scalar, value, path, errors)
    if not present:
        errors.invalid(field, "", "exactly one value must be specified")
    elif len(present) > 1:
        errors.invalid(field, attribute, "exactly one value must be specified")


def _check_attribute_value(scalar: str, value: Any, field: str, errors: FieldErrors) -> None:
    expected, described = _ATTRIBUTE_TYPES[scalar]
    if not isinstance(value, expected) or (scalar == "int" and isinstance(value, bool)):
        errors.invalid(field, value, f"must be {described}")
        return
    if scalar == "version" and not _SEMVER.fullmatch(value):
        errors.invalid(field, value, "must be a string compatible with semver.org spec 2.0.0")
    if isinstance(value, str) and len(value) > ATTRIBUTE_VALUE_MAX:
        errors.too_long(field, ATTRIBUTE_VALUE_MAX)


def _check_device_node_selection(device: Obj, field: str, per_device: bool, errors: FieldErrors) -> None:
    fields = ("nodeName", "nodeSelector", "allNodes")
    if not per_device:
        if any(device.get(key) is not None for key in fields):
            errors.invalid(
                field,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
                "is set to true in the ResourceSlice spec",
            )
        return
    chosen = []
    if device.get("nodeName") is not None:
        if device["nodeName"] == "":
            errors.invalid(f"{field}.nodeName", "", "must not be empty")
        else:
            chosen.append("`nodeName`")
            errors.each_invalid(
                f"{field}.nodeName", device["nodeName"], dns1123_subdomain_errors(str(device["nodeName"]))
            )
    if device.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
    if device.get("allNodes") is True:
        chosen.append("`allNodes`")
    elif device.get("allNodes") is not None:
        errors.invalid(f"{field}.allNodes", device["allNodes"], "must be either unset or set to true")
    detail = (
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required "
        "when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    )
    if not chosen:
        errors.required(field, detail)
    elif len(chosen) > 1:
        errors.invalid(field, "{" + ", ".join(chosen) + "}", detail)


def _check_node_allocatable_resources(device: Obj, field: str, errors: FieldErrors) -> None:
    """``nodeAllocatableResources`` (1.37 alpha): each resource says how it maps, or what overhead it adds."""
    for name, resource in dict_at(device, "nodeAllocatableResources").items():
        if not isinstance(resource, dict) or (resource.get("mapping") is None and resource.get("overhead") is None):
            errors.required(f"{field}.nodeAllocatableResources[{name}]", "one of `mapping` or `overhead` is required")


def _check_device(device: Any, field: str, per_device: bool, errors: FieldErrors) -> None:
    device = device if isinstance(device, dict) else {}
    check_dns_label(device.get("name"), f"{field}.name", errors)
    attributes, capacity = dict_at(device, "attributes"), dict_at(device, "capacity")
    total = len(attributes) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        detail = f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}"
        errors.invalid(field, total, detail)
    for name, attribute in attributes.items():
        check_qualified_name(name, f"{field}.attributes[{name}]", errors)
        _check_attribute(attribute, f"{field}.attributes[{name}]", errors)
    for name, value in capacity.items():
        check_qualified_name(name, f"{field}.capacity[{name}]", errors)
        if not isinstance(value, dict) or value.get("value") is None:
            errors.required(f"{field}.capacity[{name}].value")
    _check_node_allocatable_resources(device, field, errors)
    _check_device_node_selection(device, field, per_device, errors)


def _check_slice_node_selection(spec: Obj, errors: FieldErrors) -> None:
    chosen = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name == "":
            errors.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string")
        else:
            chosen.append("`nodeName`")
            errors.each_invalid("spec.nodeName", node_name, dns1123_subdomain_errors(str(node_name)))
    if spec.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        terms = list_at(spec["nodeSelector"], "nodeSelectorTerms")
        if len(terms) != 1:
            errors.invalid("spec.nodeSelector.nodeSelectorTerms", terms, "must have exactly one node selector term")
    for key in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(key) is True:
            chosen.append(f"`{key}`")
        elif spec.get(key) is not None:
            errors.invalid(f"spec.{key}", spec[key], "must be either unset or set to true")
    detail = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        errors.required("spec", detail)
    elif len(chosen) > 1:
        errors.invalid("spec", "{" + ", ".join(chosen) + "}", f"{detail}, but multiple fields are set")


def validate_resource_slice(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    pool = dict_at(spec, "pool")
    check_driver_name(spec.get("driver"), "spec.driver", errors)
    check_pool_name(pool.get("name"), "spec.pool.name", errors)
    count = pool.get("resourceSliceCount", 0)
    if not is_int(count) or count <= 0:
        errors.invalid("spec.pool.resourceSliceCount", count, "must be greater than zero")
    generation = pool.get("generation", 0)
    if not is_int(generation) or generation < 0:
        errors.invalid("spec.pool.generation", generation, "must be greater than or equal to zero")
    if old is not None:
        old_spec = dict_at(old, "spec")
        errors.immutable("spec.pool.name", pool.get("name"), dict_at(old_spec, "pool").get("name"))
        errors.immutable("spec.driver", spec.get("driver"), old_spec.get("driver"))
        errors.immutable("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))
    _check_slice_node_selection(spec, errors)
    check_skip_node_operations(spec, "spec.skipNodeOperations", errors)
    if list_at(spec, "sharedCounters") and list_at(spec, "devices"):
        errors.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")
    devices = list_at(spec, "devices")
    advanced = any(list_at(device, "taints") or list_at(device, "consumesCounters") for device in devices)
    per_device = spec.get("perDeviceNodeSelection") is True
    check_set(
        devices,
        "spec.devices",
        DEVICES_MAX_WITH_TAINTS_OR_COUNTERS if advanced else DEVICES_MAX,
        lambda device, field: _check_device(device, field, per_device, errors),
        errors,
        key=name_of,
    )
