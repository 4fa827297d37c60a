"""Query parameters and DeleteOptions, parsed and checked the way kube-apiserver does.

Booleans follow kube-apiserver's query conversion: only ``0`` and ``false`` (any case) are false, any
other value (``True`` from the Python client, ``x``, even empty) is true. Integers follow Go's
``strconv.ParseInt`` and its error text.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
from multidict import MultiMapping

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.status import ApiError

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")

Query = MultiMapping[str]


def boolean(query: Query, name: str) -> bool | None:
    """``None`` when the parameter is absent."""
    value = query.get(name)
    if value is None:
        return None
    return not (value == "0" or value.lower() == "false")


def integer(query: Query, name: str) -> int | None:
    """``None`` when absent or empty; a value ``strconv.ParseInt`` refuses is 400 with Go's words."""
    value = query.get(name)
    if value is None or value == "":
        return None
    if not _GO_INT.fullmatch(value):
        raise status.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    if int(value) not in _INT64:
        raise status.bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return int(value)


def dry_run(values: list[str]) -> bool:
    """``dryRun=All`` → True; absent → False; anything else is refused like kube does."""
    for value in values:
        if value != "All":
            raise status.bad_request(f'dryRun: Unsupported value: {value!r}: supported values: "All"')
    return bool(values)


def field_validation(query: Query) -> str:
    """``fieldValidation``; kube's default is Warn."""
    value = query.get("fieldValidation") or "Warn"
    if value not in FIELD_VALIDATION:
        raise status.bad_request(
            f"fieldValidation: Unsupported value: {value!r}: supported values: {', '.join(FIELD_VALIDATION)}"
        )
    return value


@attrs.frozen
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str = ""
    preconditions: dict[str, Any] | None = None
    dry_run: bool = False


def delete_options(query: Query, body: dict[str, Any] | None) -> DeleteOptions:
    """DeleteOptions from a request body when there is one, from query parameters otherwise (as kube does)."""
    if body is not None:
        grace = body.get("gracePeriodSeconds")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
            raise status.bad_request("DeleteOptions.gracePeriodSeconds must be an integer")
        policy = body.get("propagationPolicy") or ""
        orphan = body.get("orphanDependents")
        preconditions = body.get("preconditions")
        if preconditions is not None and not isinstance(preconditions, dict):
            raise status.bad_request("DeleteOptions.preconditions must be an object")
        dry = list(body.get("dryRun") or [])
    else:
        grace = integer(query, "gracePeriodSeconds")
        policy = query.get("propagationPolicy", "")
        orphan = boolean(query, "orphanDependents")
        preconditions = None
        dry = query.getall("dryRun", [])
    if policy and policy not in PROPAGATION_POLICIES:
        raise invalid_delete_options(
            "propagationPolicy", f"Unsupported value: {policy!r}: supported values: {', '.join(PROPAGATION_POLICIES)}"
        )
    if orphan is not None:
        if policy:
            raise invalid_delete_options(
                "propagationPolicy", "orphanDependents and propagationPolicy cannot both be set"
            )
        policy = "Orphan" if orphan else "Background"
    return DeleteOptions(grace, policy, preconditions or None, dry_run(dry))


def invalid_delete_options(field: str, message: str) -> ApiError:
    return status.invalid(
        "DeleteOptions", "meta.k8s.io", "", [{"reason": "FieldValueInvalid", "message": message, "field": field}]
    )
