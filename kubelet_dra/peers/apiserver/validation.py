"""Validation of objects before they are stored (422 Invalid).

The rules are those of kube-apiserver that DRA drivers, the kubelet and kubectl run into, with
the same field paths, reasons and wording; they are not exhaustive. ObjectMeta is checked here
for every kind; the checks of each kind's spec and status live in ``validation_dra``,
``validation_core`` and ``validation_kubelet``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelet_dra.peers.apiserver import validation_core, validation_dra, validation_kubelet
from kubelet_dra.peers.apiserver.fielderrors import (
    FieldErrors,
    dict_at,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    list_at,
    qualified_name_errors,
    str_at,
    validate_annotations,
    validate_labels,
)
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, ResourceType

Obj = dict[str, Any]
NameRule = Callable[[str], list[str]]

_KIND_RULES = {**validation_dra.RULES, **validation_core.RULES, **validation_kubelet.RULES}


def validate(rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    """Raise ``status.invalid(...)`` when ``obj`` (storage version) may not be stored.

    ``old`` is the stored object on update, None on create.
    """
    errors = FieldErrors()
    _validate_object_meta(rt, obj, old, errors)
    kind_rules = _KIND_RULES.get((rt.group, rt.kind))
    if kind_rules is not None:
        kind_rules(obj, old, errors)
    error = errors.to_error(rt.kind, rt.group, str_at(dict_at(obj, "metadata"), "name"))
    if error is not None:
        raise error


def _name_rule(rt: ResourceType) -> NameRule | None:
    """How the kind's names are checked: namespaces are DNS labels, events anything."""
    if (rt.group, rt.kind) == ("", "Namespace"):
        return dns1123_label_errors
    if (rt.group, rt.kind) == ("", "Event"):
        return None
    if (rt.group, rt.kind) == (RESOURCE_GROUP, "DeviceClass"):
        return _declarative_name_errors
    return dns1123_subdomain_errors


def _declarative_name_errors(name: str) -> list[str]:
    """DeviceClass names are checked by kube 1.36's declarative validation, which counts bytes."""
    return dns1123_subdomain_errors(name, "bytes")


def _mask_trailing_dash(prefix: str) -> str:
    """A generateName prefix may end in '-' (the random suffix follows it)."""
    return prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix


def _validate_object_meta(rt: ResourceType, obj: Obj, old: Obj | None, errors: FieldErrors) -> None:
    metadata = dict_at(obj, "metadata")
    name_rule = _name_rule(rt)
    name = str_at(metadata, "name")
    generate_name = str_at(metadata, "generateName")
    if generate_name and name_rule is not None:
        errors.each_invalid("metadata.generateName", generate_name, name_rule(_mask_trailing_dash(generate_name)))
    if not name:
        errors.required("metadata.name", "name or generateName is required")
    elif name_rule is not None:
        errors.each_invalid("metadata.name", name, name_rule(name))

    namespace = str_at(metadata, "namespace")
    if rt.namespaced and not namespace:
        errors.required("metadata.namespace")
    elif rt.namespaced:
        errors.each_invalid("metadata.namespace", namespace, dns1123_label_errors(namespace))
    elif namespace:
        errors.forbidden("metadata.namespace", "not allowed on this type")

    validate_labels(dict_at(metadata, "labels"), "metadata.labels", errors)
    validate_annotations(dict_at(metadata, "annotations"), "metadata.annotations", errors)
    _validate_finalizers(list_at(metadata, "finalizers"), errors)
    _validate_owner_references(list_at(metadata, "ownerReferences"), errors)

    if old is not None:
        old_metadata = dict_at(old, "metadata")
        errors.immutable("metadata.name", name, str_at(old_metadata, "name"))
        errors.immutable("metadata.namespace", namespace, str_at(old_metadata, "namespace"))
        if metadata.get("uid"):
            errors.immutable("metadata.uid", metadata["uid"], old_metadata.get("uid"))


def _validate_finalizers(finalizers: list[Any], errors: FieldErrors) -> None:
    seen: set[str] = set()
    for finalizer in finalizers:
        text = str(finalizer)
        errors.each_invalid("metadata.finalizers", text, qualified_name_errors(text))
        if text in seen:
            errors.duplicate("metadata.finalizers", text)
        seen.add(text)


def _validate_owner_references(references: list[Any], errors: FieldErrors) -> None:
    field = "metadata.ownerReferences"
    controllers = []
    for reference in references:
        api_version = str_at(reference, "apiVersion")
        if not api_version.rpartition("/")[2]:
            errors.invalid(f"{field}.apiVersion", api_version, "version must not be empty")
        for key in ("kind", "name", "uid"):
            if not str_at(reference, key):
                errors.invalid(f"{field}.{key}", str_at(reference, key), "must not be empty")
        if isinstance(reference, dict) and reference.get("controller") is True:
            controllers.append(f"{str_at(reference, 'kind')}/{str_at(reference, 'name')}")
    if len(controllers) > 1:
        found = ", ".join(controllers)
        errors.invalid(
            field,
            references,
            f'Only one reference can have Controller set to true. Found "true" in references for {found}',
        )
