"""Kubernetes ``Status`` errors, shaped exactly as kube-apiserver sends them.

Every failure the embedded API server reports travels as a ``metav1.Status`` object with
the HTTP code, reason and details that client-go and kubectl switch on.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API failure that becomes a ``Status`` response (404 NotFound, 409 Conflict, ...)."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # kube-apiserver's errors without a reason (e.g. apply's 500) carry none
            status["reason"] = self.reason
        if self.details is not None:
            status["details"] = self.details
        status["code"] = self.code
        return status


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}  # omitempty, as every field of StatusDetails
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(plural, group)} "{name}" not found', _details(name, group, plural))


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{_qualified(plural, group)} "{name}" already exists', _details(name, group, plural)
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, plural))


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid; each cause is {"reason": "FieldValueInvalid", "message": ..., "field": ...}."""
    summary = ", ".join(f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    label = f"{kind}.{group}" if group else kind
    details = {**_details(name, group, kind), "causes": causes}
    return ApiError(422, "Invalid", f'{label} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str, plural: str = "", group: str = "", name: str = "") -> ApiError:
    details = _details(name, group, plural) if plural else None
    return ApiError(403, "Forbidden", message, details)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})
