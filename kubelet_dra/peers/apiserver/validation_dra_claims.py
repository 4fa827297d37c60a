"""Validation of ResourceClaims and ResourceClaimTemplates: requests and subrequests, constraints and
configuration, and a claim's status (allocation results, reservedFor, device status)."""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    check_set,
    dict_at,
    list_at,
    str_at,
    validate_annotations,
    validate_labels,
)
from kubelet_dra.peers.apiserver.validation_dra_fields import (
    CONFIGS_MAX,
    SELECTORS_MAX,
    Obj,
    check_dns_label,
    check_dns_subdomain,
    check_driver_name,
    check_fully_qualified_name,
    check_opaque,
    check_pool_name,
    check_selector,
    check_skip_node_operations,
    is_int,
    name_of,
)

REQUESTS_MAX = 32
SUBREQUESTS_MAX = 8
CONSTRAINTS_MAX = 32
RESULTS_MAX = 32
RESERVED_FOR_MAX = 256
ALLOCATION_MODES = ("All", "ExactCount")
CONFIG_SOURCES = ("FromClass", "FromClaim")
TOLERATION_OPERATORS = ("Exists", "Equal")
REQUEST_REF_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
RequestNames = dict[str, set[str] | None]


def _request_names(requests: list[Any]) -> RequestNames:
    """Request name -> its subrequest names (None for a single-class request)."""
    names: RequestNames = {}
    for request in requests:
        subrequests = list_at(request, "firstAvailable")
        names[name_of(request)] = {name_of(sub) for sub in subrequests} if subrequests else None
    return names


def _check_request_ref(ref: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    request, _, subrequest = str(ref).partition("/")
    known = request in names and (not subrequest or ("/" not in subrequest and subrequest in (names[request] or set())))
    if not known:
        errors.invalid(field, ref, REQUEST_REF_DETAIL)


def _check_class_request(request: Obj, field: str, errors: FieldErrors) -> None:
    """The fields an ``exactly`` request and a ``firstAvailable`` subrequest share."""
    check_dns_subdomain(request.get("deviceClassName"), f"{field}.deviceClassName", errors)
    check_set(
        list_at(request, "selectors"),
        f"{field}.selectors",
        SELECTORS_MAX,
        lambda s, f: check_selector(s, f, errors),
        errors,
    )
    mode, count = request.get("allocationMode"), request.get("count") or 0
    if mode == "All":
        if count:
            errors.invalid(f"{field}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if not is_int(count) or count <= 0:
            errors.invalid(f"{field}.count", count, "must be greater than zero")
    else:
        errors.not_supported(f"{field}.allocationMode", mode if mode is not None else "", ALLOCATION_MODES)
    for index, toleration in enumerate(list_at(request, "tolerations")):
        operator = str_at(toleration, "operator")
        if operator not in TOLERATION_OPERATORS:
            errors.not_supported(f"{field}.tolerations[{index}].operator", operator, TOLERATION_OPERATORS)


def _check_subrequest(subrequest: Any, field: str, errors: FieldErrors) -> None:
    subrequest = subrequest if isinstance(subrequest, dict) else {}
    check_dns_label(subrequest.get("name"), f"{field}.name", errors)
    _check_class_request(subrequest, field, errors)


def _check_request(request: Any, field: str, errors: FieldErrors) -> None:
    request = request if isinstance(request, dict) else {}
    check_dns_label(request.get("name"), f"{field}.name", errors)
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
            key=name_of,
        )
    else:
        _check_class_request(exactly if isinstance(exactly, dict) else {}, f"{field}.exactly", errors)


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
            check_fully_qualified_name(constraint[key], f"{field}.{key}", errors)
            return
    errors.required(field, 'exactly one of "matchAttribute" or "distinctAttribute" is required')


def _check_claim_config(config: Any, field: str, names: RequestNames, errors: FieldErrors) -> None:
    _check_request_refs(config, field, names, errors)
    check_opaque(config, field, errors)


def check_claim_spec(spec: Obj, field: str, errors: FieldErrors) -> None:
    """A ResourceClaimSpec (of a claim, or inside a template)."""
    devices = dict_at(spec, "devices")
    path = f"{field}.devices"
    requests = list_at(devices, "requests")
    names = _request_names(requests)
    check_set(
        requests, f"{path}.requests", REQUESTS_MAX, lambda r, f: _check_request(r, f, errors), errors, key=name_of
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
    check_pool_name(str_at(result, "pool"), f"{field}.pool", errors)
    check_dns_label(str_at(result, "device"), f"{field}.device", errors)
    check_skip_node_operations(result, f"{field}.skipNodeOperations", errors)


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
    check_pool_name(str_at(device, "pool"), f"{field}.pool", errors)
    check_dns_label(str_at(device, "device"), f"{field}.device", errors)
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


def validate_resource_claim(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    if old is None:
        check_claim_spec(dict_at(obj, "spec"), "spec", errors)
    else:
        errors.immutable("spec", obj.get("spec"), old.get("spec"))
    _check_claim_status(obj, old, errors)


def validate_resource_claim_template(obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    spec = dict_at(obj, "spec")
    if old is not None:
        errors.immutable("spec", obj.get("spec"), old.get("spec"))
        return
    template_metadata = dict_at(spec, "metadata")
    validate_labels(dict_at(template_metadata, "labels"), "spec.metadata.labels", errors)
    validate_annotations(dict_at(template_metadata, "annotations"), "spec.metadata.annotations", errors)
    check_claim_spec(dict_at(spec, "spec"), "spec.spec", errors)
