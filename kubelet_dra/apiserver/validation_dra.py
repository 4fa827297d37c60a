"""Validation of the resource.k8s.io kinds: ResourceSlice, ResourceClaim(Template), DeviceClass.

Objects are at the storage version (v1), so field paths are v1 paths whatever version the client
used. CEL expressions are not compiled: only their presence and length are checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from kubelet_dra.apiserver.fielderrors import (
    C_IDENTIFIER_MAX,
    FieldErrors,
    c_identifier_errors,
    check_set,
    dict_at,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    list_at,
    str_at,
    validate_annotations,
    validate_labels,
)
from kubelet_dra.apiserver.resources import RESOURCE_GROUP

Obj = dict[str, Any]

DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
ATTRIBUTE_VALUE_MAX = 64
DEVICES_MAX = 128
DEVICES_MAX_WITH_TAINTS_OR_COUNTERS = 64
ATTRIBUTES_AND_CAPACITIES_MAX = 32
REQUESTS_MAX = 32
SUBREQUESTS_MAX = 8
CONSTRAINTS_MAX = 32
CONFIGS_MAX = 32
SELECTORS_MAX = 32
RESULTS_MAX = 32
RESERVED_FOR_MAX = 256
CEL_EXPRESSION_MAX = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024
ALLOCATION_MODES = ("All", "ExactCount")
CONFIG_SOURCES = ("FromClass", "FromClaim")
TOLERATION_OPERATORS = ("Exists", "Equal")
SKIP_NODE_OPERATIONS = ("NodePrepareResources", "NodeUnprepareResources", "*")
REQUEST_REF_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)

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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _name_of(item: Any) -> str:
    return str_at(item, "name")


def check_driver_name(value: Any, field: str, errors: FieldErrors) -> None:
    """A driver name: a DNS subdomain of at most 63 characters (case-insensitive, like CSI drivers)."""
    if not value:
        errors.required(field)
        return
    text = str(value)
    if len(text) > DRIVER_NAME_MAX:
        errors.too_long(field, DRIVER_NAME_MAX)
    errors.each_invalid(field, text, dns1123_subdomain_errors(text.lower()))


def _check_pool_name(value: Any, field: str, errors: FieldErrors) -> None:
    """A pool name: DNS subdomains separated by '/', at most 253 characters."""
    if not value:
        errors.required(field)
        return
    text = str(value)
    if len(text) > POOL_NAME_MAX:
        errors.too_long(field, POOL_NAME_MAX)
    for part in text.split("/"):
        errors.each_invalid(field, part, dns1123_subdomain_errors(part))


def _check_dns_label(value: Any, field: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(field)
    else:
        errors.each_invalid(field, value, dns1123_label_errors(str(value)))


def _check_dns_subdomain(value: Any, field: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(field)
    else:
        errors.each_invalid(field, value, dns1123_subdomain_errors(str(value)))


def _check_c_identifier(value: str, field: str, errors: FieldErrors) -> None:
    if len(value) > C_IDENTIFIER_MAX:
        errors.too_long(field, C_IDENTIFIER_MAX)
    errors.each_invalid(field, value, c_identifier_errors(value))


def _check_qualified_name(name: str, field: str, errors: FieldErrors) -> None:
    """An attribute or capacity name: a C identifier, optionally prefixed by a driver-like domain and '/'."""
    parts = name.split("/")
    if len(parts) > 2:
        errors.invalid(field, name, "must not contain more than one slash")
        return
    if len(parts) == 2:
        if parts[0]:
            check_driver_name(parts[0], field, errors)
        else:
            errors.invalid(field, "", "the domain must not be empty")
    if parts[-1]:
        _check_c_identifier(parts[-1], field, errors)
    else:
        errors.invalid(field, "", "the name must not be empty")


def _check_fully_qualified_name(value: Any, field: str, errors: FieldErrors) -> None:
    name = str(value)
    _check_qualified_name(name, field, errors)
    if "/" not in name:
        errors.invalid(field, name, "a fully qualified name must be a domain and a name separated by a slash")


# --- ResourceSlice -----------------------------------------------------------------------


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


def _check_skip_node_operations(owner: Any, field: str, errors: FieldErrors) -> None:
    """``skipNodeOperations`` (1.37, DRAOptionalNodeOperations): a set of known operations, and preparation
    skipped only together with unpreparation, or a pod could be left terminating for a driver nobody runs."""
    values = list_at(owner, "skipNodeOperations")

    def check_value(value: Any, item_field: str) -> None:
        if value not in SKIP_NODE_OPERATIONS:
            errors.not_supported(item_field, value, SKIP_NODE_OPERATIONS)

    check_set(values, field, None, check_value, errors, key=str)
    prepare, unprepare, everything = SKIP_NODE_OPERATIONS
    if prepare in values and unprepare not in values and everything not in values:
        detail = f'"{prepare}" may only be skipped together with "{unprepare}" (or "{everything}")'
        errors.invalid(field, values, detail)


def _check_node_allocatable_resources(device: Obj, field: str, errors: FieldErrors) -> None:
    """``nodeAllocatableResources`` (1.37 alpha): each resource says how it maps, or what overhead it adds."""
    for name, resource in dict_at(device, "nodeAllocatableResources").items():
        if not isinstance(resource, dict) or (resource.get("mapping") is None and resource.get("overhead") is None):
            errors.required(f"{field}.nodeAllocatableResources[{name}]", "one of `mapping` or `overhead` is required")


def _check_device(device: Any, field: str, per_device: bool, errors: FieldErrors) -> None:
    device = device if isinstance(device, dict) else {}
    _check_dns_label(device.get("name"), f"{field}.name", errors)
    attributes, capacity = dict_at(device, "attributes"), dict_at(device, "capacity")
    total = len(attributes) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        detail = f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}"
        errors.invalid(field, total, detail)
    for name, attribute in attributes.items():
        _check_qualified_name(name, f"{field}.attributes[{name}]", errors)
        _check_attribute(attribute, f"{field}.attributes[{name}]", errors)
    for name, value in capacity.items():
        _check_qualified_name(name, f"{field}.capacity[{name}]", errors)
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


def _validate_resource_slice(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    pool = dict_at(spec, "pool")
    check_driver_name(spec.get("driver"), "spec.driver", errors)
    _check_pool_name(pool.get("name"), "spec.pool.name", errors)
    count = pool.get("resourceSliceCount", 0)
    if not _is_int(count) or count <= 0:
        errors.invalid("spec.pool.resourceSliceCount", count, "must be greater than zero")
    generation = pool.get("generation", 0)
    if not _is_int(generation) or generation < 0:
        errors.invalid("spec.pool.generation", generation, "must be greater than or equal to zero")
    if old is not None:
        old_spec = dict_at(old, "spec")
        errors.immutable("spec.pool.name", pool.get("name"), dict_at(old_spec, "pool").get("name"))
        errors.immutable("spec.driver", spec.get("driver"), old_spec.get("driver"))
        errors.immutable("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))
    _check_slice_node_selection(spec, errors)
    _check_skip_node_operations(spec, "spec.skipNodeOperations", errors)
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
        key=_name_of,
    )


# --- ResourceClaim / ResourceClaimTemplate -----------------------------------------------

RequestNames = dict[str, set[str] | None]


def _request_names(requests: list[Any]) -> RequestNames:
    """Request name -> its subrequest names (None for a single-class request)."""
    names: RequestNames = {}
    for request in requests:
        subrequests = list_at(request, "firstAvailable")
        names[_name_of(request)] = {_name_of(sub) for sub in subrequests} if subrequests else None
    return names


def _check_request_ref(ref: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    request, _, subrequest = str(ref).partition("/")
    known = request in names and (not subrequest or ("/" not in subrequest and subrequest in (names[request] or set())))
    if not known:
        errors.invalid(field, ref, REQUEST_REF_DETAIL)


def _check_selector(selector: Any, field: str, errors: FieldErrors) -> None:
    cel = selector.get("cel") if isinstance(selector, dict) else None
    if not isinstance(cel, dict):
        errors.required(f"{field}.cel")
        return
    expression = cel.get("expression")
    if not expression:
        errors.required(f"{field}.cel.expression")
    elif len(str(expression)) > CEL_EXPRESSION_MAX:
        errors.too_long(f"{field}.cel.expression", CEL_EXPRESSION_MAX)


def _check_class_request(request: Obj, field: str, errors: FieldErrors) -> None:
    """The fields an ``exactly`` request and a ``firstAvailable`` subrequest share."""
    _check_dns_subdomain(request.get("deviceClassName"), f"{field}.deviceClassName", errors)
    check_set(
        list_at(request, "selectors"),
        f"{field}.selectors",
        SELECTORS_MAX,
        lambda s, f: _check_selector(s, f, errors),
        errors,
    )
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All":
        if count:
            errors.invalid(f"{field}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if not _is_int(count) or count <= 0:
            errors.invalid(f"{field}.count", count, "must be greater than zero")
    else:
        errors.not_supported(f"{field}.allocationMode", mode if mode is not None else "", ALLOCATION_MODES)
    for index, toleration in enumerate(list_at(request, "tolerations")):
        operator = str_at(toleration, "operator")
        if operator not in TOLERATION_OPERATORS:
            errors.not_supported(f"{field}.tolerations[{index}].operator", operator, TOLERATION_OPERATORS)


def _check_subrequest(subrequest: Any, field: str, errors: FieldErrors) -> None:
    subrequest = subrequest if isinstance(subrequest, dict) else {}
    _check_dns_label(subrequest.get("name"), f"{field}.name", errors)
    _check_class_request(subrequest, field, errors)


def _check_request(request: Any, field: str, errors: FieldErrors) -> None:
    request = request if isinstance(request, dict) else {}
    _check_dns_label(request.get("name"), f"{field}.name", errors)
    exactly, first_available = request.get("exactly"), list_at(request, "firstAvailable")
    if exactly is None and not first_available:
        errors.required(field, "exactly one of `exactly` or `firstAvailable` is required")
    elif exactly is not None and first_available:
        errors.invalid(
            field, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        )
    elif first_available:
        check_set(
            first_available,
            f"{field}.firstAvailable",
            SUBREQUESTS_MAX,
            lambda sub, path: _check_subrequest(sub, path, errors),
            errors,
            key=_name_of,
        )
    else:
        _check_class_request(exactly if isinstance(exactly, dict) else {}, f"{field}.exactly", errors)


def _check_opaque(config: Any, field: str, errors: FieldErrors) -> None:
    opaque = config.get("opaque") if isinstance(config, dict) else None
    if not isinstance(opaque, dict):
        errors.required(f"{field}.opaque")
        return
    check_driver_name(opaque.get("driver"), f"{field}.opaque.driver", errors)
    parameters = opaque.get("parameters")
    if parameters is None:
        errors.required(f"{field}.opaque.parameters")
    elif not isinstance(parameters, dict):
        errors.invalid(f"{field}.opaque.parameters", "<value omitted>", "parameters must be a valid JSON object")
    elif len(json.dumps(parameters, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX:
        errors.too_long(f"{field}.opaque.parameters", OPAQUE_PARAMETERS_MAX)


def _check_request_refs(obj: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    check_set(
        list_at(obj, "requests"),
        f"{field}.requests",
        REQUESTS_MAX,
        lambda ref, path: _check_request_ref(ref, path, names, errors),
        errors,
        key=str,
    )


def _check_constraint(constraint: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    _check_request_refs(constraint, field, names, errors)
    for key in ("matchAttribute", "distinctAttribute"):
        if isinstance(constraint, dict) and constraint.get(key) is not None:
            _check_fully_qualified_name(constraint[key], f"{field}.{key}", errors)
            return
    errors.required(field, 'exactly one of "matchAttribute" or "distinctAttribute" is required')


def _check_claim_config(config: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    _check_request_refs(config, field, names, errors)
    _check_opaque(config, field, errors)


def check_claim_spec(spec: Obj, field: str, errors: FieldErrors) -> None:
    """A ResourceClaimSpec (of a claim, or inside a template)."""
    devices = dict_at(spec, "devices")
    path = f"{field}.devices"
    requests = list_at(devices, "requests")
    names = _request_names(requests)
    check_set(
        requests, f"{path}.requests", REQUESTS_MAX, lambda r, f: _check_request(r, f, errors), errors, key=_name_of
    )
    check_set(
        list_at(devices, "constraints"),
        f"{path}.constraints",
        CONSTRAINTS_MAX,
        lambda c, f: _check_constraint(c, f, names, errors),
        errors,
    )
    check_set(
        list_at(devices, "config"),
        f"{path}.config",
        CONFIGS_MAX,
        lambda c, f: _check_claim_config(c, f, names, errors),
        errors,
    )


def _check_consumer(consumer: Any, field: str, errors: FieldErrors) -> None:
    for key in ("resource", "name", "uid"):
        if not str_at(consumer, key):
            errors.required(f"{field}.{key}")


def _check_allocation_result(result: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    request = str_at(result, "request")
    if not request:
        errors.required(f"{field}.request")
    else:
        _check_request_ref(request, f"{field}.request", names, errors)
    check_driver_name(str_at(result, "driver"), f"{field}.driver", errors)
    _check_pool_name(str_at(result, "pool"), f"{field}.pool", errors)
    _check_dns_label(str_at(result, "device"), f"{field}.device", errors)
    _check_skip_node_operations(result, f"{field}.skipNodeOperations", errors)


def _check_allocation_config(config: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    source = str_at(config, "source")
    if not source:
        errors.required(f"{field}.source")
    elif source not in CONFIG_SOURCES:
        errors.not_supported(f"{field}.source", source, CONFIG_SOURCES)
    _check_claim_config(config, field, names, errors)


def _check_allocation(allocation: Obj, names: RequestNames, errors: FieldErrors) -> None:
    devices = dict_at(allocation, "devices")
    path = "status.allocation.devices"
    check_set(
        list_at(devices, "results"),
        f"{path}.results",
        RESULTS_MAX,
        lambda r, f: _check_allocation_result(r, f, names, errors),
        errors,
    )
    check_set(
        list_at(devices, "config"),
        f"{path}.config",
        2 * CONFIGS_MAX,
        lambda c, f: _check_allocation_config(c, f, names, errors),
        errors,
    )


def _device_id(device: Any) -> str:
    """driver/pool/device, plus the share ID of a shared allocation."""
    device_id = "/".join(str_at(device, key) for key in ("driver", "pool", "device"))
    share_id = str_at(device, "shareID")
    return f"{device_id}/{share_id}" if share_id else device_id


def _check_device_status(device: Any, field: str, allocated: set[str], errors: FieldErrors) -> None:
    check_driver_name(str_at(device, "driver"), f"{field}.driver", errors)
    _check_pool_name(str_at(device, "pool"), f"{field}.pool", errors)
    _check_dns_label(str_at(device, "device"), f"{field}.device", errors)
    if _device_id(device) not in allocated:
        errors.invalid(field, _device_id(device), "must be an allocated device in the claim")


def _check_claim_status(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    status = dict_at(obj, "status")
    old_status = dict_at(old, "status") if old is not None else {}
    reserved = list_at(status, "reservedFor")
    check_set(
        reserved,
        "status.reservedFor",
        RESERVED_FOR_MAX,
        lambda consumer, field: _check_consumer(consumer, field, errors),
        errors,
        key=lambda consumer: str_at(consumer, "uid"),
    )
    allocation = status.get("allocation")
    if reserved and allocation is None:
        errors.forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
    elif reserved and dict_at(obj, "metadata").get("deletionTimestamp"):
        old_uids = {str_at(consumer, "uid") for consumer in list_at(old_status, "reservedFor")}
        if any(str_at(consumer, "uid") not in old_uids for consumer in reserved):
            errors.forbidden(
                "status.reservedFor",
                "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
            )
    old_allocation = old_status.get("allocation")
    if allocation is not None and old_allocation is not None:
        errors.immutable("status.allocation", allocation, old_allocation)
    elif isinstance(allocation, dict):
        _check_allocation(
            allocation, _request_names(list_at(dict_at(dict_at(obj, "spec"), "devices"), "requests")), errors
        )
    allocated = {_device_id(result) for result in list_at(dict_at(dict_at(status, "allocation"), "devices"), "results")}
    check_set(
        list_at(status, "devices"),
        "status.devices",
        None,
        lambda device, field: _check_device_status(device, field, allocated, errors),
        errors,
        key=_device_id,
    )


def _validate_resource_claim(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    if old is None:
        check_claim_spec(dict_at(obj, "spec"), "spec", errors)
    else:
        errors.immutable("spec", obj.get("spec"), old.get("spec"))
    _check_claim_status(obj, old, errors)


def _validate_resource_claim_template(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    if old is not None:
        errors.immutable("spec", obj.get("spec"), old.get("spec"))
        return
    template_metadata = dict_at(spec, "metadata")
    validate_labels(dict_at(template_metadata, "labels"), "spec.metadata.labels", errors)
    validate_annotations(dict_at(template_metadata, "annotations"), "spec.metadata.annotations", errors)
    check_claim_spec(dict_at(spec, "spec"), "spec.spec", errors)


def _validate_device_class(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    check_set(
        list_at(spec, "selectors"), "spec.selectors", SELECTORS_MAX, lambda s, f: _check_selector(s, f, errors), errors
    )
    check_set(list_at(spec, "config"), "spec.config", CONFIGS_MAX, lambda c, f: _check_opaque(c, f, errors), errors)


Rules = Callable[[Obj, Obj | None, FieldErrors], None]

RULES: dict[tuple[str, str], Rules] = {
    (RESOURCE_GROUP, "ResourceSlice"): _validate_resource_slice,
    (RESOURCE_GROUP, "ResourceClaim"): _validate_resource_claim,
    (RESOURCE_GROUP, "ResourceClaimTemplate"): _validate_resource_claim_template,
    (RESOURCE_GROUP, "DeviceClass"): _validate_device_class,
}
