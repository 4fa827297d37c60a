"""Field checks every resource.k8s.io kind shares: driver, pool and DNS names, qualified names, CEL selectors,
opaque configuration, and the 1.37 ``skipNodeOperations`` lists.

Objects are at the storage version (v1), so field paths are v1 paths whatever version the client
used. CEL expressions are not compiled: only their presence and length are checked.
"""

from __future__ import annotations

import json
from typing import Any

from kubelet_dra.peers.apiserver.fielderrors import (
    C_IDENTIFIER_MAX,
    FieldErrors,
    c_identifier_errors,
    check_set,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    list_at,
    str_at,
)

Obj = dict[str, Any]
DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
CEL_EXPRESSION_MAX = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024
SKIP_NODE_OPERATIONS = ("NodePrepareResources", "NodeUnprepareResources", "*")
SELECTORS_MAX = 32
CONFIGS_MAX = 32


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def name_of(item: Any) -> str:
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


def check_pool_name(value: Any, field: str, errors: FieldErrors) -> None:
    """A pool name: DNS subdomains separated by '/', at most 253 characters."""
    if not value:
        errors.required(field)
        return
    text = str(value)
    if len(text) > POOL_NAME_MAX:
        errors.too_long(field, POOL_NAME_MAX)
    for part in text.split("/"):
        errors.each_invalid(field, part, dns1123_subdomain_errors(part))


def check_dns_label(value: Any, field: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(field)
    else:
        errors.each_invalid(field, value, dns1123_label_errors(str(value)))


def check_dns_subdomain(value: Any, field: str, errors: FieldErrors) -> None:
    if not value:
        errors.required(field)
    else:
        errors.each_invalid(field, value, dns1123_subdomain_errors(str(value)))


def _check_c_identifier(value: str, field: str, errors: FieldErrors) -> None:
    if len(value) > C_IDENTIFIER_MAX:
        errors.too_long(field, C_IDENTIFIER_MAX)
    errors.each_invalid(field, value, c_identifier_errors(value))


def check_qualified_name(name: str, field: str, errors: FieldErrors) -> None:
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


def check_fully_qualified_name(value: Any, field: str, errors: FieldErrors) -> None:
    name = str(value)
    check_qualified_name(name, field, errors)
    if "/" not in name:
        errors.invalid(field, name, "a fully qualified name must be a domain and a name separated by a slash")


def check_skip_node_operations(owner: Any, field: str, errors: FieldErrors) -> None:
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


def check_selector(selector: Any, field: str, errors: FieldErrors) -> None:
    cel = selector.get("cel") if isinstance(selector, dict) else None
    if not isinstance(cel, dict):
        errors.required(f"{field}.cel")
        return
    expression = cel.get("expression")
    if not expression:
        errors.required(f"{field}.cel.expression")
    elif len(str(expression)) > CEL_EXPRESSION_MAX:
        errors.too_long(f"{field}.cel.expression", CEL_EXPRESSION_MAX)


def check_opaque(config: Any, field: str, errors: FieldErrors) -> None:
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
