"""Query parameters and DeleteOptions, parsed and checked the way kube-apiserver does.

Booleans accept Go's ``strconv.ParseBool`` spellings (the Python client sends ``watch=True``);
bad values are 400 BadRequest naming the parameter.
"""

from __future__ import annotations

from typing import Any

import attrs
from multidict import MultiMapping

from kubelet_dra.apiserver import status
from kubelet_dra.apiserver.status import ApiError

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")

Query = MultiMapping[str]


def boolean(query: Query, name: str) -> bool | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise status.bad_request(f'invalid value for "{name}": {value!r} is not a boolean')


def integer(query: Query, name: str, *, minimum: int = 0) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise status.bad_request(f'invalid value for "{name}": {value!r} is not an integer') from None
    if number < minimum:
        raise status.bad_request(f'invalid value for "{name}": must be {minimum} or more')
    return number


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
        grace = integer(query, "gracePeriodSeconds", minimum=-(2**63))
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
